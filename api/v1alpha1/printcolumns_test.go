package v1alpha1_test

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// pastTimes are the fields a printer column of type date may show. kubectl prints a date
// column as an age, and a time in the future as <invalid>: a future time (the next
// scheduled run) is a string column, shown as the time itself.
var pastTimes = map[string]bool{
	".metadata.creationTimestamp": true,
	".status.lastSuccessfulTime":  true,
}

func TestDateColumnsShowOnlyPastTimes(t *testing.T) {
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under config/crd/bases: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			for _, col := range v.AdditionalPrinterColumns {
				if col.Type == "date" && !pastTimes[col.JSONPath] {
					t.Errorf("%s %s: column %q shows %s as an age; kubectl prints a future time as <invalid>: make it a string column, or list the field in pastTimes if it only ever holds past times",
						crd.Spec.Names.Kind, v.Name, col.Name, col.JSONPath)
				}
			}
		}
	}
}
