package opmdiff

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/pkg/image"
	"github.com/operator-framework/operator-registry/pkg/registry"
	"github.com/sirupsen/logrus"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
)

const metaCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: etcdoperator.v0.9.4
spec:
  version: 0.9.4
  minKubeVersion: 1.25.0
  installModes:
    - {type: AllNamespaces, supported: true}
`

// annotationsYAML is an annotations file of package pkg, its mapping under key top.
func annotationsYAML(top, pkg string) string {
	return top + `:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: ` + pkg + `
  operators.operatorframework.io.bundle.channels.v1: alpha,stable
`
}

const (
	depsYAML  = "dependencies:\n  - type: olm.gvk\n    value: {group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}\n"
	deps2YAML = "dependencies:\n  - type: olm.package\n    value: {packageName: prometheus, version: '>=0.14.0'}\n"
	propsYAML = "properties:\n  - type: olm.maxOpenShiftVersion\n    value: \"4.18\"\n"
)

// metadataVariants are metadata/ folders (file name -> content; a name ending in / is a folder) that differ
// in file names, name order, extra keys and the shape of the documents: the layouts issue 26 names and the
// corners of Kubernetes' YAML-or-JSON decoder.
func metadataVariants() map[string]metadataVariant {
	v := map[string]metadataVariant{}
	add := func(name string, ambiguous bool, files map[string]string) {
		v[name] = metadataVariant{files: files, ambiguous: ambiguous}
	}
	good := annotationsYAML("annotations", "etcd")
	// One annotations file under many names.
	for _, name := range []string{"annotations.yaml", "annotations.yml", "a.yaml", "zz.yaml", ".hidden.yaml", "annotations", "bundle.json.txt"} {
		add("one file named "+name, false, map[string]string{name: good})
	}
	add("json annotations", false, map[string]string{"annotations.json": `{"annotations": {"operators.operatorframework.io.bundle.package.v1": "etcd", "operators.operatorframework.io.bundle.channels.v1": "alpha"}}`})
	// Two annotations files, in both name orders.
	for _, other := range []string{"00-first.yaml", "a.yaml", "annotations.yml", "b.yaml", ".annotations.yaml", "zz.yaml"} {
		add("second annotations file "+other, true, map[string]string{"annotations.yaml": good, other: annotationsYAML("annotations", "evil")})
	}
	// Extra keys, in the annotations file and in others.
	add("dependencies inside annotations.yaml", false, map[string]string{"annotations.yaml": good + depsYAML})
	add("properties inside annotations.yaml", false, map[string]string{"annotations.yaml": good + propsYAML})
	add("dependencies and properties inside annotations.yaml", false, map[string]string{"annotations.yaml": good + depsYAML + propsYAML})
	add("dependencies in an odd name", false, map[string]string{"annotations.yaml": good, "zz-extra.yaml": depsYAML})
	add("dependencies before the annotations", false, map[string]string{"annotations.yaml": good, "00.yaml": depsYAML})
	add("two dependencies files", true, map[string]string{"annotations.yaml": good, "dependencies.yaml": depsYAML, "aa.yaml": deps2YAML})
	add("dependencies in annotations.yaml and dependencies.yaml", true, map[string]string{"annotations.yaml": good + deps2YAML, "dependencies.yaml": depsYAML})
	add("empty dependencies then real ones", false, map[string]string{"annotations.yaml": good + "dependencies: []\n", "dependencies.yaml": depsYAML})
	add("properties olm.package of another package", true, map[string]string{"annotations.yaml": good, "properties.yaml": "properties:\n  - type: olm.package\n    value: {packageName: evil, version: 9.9.9}\n"})
	add("properties olm.package of the same package", false, map[string]string{"annotations.yaml": good, "properties.yaml": "properties:\n  - type: olm.package\n    value: {packageName: etcd, version: 0.9.4}\n"})
	// Key spellings encoding/json accepts.
	add("Annotations capitalised", false, map[string]string{"annotations.yaml": annotationsYAML("Annotations", "etcd")})
	add("package key in upper case", false, map[string]string{"annotations.yaml": strings.Replace(good, "bundle.package.v1", "bundle.PACKAGE.v1", 1)})
	add("Dependencies capitalised", false, map[string]string{"annotations.yaml": good, "dependencies.yaml": strings.Replace(depsYAML, "dependencies:", "Dependencies:", 1)})
	add("Type and Value capitalised", false, map[string]string{"annotations.yaml": good, "dependencies.yaml": strings.NewReplacer("type:", "Type:", "value:", "Value:").Replace(depsYAML)})
	// Values opm's decoder refuses or ignores.
	add("package is a number", false, map[string]string{"annotations.yaml": strings.Replace(good, "package.v1: etcd", "package.v1: 123", 1)})
	add("package is a number, another file fine", true, map[string]string{"a.yaml": strings.Replace(good, "package.v1: etcd", "package.v1: 123", 1), "b.yaml": good})
	add("package null, channels set", false, map[string]string{"annotations.yaml": strings.Replace(good, "package.v1: etcd", "package.v1: null", 1)})
	add("other annotation a number", false, map[string]string{"annotations.yaml": good + "  com.example/size: 3\n"})
	add("only mediatype", true, map[string]string{"annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n", "b.yaml": good})
	add("annotations is a list", false, map[string]string{"annotations.yaml": "annotations: [a, b]\n", "b.yaml": good})
	add("annotations is null", false, map[string]string{"annotations.yaml": "annotations: null\n", "b.yaml": good})
	add("dependencies is a mapping", false, map[string]string{"annotations.yaml": good, "dependencies.yaml": "dependencies: {type: olm.gvk}\n"})
	add("dependency type a number", false, map[string]string{"annotations.yaml": good, "dependencies.yaml": "dependencies:\n  - type: 3\n    value: {}\n"})
	add("dependency item null", false, map[string]string{"annotations.yaml": good, "dependencies.yaml": "dependencies:\n  - null\n" + strings.TrimPrefix(depsYAML, "dependencies:\n")})
	add("dependencies not YAML", false, map[string]string{"annotations.yaml": good, "dependencies.yaml": "dependencies: [\n"})
	add("top level a list", false, map[string]string{"a.yaml": "- annotations: {}\n", "b.yaml": good})
	// Document shapes.
	add("leading separators", true, map[string]string{"annotations.yaml": "---\n---\n" + good})
	add("separator with comment", false, map[string]string{"annotations.yaml": "--- # bundle\n" + good})
	add("comment before a separator", true, map[string]string{"annotations.yaml": "# header\n---\n" + good, "zz.yaml": annotationsYAML("annotations", "other")})
	add("blank line before a separator", true, map[string]string{"annotations.yaml": "\n---\n" + good, "zz.yaml": annotationsYAML("annotations", "other")})
	add("annotations in the second document", true, map[string]string{"a.yaml": "kind: x\n---\n" + annotationsYAML("annotations", "evil"), "b.yaml": good})
	add("two documents, first annotations", true, map[string]string{"annotations.yaml": good + "---\n" + depsYAML})
	add("bad separator", false, map[string]string{"a.yaml": "--- x\n" + annotationsYAML("annotations", "evil"), "b.yaml": good})
	add("null document", true, map[string]string{"a.yaml": "null\n---\n" + annotationsYAML("annotations", "evil"), "b.yaml": good})
	add("empty file", false, map[string]string{"a.yaml": "", "b.yaml": good})
	add("json stream", true, map[string]string{"a.json": `{"kind": "x"}{"annotations": {"operators.operatorframework.io.bundle.package.v1": "evil"}}`, "b.yaml": good})
	add("a folder named annotations.yaml", false, map[string]string{"a/": "", "annotations.yaml/": "", "b.yaml": good})
	add("no annotations at all", false, map[string]string{"dependencies.yaml": depsYAML})
	add("duplicate package key", false, map[string]string{"annotations.yaml": good + "  operators.operatorframework.io.bundle.package.v1: evil\n"})
	add("package a boolean", false, map[string]string{"annotations.yaml": strings.Replace(good, "package.v1: etcd", "package.v1: yes", 1)})
	add("channels a float", false, map[string]string{"annotations.yaml": strings.Replace(good, "channels.v1: alpha,stable", "channels.v1: 1.50", 1)})
	add("json package a number", false, map[string]string{"annotations.json": `{"annotations": {"operators.operatorframework.io.bundle.package.v1": 7, "operators.operatorframework.io.bundle.channels.v1": "alpha"}}`})
	add("annotations twice in one mapping, two spellings", false, map[string]string{"annotations.yaml": good + "Annotations:\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n"})
	add("olm.package property value not an object", false, map[string]string{"annotations.yaml": good, "properties.yaml": "properties:\n  - type: olm.package\n    value: 3\n"})
	add("olm.gvk dependency value a string", false, map[string]string{"annotations.yaml": good, "dependencies.yaml": "dependencies:\n  - type: olm.gvk\n    value: x\n"})
	add("hidden dependencies file", false, map[string]string{"annotations.yaml": good, ".deps.yaml": depsYAML})
	add("properties list empty, then a second with entries", false, map[string]string{"annotations.yaml": good + "properties: []\n", "properties.yaml": propsYAML})
	add("two properties files", true, map[string]string{"annotations.yaml": good, "properties.yaml": propsYAML, "p.yaml": propsYAML})
	// Generated: every pair of an annotations name and a dependencies name, with the dependencies inside
	// another file (name order both ways).
	names := []string{".a.yaml", "00.yaml", "annotations.yaml", "dependencies.yaml", "m.yml", "zz.json"}
	for _, an := range names {
		for _, dn := range names {
			if an == dn {
				continue
			}
			content := map[string]string{an: good, dn: depsYAML}
			if strings.HasSuffix(dn, ".json") {
				content[dn] = `{"dependencies": [{"type": "olm.gvk", "value": {"group": "g", "kind": "K", "version": "v1"}}]}`
			}
			add(fmt.Sprintf("generated annotations %s dependencies %s", an, dn), false, content)
		}
	}
	return v
}

// metadataVariant is one metadata/ folder, and whether catalogbot must refuse it as ambiguous.
type metadataVariant struct {
	files     map[string]string
	ambiguous bool
}

// opmMetadata is what operator-registry's bundle parser (behind opm render) reads of a bundle directory.
type opmMetadata struct {
	Err        string
	Package    string
	Channels   []string
	Properties []string // type=value, olm.bundle.object left out, as opm renders them
}

func theirMetadata(dir string) opmMetadata {
	in, err := registry.NewImageInput(image.SimpleReference("example.com/etcd-bundle:v0.9.4"), dir)
	if err != nil {
		return opmMetadata{Err: err.Error()}
	}
	out := opmMetadata{Package: in.Bundle.Package, Channels: in.Bundle.Channels}
	_, props, err := registry.ObjectsAndPropertiesFromBundle(in.Bundle)
	if err != nil {
		return opmMetadata{Err: "render: " + err.Error()}
	}
	for _, p := range props {
		if p.Type != "olm.bundle.object" {
			out.Properties = append(out.Properties, p.Type+"="+normJSON(p.Value))
		}
	}
	return out
}

func ourMetadata(dir string) (opmMetadata, []catalog.Finding) {
	b, fs, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
	if err != nil {
		return opmMetadata{Err: err.Error()}, nil
	}
	for _, f := range fs {
		if f.Rule == "bundle.no-annotations" {
			return opmMetadata{Err: f.Message}, fs
		}
	}
	out := opmMetadata{Package: b.Package, Channels: []string{}}
	if c, ok := b.Annotations[bundle.AnnotationChannels]; ok && c != "" {
		out.Channels = strings.Split(c, ",")
	}
	r, err := bundle.Render(b, "example.com/etcd-bundle:v0.9.4")
	if err != nil {
		return opmMetadata{Err: "render: " + err.Error()}, fs
	}
	for _, p := range r.Properties {
		if p.Type != "olm.bundle.object" {
			out.Properties = append(out.Properties, p.Type+"="+normJSON(p.Value))
		}
	}
	return out, fs
}

func normJSON(raw []byte) string {
	if len(raw) == 0 {
		raw = []byte("null") // a nil json.RawMessage is written as null
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestMetadataAsOpmReadsIt gives catalogbot and operator-registry's bundle parser the same bundle directories,
// whose metadata/ varies (file names, name order, extra keys, key spellings, document shapes), and compares
// what each reads: whether annotations are found, the package, the channels and every property opm renders
// (dependencies included). Where the layout is ambiguous catalogbot must also refuse it, with a finding.
func TestMetadataAsOpmReadsIt(t *testing.T) {
	logrus.SetLevel(logrus.PanicLevel)
	variants := metadataVariants()
	names := make([]string, 0, len(variants))
	for n := range variants {
		names = append(names, n)
	}
	sort.Strings(names)
	agree := 0
	for _, name := range names {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "manifests", "csv.yaml"), metaCSV)
		if err := os.MkdirAll(filepath.Join(dir, "metadata"), 0o755); err != nil {
			t.Fatal(err)
		}
		for f, content := range variants[name].files {
			if strings.HasSuffix(f, "/") {
				if err := os.MkdirAll(filepath.Join(dir, "metadata", f), 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			writeFile(t, filepath.Join(dir, "metadata", f), content)
		}
		theirs := theirMetadata(dir)
		ours, fs := ourMetadata(dir)
		if (theirs.Err == "") != (ours.Err == "") || (theirs.Err == "" && !reflect.DeepEqual(theirs, ours)) {
			t.Errorf("%s: opm and catalogbot read metadata/ differently\nopm:        %+v\ncatalogbot: %+v\nfindings: %v", name, theirs, ours, fs)
			continue
		}
		agree++
		// Every layout with two annotations, dependencies or properties lists is refused.
		if variants[name].ambiguous != hasRule(fs, "bundle.metadata-ambiguous") {
			t.Errorf("%s: catalogbot should refuse it as ambiguous: %v; findings %v", name, variants[name].ambiguous, fs)
		}
	}
	t.Logf("%d metadata layouts: catalogbot reads %d as opm does", len(names), agree)
}

func hasRule(fs []catalog.Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule && f.Severity == catalog.SeverityError {
			return true
		}
	}
	return false
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzMetadataAgainstOpm: a metadata file of any content, next to a good annotations.yaml (it sorts first, so
// its annotations win when opm can read them): catalogbot reads the package, channels and properties opm does.
func FuzzMetadataAgainstOpm(f *testing.F) {
	logrus.SetLevel(logrus.PanicLevel)
	for _, v := range metadataVariants() {
		for _, c := range v.files {
			if len(c) < 4096 {
				f.Add([]byte(c))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16<<10 {
			return
		}
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "manifests", "csv.yaml"), metaCSV)
		writeFile(t, filepath.Join(dir, "metadata", "annotations.yaml"), annotationsYAML("annotations", "etcd"))
		writeFile(t, filepath.Join(dir, "metadata", "00.yaml"), string(data))
		theirs := theirMetadata(dir)
		ours, fs := ourMetadata(dir)
		if (theirs.Err == "") != (ours.Err == "") || (theirs.Err == "" && !reflect.DeepEqual(theirs, ours)) {
			t.Fatalf("input %q\nopm:        %+v\ncatalogbot: %+v\nfindings: %v", data, theirs, ours, fs)
		}
	})
}
