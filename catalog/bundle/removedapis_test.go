package bundle

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
)

const (
	v1beta1PriorityClass = "apiVersion: scheduling.k8s.io/v1beta1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n"
	v1beta1PDB           = "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: etcd-pdb\nspec:\n  minAvailable: 1\n"
	v2beta2HPA           = "apiVersion: autoscaling/v2beta2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: etcd-hpa\n"
)

// The optional suite deprecated-apis: what each Kubernetes version removed, a warning unless the bundle
// targets the version (the Kubernetes version given, else its OpenShift versions, else minKubeVersion).
func TestRemovedAPIs(t *testing.T) {
	lowMinKube := func(m fstest.MapFS) {
		m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(string(m["manifests/etcd.csv.yaml"].Data), "minKubeVersion: 1.25.0", "minKubeVersion: 1.19.0", 1))}
	}
	ocp := func(value string) func(fstest.MapFS) {
		return func(m fstest.MapFS) {
			m["metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte(goodAnnotations + "  com.redhat.openshift.versions: " + value + "\n")}
		}
	}
	maxProp := func(value string) func(fstest.MapFS) {
		return func(m fstest.MapFS) {
			m["metadata/properties.yaml"] = &fstest.MapFile{Data: []byte("properties:\n  - type: olm.maxOpenShiftVersion\n    value: " + value + "\n")}
		}
	}
	addFile := func(name, content string) func(fstest.MapFS) {
		return func(m fstest.MapFS) { m[name] = &fstest.MapFile{Data: []byte(content)} }
	}
	csvEdit := func(from, to string) func(fstest.MapFS) {
		return func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(string(m["manifests/etcd.csv.yaml"].Data), from, to, 1))}
		}
	}
	for _, tc := range []struct {
		name  string
		edits []func(fstest.MapFS)
		k8s   string
		want  []string // rule severity file:line, in order
	}{
		{"nothing removed", nil, "", nil},
		{"v1beta1 PriorityClass, no targets", []func(fstest.MapFS){lowMinKube, addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "",
			[]string{"deprecated-apis.removed-api warning manifests/pc.yaml:1"}},
		{"minKubeVersion 1.25 targets 1.22's removals", []func(fstest.MapFS){addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "",
			[]string{"deprecated-apis.removed-api error manifests/pc.yaml:1"}},
		{"--k8s-version 1.21 is before the removal", []func(fstest.MapFS){lowMinKube, addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "1.21",
			[]string{"deprecated-apis.removed-api warning manifests/pc.yaml:1"}},
		{"--k8s-version 1.22", []func(fstest.MapFS){lowMinKube, addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "1.22",
			[]string{"deprecated-apis.removed-api error manifests/pc.yaml:1"}},
		{"OpenShift v4.6-v4.8 ends before 4.9", []func(fstest.MapFS){lowMinKube, ocp("v4.6-v4.8"), addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "",
			[]string{"deprecated-apis.removed-api warning manifests/pc.yaml:1"}},
		{"OpenShift v4.6-v4.9 reaches 4.9 (Kubernetes 1.22)", []func(fstest.MapFS){lowMinKube, ocp("v4.6-v4.9"), addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "",
			[]string{"deprecated-apis.removed-api error manifests/pc.yaml:1"}},
		{"OpenShift v4.8 and later", []func(fstest.MapFS){lowMinKube, ocp("v4.8"), addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "",
			[]string{"deprecated-apis.removed-api error manifests/pc.yaml:1"}},
		{"OpenShift v4.8 and later, but olm.maxOpenShiftVersion 4.8", []func(fstest.MapFS){lowMinKube, ocp("v4.8"), maxProp(`"4.8"`), addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "",
			[]string{"deprecated-apis.removed-api warning manifests/pc.yaml:1"}},
		{"olm.maxOpenShiftVersion as a number in the CSV", []func(fstest.MapFS){lowMinKube, ocp("v4.6"), csvEdit("  annotations:\n", "  annotations:\n    olm.properties: '[{\"type\": \"olm.maxOpenShiftVersion\", \"value\": 4.8}]'\n"), addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "",
			[]string{"deprecated-apis.removed-api warning manifests/pc.yaml:1"}},
		{"=v4.11 has 1.25 removals as warnings, 1.22 as errors", []func(fstest.MapFS){lowMinKube, ocp("=v4.11"), addFile("manifests/pc.yaml", v1beta1PriorityClass), addFile("manifests/pdb.yaml", v1beta1PDB)}, "",
			[]string{"deprecated-apis.removed-api error manifests/pc.yaml:1", "deprecated-apis.removed-api warning manifests/pdb.yaml:1"}},
		{"=v4.13 targets 1.26", []func(fstest.MapFS){lowMinKube, ocp("=v4.13"), addFile("manifests/hpa.yaml", v2beta2HPA)}, "",
			[]string{"deprecated-apis.removed-api error manifests/hpa.yaml:1"}},
		{"=v4.12 does not reach 1.26", []func(fstest.MapFS){lowMinKube, ocp("=v4.12"), addFile("manifests/hpa.yaml", v2beta2HPA)}, "",
			[]string{"deprecated-apis.removed-api warning manifests/hpa.yaml:1"}},
		{"the --k8s-version given wins over the annotation", []func(fstest.MapFS){lowMinKube, ocp("v4.12"), addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "1.20",
			[]string{"deprecated-apis.removed-api warning manifests/pc.yaml:1"}},
		{"a v1beta1 CRD", []func(fstest.MapFS){lowMinKube, ocp("v4.10"), addFile("manifests/etcdclusters.yaml", strings.Replace(goodCRD, "apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v1beta1\n", 1))}, "",
			[]string{"deprecated-apis.removed-api error manifests/etcdclusters.yaml:1"}},
		{"a CSV resource of a removed API", []func(fstest.MapFS){lowMinKube, csvEdit("        kind: EtcdCluster\n", "        kind: EtcdCluster\n        resources: [{kind: PodDisruptionBudget, version: policy/v1beta1}]\n")}, "1.25",
			[]string{"deprecated-apis.removed-api error manifests/etcd.csv.yaml:18"}},
		{"a permission on a resource 1.25 removed a version of", []func(fstest.MapFS){lowMinKube, csvEdit("        kind: EtcdCluster\n", "        kind: EtcdCluster\n  install:\n    spec:\n      permissions:\n      - rules: [{apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [get]}]\n")}, "1.30",
			[]string{"deprecated-apis.permission warning manifests/etcd.csv.yaml:21"}},
		{"an unreadable range is said, and judged without", []func(fstest.MapFS){lowMinKube, ocp("4.9+"), addFile("manifests/pc.yaml", v1beta1PriorityClass)}, "",
			[]string{"deprecated-apis.removed-api warning manifests/pc.yaml:1", "deprecated-apis.openshift-versions warning metadata/annotations.yaml:8"}},
		{"an olm.maxOpenShiftVersion below the range", []func(fstest.MapFS){lowMinKube, ocp("v4.12-v4.14"), maxProp(`"4.10"`)}, "",
			[]string{"deprecated-apis.openshift-versions warning metadata/properties.yaml:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := goodBundle()
			for _, e := range tc.edits {
				e(m)
			}
			b, _ := load(t, m)
			fs := RemovedAPIs(b, SuiteOptions{K8sVersion: tc.k8s})
			catalog.SortFindings(fs)
			var got []string
			for _, f := range fs {
				got = append(got, fmt.Sprintf("%s %s %s:%d", f.Rule, f.Severity, f.File, f.Line))
				if f.Column == 0 || f.Message == "" || f.Hint == "" {
					t.Errorf("finding without a column, message or hint: %+v", f)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("findings\n%s\nwant\n%s\n%v", strings.Join(got, "\n"), strings.Join(tc.want, "\n"), fs)
			}
		})
	}
}

func TestParseOpenShiftVersions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // the range, or "error: substring"
	}{
		{"v4.12", "OpenShift 4.12 and later"},
		{"4.12", "OpenShift 4.12 and later"},
		{"=v4.14", "OpenShift 4.14"},
		{"v4.12-v4.16", "OpenShift 4.12 to 4.16"},
		{"v4.12-4.16", "OpenShift 4.12 to 4.16"},
		{" v4.9 ", "OpenShift 4.9 and later"},
		{"v4.5,v4.6", "OpenShift 4.5 and later"},
		{"v4.6,v4.5", "OpenShift 4.5 and later"},
		{"v4.16-v4.12", "error: ends before it starts"},
		{"=v4.12-v4.14", "error: cannot use ="},
		{"v4.12,v4.13", "error: is a list"},
		{"v3.11", "error: not an OpenShift 4 version"},
		{"v4", "error: major.minor"},
		{"v4.12.1", "error: major.minor"},
		{"", "error: empty"},
		{"v4.x", "error: major.minor"},
		{"v4.12-", "error: major.minor"},
		{strings.Repeat("v4.12", 20), "error: more than a range can need"},
	} {
		r, err := ParseOpenShiftVersions(tc.in)
		got := r.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(tc.want, "error: ") && got != tc.want || strings.HasPrefix(tc.want, "error: ") && !strings.Contains(got, strings.TrimPrefix(tc.want, "error: ")) {
			t.Errorf("ParseOpenShiftVersions(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for in, want := range map[string]int{"4.8": 8, "4.8.0": 8, "v4.16": 16} {
		if got, err := ParseMaxOpenShiftVersion(in); err != nil || got != want {
			t.Errorf("ParseMaxOpenShiftVersion(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"4", "5.1", "4.8.0.1", "latest", ""} {
		if _, err := ParseMaxOpenShiftVersion(in); err == nil {
			t.Errorf("ParseMaxOpenShiftVersion(%q) accepted", in)
		}
	}
}

// FuzzParseOpenShiftVersions: never a panic; a range read is well formed, says the same once printed back
// in the annotation's own form, and contains its ends.
func FuzzParseOpenShiftVersions(f *testing.F) {
	for _, s := range []string{"v4.12", "=v4.14", "v4.12-v4.16", "v4.5,v4.6", "4.9", "v4.16-v4.12", "=v4.1-v4.2", "v4.999", "v4.0012", " v4.9-v4.10 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseOpenShiftVersions(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", s)
			}
			return
		}
		if r.Min < 0 || (!r.Open() && r.Max < r.Min) {
			t.Fatalf("%q: range %+v is not well formed", s, r)
		}
		if !r.Contains(r.Min) || (!r.Open() && !r.Contains(r.Max)) || r.Contains(r.Min-1) {
			t.Fatalf("%q: range %+v does not hold its ends", s, r)
		}
		var back string
		switch {
		case r.Open():
			back = fmt.Sprintf("v4.%d", r.Min)
		case r.Min == r.Max && !strings.Contains(s, "-"):
			back = fmt.Sprintf("=v4.%d", r.Min)
		default:
			back = fmt.Sprintf("v4.%d-v4.%d", r.Min, r.Max)
		}
		if r2, err := ParseOpenShiftVersions(back); err != nil || r2 != r {
			t.Fatalf("%q read as %+v; printed back as %q it reads as %+v, %v", s, r, back, r2, err)
		}
		if _, err := ParseMaxOpenShiftVersion(s); err == nil && len(s) > maxOpenShiftVersionLen {
			t.Fatalf("%q: a maximum version over the bound was accepted", s)
		}
	})
}
