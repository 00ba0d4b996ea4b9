package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// docs/capabilities.md says every status field has a status descriptor (why alm-examples carries no
// status). Top-level spec and status fields of the CRD must all have a descriptor in the
// bundle's CSV, for every CRD the CSV owns.
func TestEveryTopLevelFieldHasADescriptor(t *testing.T) {
	read := func(name string, into any) {
		raw, err := os.ReadFile(filepath.Join("..", "..", "bundle", "manifests", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	var csv struct {
		Spec struct {
			CustomResourceDefinitions struct {
				Owned []struct {
					Name              string                  `json:"name"`
					Kind              string                  `json:"kind"`
					SpecDescriptors   []struct{ Path string } `json:"specDescriptors"`
					StatusDescriptors []struct{ Path string } `json:"statusDescriptors"`
				} `json:"owned"`
			} `json:"customresourcedefinitions"`
		} `json:"spec"`
	}
	read("etcdpilot.clusterserviceversion.yaml", &csv)
	if n := len(csv.Spec.CustomResourceDefinitions.Owned); n != 4 {
		t.Fatalf("want 4 owned CRDs (EtcdCluster, EtcdBackup, EtcdBackupSchedule, EtcdTenant), got %d", n)
	}
	for _, owned := range csv.Spec.CustomResourceDefinitions.Owned {
		var crd apiextensionsv1.CustomResourceDefinition
		plural, group, _ := strings.Cut(owned.Name, ".")
		read(group+"_"+plural+".yaml", &crd)
		schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, part := range []struct {
			name        string
			descriptors []struct{ Path string }
		}{{"spec", owned.SpecDescriptors}, {"status", owned.StatusDescriptors}} {
			have := map[string]bool{}
			for _, d := range part.descriptors {
				have[strings.SplitN(d.Path, ".", 2)[0]] = true
			}
			var missing []string
			for field := range schema.Properties[part.name].Properties {
				if !have[field] {
					missing = append(missing, field)
				}
			}
			sort.Strings(missing)
			if len(missing) > 0 {
				t.Errorf("%s: %s fields without a %s descriptor in the CSV: %v", owned.Kind, part.name, part.name, missing)
			}
		}
	}
}
