package opmdiff

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/sirupsen/logrus"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
)

// removedAPIObjects are manifests using an API some Kubernetes version removed (and one it did not), each
// added to a real bundle in turn.
var removedAPIObjects = map[string]string{
	"priorityclass-v1beta1": "apiVersion: scheduling.k8s.io/v1beta1\nkind: PriorityClass\nmetadata:\n  name: zz-high\nvalue: 1000\n",
	"role-v1beta1":          "apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: Role\nmetadata:\n  name: zz-role\nrules: []\n",
	"clusterrole-v1beta1":   "apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: ClusterRole\nmetadata:\n  name: zz-clusterrole\nrules: []\n",
	"pdb-v1beta1":           "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: zz-pdb\nspec:\n  minAvailable: 1\n",
	"pdb-v1":                "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: zz-pdb\nspec:\n  minAvailable: 1\n",
	"hpa-v2beta2":           "apiVersion: autoscaling/v2beta2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: zz-hpa\n",
	"hpa-v2beta1":           "apiVersion: autoscaling/v2beta1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: zz-hpa\n",
	"cronjob-v1beta1":       "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata:\n  name: zz-cron\n",
	"ingress-extensions":    "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: zz-ingress\n",
	"storageclass-v1beta1":  "apiVersion: storage.k8s.io/v1beta1\nkind: StorageClass\nmetadata:\n  name: zz-sc\nprovisioner: x\n",
	"webhook-v1beta1":       "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: zz-webhook\n",
	"crd-v1beta1":           "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: zzs.example.com\nspec:\n  group: example.com\n  names: {kind: Zz, plural: zzs}\n  scope: Namespaced\n  version: v1\n  versions: [{name: v1, served: true, storage: true}]\n",
}

// removedAPITargets are the OpenShift versions a bundle may say it is for, each with the Kubernetes version
// it reaches (OpenShift 4.N is 1.(N+13); "" when the bundle says nothing, 1.99 when the range has no end),
// worked out here by hand so that catalogbot's reading of the annotations is checked too.
var removedAPITargets = []struct {
	name, annotation, maxOpenShift, k8s string
}{
	{"no targets", "", "", ""},
	{"v4.6-v4.8", "v4.6-v4.8", "", "1.21"},
	{"v4.8 and later", "v4.8", "", "1.99"},
	{"=v4.11", "=v4.11", "", "1.24"},
	{"=v4.12", "=v4.12", "", "1.25"},
	{"v4.10-v4.13", "v4.10-v4.13", "", "1.26"},
	{"v4.6 and later up to max 4.8", "v4.6", "4.8", "1.21"},
	{"v4.9-v4.14 up to max 4.11", "v4.9-v4.14", "4.11", "1.24"},
	{"legacy v4.5,v4.6", "v4.5,v4.6", "", "1.99"},
}

// TestRemovedAPIsMatchTheValidator: real bundles, each given a manifest of a removed API (or a CSV resource
// or permission naming one) and each set of OpenShift versions, go to catalogbot's optional suite
// deprecated-apis and to operator-framework/api's deprecated-APIs validator (operator-sdk's
// alpha-deprecated-apis) with the k8s-version those OpenShift versions reach: for every Kubernetes version
// with removals, both must report the same severities (an error when the bundle targets the version, a
// warning otherwise).
func TestRemovedAPIsMatchTheValidator(t *testing.T) {
	logrus.SetLevel(logrus.PanicLevel)
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skipf("the shared test data is absent (%s)", root)
	}
	sort.Strings(anns)
	var bases []string
	for i := 0; i < len(anns); i += 45 {
		bases = append(bases, filepath.Dir(filepath.Dir(anns[i])))
	}
	var names []string
	for n := range removedAPIObjects {
		names = append(names, n)
	}
	sort.Strings(names)
	type edit struct {
		name string
		do   func(files map[string]string) bool
	}
	var edits []edit
	for _, n := range names {
		edits = append(edits, edit{n, addFile("manifests/zz-"+n+".yaml", removedAPIObjects[n])})
	}
	edits = append(edits,
		edit{"csv resource of a removed API", editCSV(`(?m)^(      - )(description:|displayName:|kind:|name:)`, "${1}resources: [{kind: CronJob, name: '', version: batch/v1beta1}]\n        $2")},
		edit{"permission on a removed resource", editCSV(`(?m)^(\s+)(- apiGroups:\n)`, "${1}- apiGroups: [policy]\n${1}  resources: [poddisruptionbudgets]\n${1}  verbs: [get]\n${1}$2")},
		edit{"minKubeVersion 1.25 and a v1beta1 PriorityClass", func(files map[string]string) bool {
			f := csvFile(files)
			if f == "" || !regexp.MustCompile(`(?m)^  minKubeVersion: `).MatchString(files[f]) {
				return false
			}
			files[f] = regexp.MustCompile(`(?m)^(  minKubeVersion: ).*$`).ReplaceAllString(files[f], "${1}1.25.0")
			files["manifests/zz-pc.yaml"] = removedAPIObjects["priorityclass-v1beta1"]
			return true
		}},
	)
	cases, errorsSeen, warningsSeen := 0, 0, 0
	for _, base := range bases {
		files := readTree(t, base)
		for _, e := range edits {
			for _, tg := range removedAPITargets {
				mutated := map[string]string{}
				for k, v := range files {
					mutated[k] = v
				}
				if !e.do(mutated) {
					continue
				}
				if !setTargets(mutated, tg.annotation, tg.maxOpenShift) {
					continue
				}
				cases++
				dir := t.TempDir()
				for name, content := range mutated {
					writeFile(t, filepath.Join(dir, filepath.FromSlash(name)), content)
				}
				b, _, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
				if err != nil || b.CSV == nil {
					t.Errorf("%s / %s / %s: not loaded: %v", filepath.Base(base), e.name, tg.name, err)
					continue
				}
				ours := ourRemovals(bundle.RunSuites([]string{"deprecated-apis"}, b, bundle.SuiteOptions{}))
				theirs, why := theirRemovals(dir, tg.k8s)
				if ours != theirs {
					t.Errorf("%s / %s / %s: catalogbot %s, validator (k8s-version %q) %s\ncatalogbot: %v\nvalidator: %s",
						filepath.Base(base), e.name, tg.name, ours, tg.k8s, theirs, bundle.RunSuites([]string{"deprecated-apis"}, b, bundle.SuiteOptions{}), why)
				}
				errorsSeen += strings.Count(ours, "error")
				warningsSeen += strings.Count(ours, "warning")
			}
		}
	}
	t.Logf("%d mutated bundles (%d bases): %d removals reported as errors, %d as warnings, the same on both sides", cases, len(bases), errorsSeen, warningsSeen)
	if cases < 100 || errorsSeen == 0 || warningsSeen == 0 {
		t.Errorf("%d cases, %d errors, %d warnings: the mutations do not cover both verdicts", cases, errorsSeen, warningsSeen)
	}
}

// setTargets writes the OpenShift versions into the annotations and an olm.maxOpenShiftVersion into
// metadata/properties.yaml (replacing what the bundle said).
func setTargets(files map[string]string, annotation, max string) bool {
	f := annFile(files)
	if f == "" {
		return false
	}
	files[f] = regexp.MustCompile(`(?m)^\s+com\.redhat\.openshift\.versions:.*\n`).ReplaceAllString(files[f], "")
	if annotation != "" {
		if !strings.HasPrefix(files[f], "annotations:\n") {
			return false
		}
		files[f] = strings.Replace(files[f], "annotations:\n", "annotations:\n  com.redhat.openshift.versions: "+strconv.Quote(annotation)+"\n", 1)
	}
	if c := csvFile(files); strings.Contains(files[c], "olm.maxOpenShiftVersion") || strings.Contains(files["metadata/properties.yaml"], "olm.maxOpenShiftVersion") {
		return false // the bundle caps itself already
	}
	if max != "" {
		if _, ok := files["metadata/properties.yaml"]; ok {
			return false
		}
		files["metadata/properties.yaml"] = "properties:\n  - type: olm.maxOpenShiftVersion\n    value: \"" + max + "\"\n"
	}
	return true
}

var removedIn = regexp.MustCompile(`(?:removed in v1\.|Kubernetes 1\.)(\d+)`)

// ourRemovals is the set of (Kubernetes version, severity) catalogbot reports, sorted.
func ourRemovals(fs []catalog.Finding) string {
	set := map[string]bool{}
	for _, f := range fs {
		if m := removedIn.FindStringSubmatch(f.Message); m != nil && strings.HasPrefix(f.Rule, "deprecated-apis.") && f.Rule != "deprecated-apis.openshift-versions" {
			set[fmt.Sprintf("1.%s %s", m[1], f.Severity)] = true
		}
	}
	return joinSet(set)
}

// theirRemovals is the same of operator-framework/api's validator, given k8s-version.
func theirRemovals(dir, k8s string) (string, string) {
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return "load error", err.Error()
	}
	objs := b.ObjectsToValidate()
	for _, o := range b.Objects {
		objs = append(objs, o)
	}
	objs = append(objs, map[string]string{"k8s-version": k8s})
	set := map[string]bool{}
	var msgs []string
	for _, r := range validation.AlphaDeprecatedAPIsValidator.Validate(objs...) {
		for _, e := range r.Errors {
			if m := removedIn.FindStringSubmatch(e.Detail); m != nil {
				set[fmt.Sprintf("1.%s error", m[1])] = true
			}
			msgs = append(msgs, "error: "+e.Detail)
		}
		for _, w := range r.Warnings {
			if m := removedIn.FindStringSubmatch(w.Detail); m != nil {
				set[fmt.Sprintf("1.%s warning", m[1])] = true
			}
			msgs = append(msgs, "warning: "+w.Detail)
		}
	}
	return joinSet(set), strings.Join(msgs, "\n")
}

func joinSet(set map[string]bool) string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, ", ")
}
