package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// almExamplesAnnotation is the CSV annotation holding example custom resources, a JSON
// array; OperatorHub offers them as templates.
const almExamplesAnnotation = "alm-examples"

// Bundle is the part of an operator bundle the tests read.
type Bundle struct {
	// CSV is the bundle's ClusterServiceVersion.
	CSV *operatorsv1alpha1.ClusterServiceVersion
	// Objects are all the manifests of the bundle, the CSV and CRDs included.
	Objects []*unstructured.Unstructured
}

// Load reads the bundle in dir (the directory holding manifests/ and metadata/).
func Load(dir string) (*Bundle, error) {
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the bundle in %s: %w", dir, err)
	}
	if b.CSV == nil {
		return nil, fmt.Errorf("reading the bundle in %s: no ClusterServiceVersion", dir)
	}
	return &Bundle{CSV: b.CSV, Objects: b.Objects}, nil
}

// EtcdClusterExample returns the first EtcdCluster in the CSV's alm-examples. The example
// must decode into this release's API types exactly: a field the types do not know is an
// error rather than silently dropped, since the test would then create something other
// than what users see in the example.
func EtcdClusterExample(csv *operatorsv1alpha1.ClusterServiceVersion) (*etcdv1alpha1.EtcdCluster, error) {
	raw, ok := csv.Annotations[almExamplesAnnotation]
	if !ok || raw == "" {
		return nil, fmt.Errorf("the CSV %s has no %s annotation", csv.Name, almExamplesAnnotation)
	}
	var examples []json.RawMessage
	if err := json.Unmarshal([]byte(raw), &examples); err != nil {
		return nil, fmt.Errorf("the %s annotation of CSV %s is not a JSON array: %w", almExamplesAnnotation, csv.Name, err)
	}
	for i, ex := range examples {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(ex, &meta); err != nil {
			return nil, fmt.Errorf("%s[%d] of CSV %s: %w", almExamplesAnnotation, i, csv.Name, err)
		}
		if meta.APIVersion != etcdv1alpha1.GroupVersion.String() || meta.Kind != "EtcdCluster" {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(ex))
		dec.DisallowUnknownFields()
		c := &etcdv1alpha1.EtcdCluster{}
		if err := dec.Decode(c); err != nil {
			return nil, fmt.Errorf("%s[%d] of CSV %s is not a valid EtcdCluster: %w", almExamplesAnnotation, i, csv.Name, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("the %s of CSV %s have no %s EtcdCluster", almExamplesAnnotation, csv.Name, etcdv1alpha1.GroupVersion)
}

// Version is an etcd release.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare orders versions: negative when v is older than o, zero when equal, positive
// when newer.
func (v Version) Compare(o Version) int {
	if v.Major != o.Major {
		return v.Major - o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor - o.Minor
	}
	return v.Patch - o.Patch
}

// relatedImageEnv matches the variable that pins one etcd release's image:
// RELATED_IMAGE_ETCD_V3_6_16 for 3.6.16 (see internal/versions.RelatedImageEnv).
var relatedImageEnv = regexp.MustCompile(`^RELATED_IMAGE_ETCD_V(\d+)_(\d+)_(\d+)$`)

// SupportedVersions returns the etcd releases the bundle supports, oldest first: one per
// RELATED_IMAGE_ETCD_V<X_Y_Z> variable of the containers the CSV deploys.
func SupportedVersions(csv *operatorsv1alpha1.ClusterServiceVersion) []Version {
	var out []Version
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, env := range c.Env {
				m := relatedImageEnv.FindStringSubmatch(env.Name)
				if m == nil {
					continue
				}
				v := Version{atoi(m[1]), atoi(m[2]), atoi(m[3])}
				if !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
		}
	}
	slices.SortFunc(out, Version.Compare)
	return out
}

// atoi parses a string the regular expression already matched as digits.
func atoi(s string) int {
	n, _ := strconv.Atoi(s) // only overflow can fail, and no release number overflows
	return n
}

// ErrOneMinor says the bundle supports a single minor release, so there is no upgrade to
// test.
var ErrOneMinor = errors.New("the bundle supports etcd releases of fewer than two minor versions, so there is no upgrade to test")

// UpgradePair chooses the upgrade to test from the supported releases: from the newest
// release of the minor version before the newest, to the newest release. That is the
// upgrade users of the previous minor make.
func UpgradePair(supported []Version) (from, to Version, err error) {
	if len(supported) == 0 {
		return Version{}, Version{}, ErrOneMinor
	}
	to = slices.MaxFunc(supported, Version.Compare)
	found := false
	for _, v := range supported {
		if v.Major == to.Major && v.Minor == to.Minor {
			continue
		}
		if !found || v.Compare(from) > 0 {
			from, found = v, true
		}
	}
	if !found {
		return Version{}, Version{}, ErrOneMinor
	}
	return from, to, nil
}

// MetricsPortName is the name of the port of the operator's metrics Service: HTTPS, for
// callers whose token may get /metrics.
const MetricsPortName = "https"

// MetricsService returns the operator's metrics Service the bundle ships (OLM creates it
// in the operator's namespace): the Service with a port named https. The bundle must ship
// exactly one.
func MetricsService(objs []*unstructured.Unstructured) (*corev1.Service, error) {
	var found []*corev1.Service
	for _, o := range objs {
		if o.GetKind() != "Service" {
			continue
		}
		svc := &corev1.Service{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, svc); err != nil {
			return nil, fmt.Errorf("the bundle's Service %s: %w", o.GetName(), err)
		}
		for _, p := range svc.Spec.Ports {
			if p.Name == MetricsPortName {
				found = append(found, svc)
				break
			}
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("the bundle ships %d Services with a port named %s; the operator's metrics Service must be the one", len(found), MetricsPortName)
	}
	return found[0], nil
}
