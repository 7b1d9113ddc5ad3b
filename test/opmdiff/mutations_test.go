package opmdiff

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/image"
	"github.com/operator-framework/operator-registry/pkg/registry"
	"github.com/sirupsen/logrus"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
)

// mutation breaks (or bends) one rule of a bundle directory, given as file name -> content. It returns false
// when the bundle has nothing it applies to.
type mutation struct {
	name string
	edit func(files map[string]string) bool
}

// csvFile is the name of the bundle's CSV file.
func csvFile(files map[string]string) string {
	var names []string
	for n, c := range files {
		if strings.HasPrefix(n, "manifests/") && strings.Contains(c, "kind: ClusterServiceVersion") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func annFile(files map[string]string) string {
	if _, ok := files["metadata/annotations.yaml"]; ok {
		return "metadata/annotations.yaml"
	}
	return ""
}

// editCSV applies a regular expression replacement (first match) to the CSV.
func editCSV(re, repl string) func(map[string]string) bool {
	rx := regexp.MustCompile(re)
	return func(files map[string]string) bool {
		f := csvFile(files)
		if f == "" {
			return false
		}
		loc := rx.FindStringSubmatchIndex(files[f])
		if loc == nil {
			return false
		}
		out := string(rx.ExpandString(nil, repl, files[f], loc))
		files[f] = files[f][:loc[0]] + out + files[f][loc[1]:]
		return true
	}
}

// editCRD applies a regular expression replacement (first match) to the first v1 CRD that has a match.
func editCRD(re, repl string) func(map[string]string) bool {
	rx := regexp.MustCompile(re)
	return func(files map[string]string) bool {
		var names []string
		for n := range files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c := files[n]
			if !strings.HasPrefix(n, "manifests/") || !strings.Contains(c, "kind: CustomResourceDefinition") || !strings.Contains(c, "apiextensions.k8s.io/v1\n") {
				continue
			}
			loc := rx.FindStringSubmatchIndex(c)
			if loc == nil {
				continue
			}
			out := string(rx.ExpandString(nil, repl, c, loc))
			files[n] = c[:loc[0]] + out + c[loc[1]:]
			return true
		}
		return false
	}
}

func editAnnotations(re, repl string) func(map[string]string) bool {
	rx := regexp.MustCompile(re)
	return func(files map[string]string) bool {
		f := annFile(files)
		if f == "" || !rx.MatchString(files[f]) {
			return false
		}
		done := false
		files[f] = rx.ReplaceAllStringFunc(files[f], func(m string) string {
			if done {
				return m
			}
			done = true
			return rx.ReplaceAllString(m, repl)
		})
		return true
	}
}

func addFile(name, content string) func(map[string]string) bool {
	return func(files map[string]string) bool {
		files[name] = content
		return true
	}
}

// specLine inserts text as lines right after the CSV's top-level "spec:" line.
func specLine(text string, unless string) func(map[string]string) bool {
	return func(files map[string]string) bool {
		f := csvFile(files)
		if f == "" || (unless != "" && regexp.MustCompile(unless).MatchString(files[f])) {
			return false
		}
		i := strings.Index(files[f], "\nspec:\n")
		if i < 0 {
			return false
		}
		files[f] = files[f][:i+len("\nspec:\n")] + text + files[f][i+len("\nspec:\n"):]
		return true
	}
}

// noise is n base64 characters that gzip cannot shrink much.
func noise(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[r.IntN(64)]
	}
	return string(b)
}

// mutations are the rules issue 29 names, in both directions, and the reference validators' other errors.
func mutations() []mutation {
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: extra\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec:\n      containers: [{name: x, image: quay.io/acme/x:v1}]\n"
	service := "apiVersion: v1\nkind: Service\nmetadata:\n  name: extra-metrics\nspec:\n  ports: [{port: 8443}]\n"
	annRe := `(?m)^(\s+operators\.operatorframework\.io\.bundle\.%s\.v1:).*$`
	return []mutation{
		// The references refuse these.
		{"crd without a storage version", func(files map[string]string) bool {
			for n, c := range files {
				if strings.HasPrefix(n, "manifests/") && strings.Contains(c, "kind: CustomResourceDefinition") && strings.Contains(c, "apiextensions.k8s.io/v1\n") && strings.Contains(c, "storage: true") {
					files[n] = strings.ReplaceAll(c, "storage: true", "storage: false")
					return true
				}
			}
			return false
		}},
		{"crd scope invalid", editCRD(`(?m)^(  scope: )\w+$`, "${1}Global")},
		{"crd group without a dot", editCRD(`(?m)^(  group: )(\S+)$`, "${1}nodot")},
		{"crd no served version", editCRD(`served: true`, "served: false")},
		{"crd kind missing", editCRD(`(?m)^    kind: \S+\n`, "")},
		{"crd plural upper case", editCRD(`(?m)^(    plural: )(\S+)$`, "${1}Upper${2}")},
		{"related image empty", specLine("  relatedImages:\n  - name: empty\n    image: \"\"\n", `(?m)^  relatedImages:`)},
		{"related image upper case", specLine("  relatedImages:\n  - name: upper\n    image: quay.io/Acme/Operator:v1\n", `(?m)^  relatedImages:`)},
		{"release set, name not release-versioned", specLine("  release: \"2\"\n", `(?m)^  release:`)},
		{"hidden file in manifests", addFile("manifests/.extra.yaml", service)},
		{"folder in manifests", addFile("manifests/more/extra.yaml", service)},
		{"empty manifest", addFile("manifests/zz-empty.yaml", "")},
		{"manifest without kind", addFile("manifests/zz-nokind.yaml", "apiVersion: v1\nmetadata:\n  name: x\n")},
		{"huge icon", func(files map[string]string) bool {
			return specLine("  icon:\n  - base64data: "+noise(1200<<10)+"\n    mediatype: image/png\n", `(?m)^  icon:`)(files)
		}},
		// operator-framework/api counts every file of the bundle directory, not only manifests/ and metadata/.
		{"huge file beside manifests", func(files map[string]string) bool {
			return addFile("tests/scorecard/noise.txt", noise(1200<<10))(files)
		}},
		{"huge hidden file at the top", func(files map[string]string) bool {
			return addFile(".cache", noise(1200<<10))(files)
		}},
		{"csv name upper case", editCSV(`(?m)^(  name: )(\S+)$`, "${1}Upper_${2}")},
		{"no install mode supported", editCSV(`supported: true`, "supported: false")},
		{"alm-examples not JSON", editCSV(`(?m)^(    alm-examples: )(.*)$`, "${1}'[{'")},
		{"minKubeVersion not semver", editCSV(`(?m)^(  minKubeVersion: ).*$`, "${1}v1.x")},
		{"no csv", func(files map[string]string) bool {
			f := csvFile(files)
			if f == "" {
				return false
			}
			delete(files, f)
			return true
		}},
		{"no annotations", func(files map[string]string) bool {
			f := annFile(files)
			if f == "" {
				return false
			}
			files[f] = "annotations: {}\n"
			return true
		}},
		// The references accept these (operator-registry's format checks, catalogbot's warnings).
		{"version not semver", editCSV(`(?m)^(  version: )\S+$`, "${1}1.0")},
		{"version with a v", editCSV(`(?m)^(  version: )(\S+)$`, "${1}v${2}")},
		{"version missing", editCSV(`(?m)^  version: \S+\n`, "")},
		{"channels empty", editAnnotations(fmt.Sprintf(annRe, "channels"), `$1 ""`)},
		{"mediatype helm", editAnnotations(fmt.Sprintf(annRe, "mediatype"), "$1 helm")},
		{"mediatype missing", editAnnotations(fmt.Sprintf(annRe+`\n`, "mediatype"), "")},
		{"manifests label elsewhere", editAnnotations(fmt.Sprintf(annRe, "manifests"), "$1 other/")},
		{"deployment in manifests", addFile("manifests/zz-deployment.yaml", deploy)},
		{"namespace in manifests", addFile("manifests/zz-namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: extra\n")},
		{"operatorgroup in manifests", addFile("manifests/zz-og.yaml", "apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\nmetadata:\n  name: extra\n")},
		{"two objects in a manifest", addFile("manifests/zz-two.yaml", service+"---\n"+strings.Replace(service, "extra-metrics", "extra-two", 1))},
		{"install mode twice", editCSV(`(?m)^(  installModes:\n)`, "${1}  - {type: OwnNamespace, supported: false}\n  - {type: OwnNamespace, supported: false}\n")},
		{"dependencies not YAML", addFile("metadata/dependencies.yaml", "dependencies: [\n")},
		{"dependency of unknown type", addFile("metadata/dependencies.yaml", "dependencies:\n  - type: olm.magic\n    value: {x: 1}\n")},
		{"constraint without body", addFile("metadata/dependencies.yaml", "dependencies:\n  - type: olm.constraint\n    value: {failureMessage: x}\n")},
		{"package dependency bad range", addFile("metadata/dependencies.yaml", "dependencies:\n  - type: olm.package\n    value: {packageName: etcd, version: '^^1'}\n")},
		{"gvk dependency without kind", addFile("metadata/dependencies.yaml", "dependencies:\n  - type: olm.gvk\n    value: {group: g.example.com, version: v1}\n")},
		{"olm.properties not JSON", editCSV(`(?m)^(  annotations:\n)`, "${1}    olm.properties: '[{'\n")},
		{"default channel empty", editAnnotations(fmt.Sprintf(annRe, "channel.default"), `$1 ""`)},
	}
}

// opmRender is what `opm render DIR` makes of a bundle directory, from operator-registry's own functions
// (alpha/action's renderBundleDirectory and bundleToDeclcfg put together here: that package needs cgo):
// the bundle parser, its properties and objects, the related images (the CSV's, then the operator's),
// objects last and related images sorted as render does. The blob as JSON, or the error.
func opmRender(dir string) (map[string]any, error) {
	in, err := registry.NewImageInput(image.SimpleReference(""), dir)
	if err != nil {
		return nil, err
	}
	b := in.Bundle
	_, props, err := registry.ObjectsAndPropertiesFromBundle(b)
	if err != nil {
		return nil, fmt.Errorf("get properties for bundle %q: %v", b.Name, err)
	}
	csv, err := b.ClusterServiceVersion()
	if err != nil {
		return nil, err
	}
	var spec map[string]*json.RawMessage
	if err := json.Unmarshal(csv.Spec, &spec); err != nil {
		return nil, err
	}
	var related []declcfg.RelatedImage
	if raw, ok := spec["relatedImages"]; ok && raw != nil {
		if err := json.Unmarshal(*raw, &related); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, ri := range related {
		seen[ri.Image] = true
	}
	ops, err := csv.GetOperatorImages()
	if err != nil {
		return nil, err
	}
	for img := range ops {
		if !seen[img] {
			related = append(related, declcfg.RelatedImage{Image: img})
		}
		seen[img] = true
	}
	sort.Slice(related, func(i, j int) bool { return related[i].Image < related[j].Image })
	var others, objs []property.Property
	for _, p := range props {
		if p.Type == property.TypeBundleObject || p.Type == property.TypeCSVMetadata {
			objs = append(objs, p)
		} else {
			others = append(others, p)
		}
	}
	blob := declcfg.Bundle{Schema: "olm.bundle", Name: b.Name, Package: b.Package, Image: b.BundleImage,
		Properties: append(others, objs...), RelatedImages: related}
	data, err := json.Marshal(blob)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	err = json.Unmarshal(data, &v)
	return v, err
}

// TestBundleMutationsAgainstReferences: bundles of the shared test data, each mutated one rule at a time,
// go to opm render and operator-framework/api's default validators (the reference verdict: invalid when opm
// render fails or a validator reports an error) and to catalogbot (invalid when bundle validate reports an
// error, without --strict); the verdicts must agree, and where opm renders, catalogbot's bundle render must
// give the same blob. Every mutation that once disagreed stays in the list as a regression case.
func TestBundleMutationsAgainstReferences(t *testing.T) {
	logrus.SetLevel(logrus.PanicLevel)
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skipf("the shared test data is absent (%s)", root)
	}
	sort.Strings(anns)
	var bases []string
	for i := 0; i < len(anns); i += 14 {
		bases = append(bases, filepath.Dir(filepath.Dir(anns[i])))
	}
	agree, cases, renders := 0, 0, 0
	for _, base := range bases {
		files := readTree(t, base)
		for _, m := range mutations() {
			mutated := map[string]string{}
			for k, v := range files {
				mutated[k] = v
			}
			if !m.edit(mutated) {
				continue
			}
			cases++
			dir := t.TempDir()
			for name, content := range mutated {
				writeFile(t, filepath.Join(dir, filepath.FromSlash(name)), content)
			}
			blob, renderErr := opmRender(dir)
			apiInvalid, why := apiVerdict(dir)
			refInvalid := renderErr != nil || apiInvalid
			b, fs, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
			if err != nil {
				t.Errorf("%s / %s: %v", filepath.Base(base), m.name, err)
				continue
			}
			ours := catalog.HasErrors(fs)
			if ours != refInvalid {
				t.Errorf("%s / %s: catalogbot invalid=%v, reference invalid=%v (opm render: %v; api: %s)\ncatalogbot: %v",
					filepath.Base(base), m.name, ours, refInvalid, renderErr, why, errorsOf(fs))
				continue
			}
			agree++
			// Whatever opm renders, catalogbot renders the same.
			if renderErr != nil {
				continue
			}
			if stop := bundle.NotRenderable(b, fs); stop != nil {
				t.Errorf("%s / %s: opm renders, catalogbot does not: %v", filepath.Base(base), m.name, stop)
				continue
			}
			r, err := bundle.Render(b, "")
			if err != nil {
				t.Errorf("%s / %s: opm renders, catalogbot's render fails: %v", filepath.Base(base), m.name, err)
				continue
			}
			data, _ := json.Marshal(r)
			var mine map[string]any
			_ = json.Unmarshal(data, &mine)
			normaliseBlob(blob)
			normaliseBlob(mine)
			if !reflect.DeepEqual(blob, mine) {
				t.Errorf("%s / %s: the blobs differ\nopm:        %.1500v\ncatalogbot: %.1500v", filepath.Base(base), m.name, blob, mine)
				continue
			}
			renders++
		}
	}
	t.Logf("%d mutated bundles (%d bases, %d mutations): %d verdicts agree, %d identical blobs", cases, len(bases), len(mutations()), agree, renders)
	if cases < 300 {
		t.Errorf("only %d mutated bundles; the test is meant to cover hundreds", cases)
	}
}

// normaliseBlob drops what JSON leaves empty either way and orders related images.
func normaliseBlob(v map[string]any) {
	if v == nil {
		return
	}
	if ri, ok := v["relatedImages"].([]any); ok {
		sort.SliceStable(ri, func(i, j int) bool { return fmt.Sprint(ri[i]) < fmt.Sprint(ri[j]) })
		if len(ri) == 0 {
			delete(v, "relatedImages")
		}
	}
	if s, ok := v["image"].(string); ok && s == "" {
		delete(v, "image")
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
