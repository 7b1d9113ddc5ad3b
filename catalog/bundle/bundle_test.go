package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
)

const goodAnnotations = `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: etcd
  operators.operatorframework.io.bundle.channels.v1: alpha,stable
  operators.operatorframework.io.bundle.channel.default.v1: stable
`

const goodCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: etcdoperator.v0.9.4
  annotations:
    alm-examples: '[{"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster", "metadata": {"name": "example"}}]'
spec:
  version: 0.9.4
  minKubeVersion: 1.25.0
  installModes:
    - {type: OwnNamespace, supported: true}
    - {type: AllNamespaces, supported: true}
  customresourcedefinitions:
    owned:
      - name: etcdclusters.etcd.database.coreos.com
        version: v1beta2
        kind: EtcdCluster
`

const goodCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: etcdclusters.etcd.database.coreos.com
spec:
  group: etcd.database.coreos.com
  names: {kind: EtcdCluster, plural: etcdclusters}
  scope: Namespaced
  versions:
    - name: v1beta2
      served: true
      storage: true
`

func goodBundle() fstest.MapFS {
	return fstest.MapFS{
		"metadata/annotations.yaml":   {Data: []byte(goodAnnotations)},
		"manifests/etcd.csv.yaml":     {Data: []byte(goodCSV)},
		"manifests/etcdclusters.yaml": {Data: []byte(goodCRD)},
	}
}

func load(t *testing.T, fsys fstest.MapFS) (*Bundle, []catalog.Finding) {
	t.Helper()
	b, fs, err := Load(context.Background(), fsys, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return b, fs
}

func TestLoadGoodBundle(t *testing.T) {
	b, fs := load(t, goodBundle())
	if len(fs) != 0 {
		t.Fatalf("findings = %v, want none", fs)
	}
	if b.Package != "etcd" || strings.Join(b.Channels, ",") != "alpha,stable" || b.DefaultChannel != "stable" {
		t.Errorf("package %q channels %q default %q", b.Package, b.Channels, b.DefaultChannel)
	}
	if b.CSV == nil || b.CSV.Name != "etcdoperator.v0.9.4" || len(b.CRDs) != 1 {
		t.Errorf("CSV %+v, %d CRDs", b.CSV, len(b.CRDs))
	}
	if p := b.AnnotationPos[AnnotationPackage]; p.File != "metadata/annotations.yaml" || p.Line != 5 {
		t.Errorf("package annotation at %v, want metadata/annotations.yaml:5", p)
	}
}

// Each broken bundle gives its rule at its place.
func TestLoadFindings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(fstest.MapFS)
		rule   string
		where  string // file:line
		substr string
	}{
		{"helm mediatype", func(m fstest.MapFS) {
			m["metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodAnnotations, "registry+v1", "helm", 1))}
		}, ruleMediaType, "metadata/annotations.yaml:2", "helm"},
		{"no package annotation", func(m fstest.MapFS) {
			m["metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodAnnotations, "  operators.operatorframework.io.bundle.package.v1: etcd\n", "", 1))}
		}, ruleAnnotationMissing, "metadata/annotations.yaml:1", "package"},
		{"empty channels", func(m fstest.MapFS) {
			m["metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodAnnotations, "alpha,stable", `""`, 1))}
		}, ruleAnnotationEmpty, "metadata/annotations.yaml:6", "channel"},
		{"two CSVs", func(m fstest.MapFS) {
			m["manifests/z.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "v0.9.4", "v0.9.5", 1))}
		}, ruleCSVCount, "manifests/z.csv.yaml:1", "second"},
		{"no CSV", func(m fstest.MapFS) { delete(m, "manifests/etcd.csv.yaml") }, ruleCSVCount, "manifests:0", "no ClusterServiceVersion"},
		{"owned CRD missing", func(m fstest.MapFS) { delete(m, "manifests/etcdclusters.yaml") }, ruleOwnedCRDMissing, "manifests/etcd.csv.yaml:15", "etcdclusters"},
		{"unsupported kind", func(m fstest.MapFS) {
			m["manifests/deploy.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")}
		}, ruleUnsupportedKind, "manifests/deploy.yaml:1", "Deployment"},
		{"two objects in a file", func(m fstest.MapFS) {
			m["manifests/etcdclusters.yaml"] = &fstest.MapFile{Data: []byte(goodCRD + "---\n" + goodCRD)}
		}, ruleManifestMulti, "manifests/etcdclusters.yaml:14", "only the first"},
		{"yaml syntax", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: [\n")}
		}, "load.yaml-syntax", "manifests/etcd.csv.yaml:", ""},
		{"version not semver", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "version: 0.9.4", "version: v0.9", 1))}
		}, ruleCSVVersion, "manifests/etcd.csv.yaml:8", "v0.9"},
		{"name not a DNS subdomain", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "name: etcdoperator.v0.9.4", "name: EtcdOperator_v0.9.4", 1))}
		}, ruleCSVName, "manifests/etcd.csv.yaml:4", "EtcdOperator"},
		{"install mode twice", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "{type: AllNamespaces, supported: true}", "{type: OwnNamespace, supported: false}", 1))}
		}, ruleCSVInstallRepeat, "manifests/etcd.csv.yaml:12", "twice"},
		{"alm-examples not JSON", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, `"kind": "EtcdCluster",`, `"kind": EtcdCluster,`, 1))}
		}, ruleCSVExamples, "manifests/etcd.csv.yaml:6", "not JSON"},
		{"example of an API not owned", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, `"kind": "EtcdCluster"`, `"kind": "EtcdBackup"`, 1))}
		}, ruleCSVExamples, "manifests/etcd.csv.yaml:6", "EtcdBackup"},
		{"minKubeVersion not semver", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "minKubeVersion: 1.25.0", "minKubeVersion: v1.25", 1))}
		}, ruleCSVMinKube, "manifests/etcd.csv.yaml:9", "v1.25"},
		{"skipRange that opm cannot parse", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  annotations:\n", "  annotations:\n    olm.skipRange: '^0.9.0'\n", 1))}
		}, ruleCSVSkipRange, "manifests/etcd.csv.yaml:6", "^0.9.0"},
		{"skipRange with a comma", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  annotations:\n", "  annotations:\n    olm.skipRange: '>=0.9.0, <0.9.4'\n", 1))}
		}, ruleCSVSkipRange, "manifests/etcd.csv.yaml:6", "does not parse"},
		{"skipRange admitting its own version", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  annotations:\n", "  annotations:\n    olm.skipRange: '>=0.9.0 <=0.9.4'\n", 1))}
		}, ruleCSVUpgradeEdge, "manifests/etcd.csv.yaml:6", "admits 0.9.4"},
		{"replaces itself", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  version: 0.9.4\n", "  version: 0.9.4\n  replaces: etcdoperator.v0.9.4\n", 1))}
		}, ruleCSVReplacesSelf, "manifests/etcd.csv.yaml:9", "itself"},
		{"replaces another operator", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  version: 0.9.4\n", "  version: 0.9.4\n  replaces: redis-operator.v0.9.2\n", 1))}
		}, ruleCSVUpgradeEdge, "manifests/etcd.csv.yaml:9", "another operator"},
		{"skips a higher version", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  version: 0.9.4\n", "  version: 0.9.4\n  skips: [etcdoperator.v0.9.2, etcdoperator.v1.0.0]\n", 1))}
		}, ruleCSVUpgradeEdge, "manifests/etcd.csv.yaml:9", "not lower"},
		{"CRD without a storage version", func(m fstest.MapFS) {
			m["manifests/etcdclusters.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCRD, "storage: true", "storage: false", 1))}
		}, ruleCRDStorage, "manifests/etcdclusters.yaml:10", "exactly one"},
		{"related image in upper case", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  version: 0.9.4\n", "  version: 0.9.4\n  relatedImages:\n  - {name: op, image: quay.io/Acme/etcd:v1}\n", 1))}
		}, ruleRelatedImage, "manifests/etcd.csv.yaml:10", "invalid image pull spec"},
		{"related image empty", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  version: 0.9.4\n", "  version: 0.9.4\n  relatedImages:\n  - {name: op, image: ''}\n", 1))}
		}, ruleRelatedImage, "manifests/etcd.csv.yaml:10", "empty image"},
		{"release without a release-versioned name", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  version: 0.9.4\n", "  version: 0.9.4\n  release: '2'\n", 1))}
		}, ruleReleaseName, "manifests/etcd.csv.yaml:9", "etcd-v0.9.4-2"},
		{"version a number", func(m fstest.MapFS) {
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "version: 0.9.4", "version: 0.9", 1))}
		}, ruleCSVVersionType, "manifests/etcd.csv.yaml:8", "number"},
		{"bundle over 1 MiB compressed", func(m fstest.MapFS) {
			rnd := rand.New(rand.NewPCG(1, 2))
			noise := make([]byte, 1100<<10)
			for i := range noise {
				noise[i] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ+/"[rnd.IntN(64)]
			}
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  version: 0.9.4\n", "  version: 0.9.4\n  icon: [{base64data: "+string(noise)+", mediatype: image/png}]\n", 1))}
		}, ruleBundleSize, "manifests/etcd.csv.yaml:1", "over OLM's bound"},
		{"unknown dependency", func(m fstest.MapFS) {
			m["metadata/dependencies.yaml"] = &fstest.MapFile{Data: []byte("dependencies:\n  - type: olm.gvk\n    value: {group: a, kind: B, version: v1}\n  - type: olm.magic\n    value: 1\n")}
		}, ruleDependencyType, "metadata/dependencies.yaml:4", "olm.magic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := goodBundle()
			tc.edit(m)
			_, fs := load(t, m)
			var got []string
			found := false
			for _, f := range fs {
				where := f.File + ":" + itoa(f.Line)
				got = append(got, f.Rule+" "+where+" "+f.Message)
				if f.Rule == tc.rule && strings.HasPrefix(where, tc.where) && strings.Contains(f.Message, tc.substr) {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s at %s mentioning %q; findings:\n%s", tc.rule, tc.where, tc.substr, strings.Join(got, "\n"))
			}
		})
	}
	if _, _, err := Load(context.Background(), fstest.MapFS{"README.md": {Data: []byte("x")}}, Limits{}); err != ErrNotABundle {
		t.Errorf("Load(no bundle) error = %v, want ErrNotABundle", err)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestLoadRealBundles reads every bundle directory of the shared test data (the community repository's, as
// published): each loads, and every finding names its rule, file and line. Twelve of them break rules of the
// operator-sdk validators (published before those rules); test/opmdiff's TestBundleVerdictsMatchTheAPIValidators
// checks that catalogbot gives the validators' verdict on each.
func TestLoadRealBundles(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skipf("the shared test data is absent (%s); real bundles not read", root)
	}
	sort.Strings(anns)
	bad := 0
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		b, fs, err := Load(context.Background(), os.DirFS(dir), Limits{})
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		invalid := false
		for _, f := range fs {
			if f.Rule == "" || f.File == "" || f.Line == 0 {
				t.Errorf("%s: finding without rule, file or line: %+v", dir, f)
			}
			invalid = invalid || f.Severity == catalog.SeverityError
		}
		if invalid {
			bad++
		}
		if b.CSV == nil || b.Package == "" {
			t.Errorf("%s: no CSV or package", dir)
		}
	}
	t.Logf("%d bundle directories read, %d invalid", len(anns), bad)
	if bad != 12 {
		t.Errorf("%d invalid bundle directories, want the 12 the api validators refuse", bad)
	}
}

// FuzzLoad: any annotations and CSV bytes give findings with a file and a line, never a panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(goodAnnotations), []byte(goodCSV))
	f.Add([]byte("annotations: [1, 2]\n"), []byte("kind: ClusterServiceVersion\n"))
	f.Add([]byte("{}"), []byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, ann, csv []byte) {
		m := goodBundle()
		m["metadata/annotations.yaml"] = &fstest.MapFile{Data: ann}
		m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: csv}
		b, fs, err := Load(context.Background(), m, Limits{Parse: catalog.Limits{MaxDepth: 50, MaxAliasExpansion: 1000}})
		if err != nil {
			t.Fatalf("Load error %v for a bundle that is there", err)
		}
		for _, fd := range fs {
			if fd.Rule == "" || fd.File == "" || fd.Message == "" {
				t.Fatalf("finding lacks rule, file or message: %#v", fd)
			}
		}
		// A bundle that loads clean renders and migrates without a panic; errors are fine, a half-done
		// migration is not.
		if catalog.HasErrors(fs) || b == nil {
			return
		}
		r, err := Render(b, "quay.io/acme/etcd-bundle:v1")
		if err != nil {
			return
		}
		for _, p := range r.Properties {
			if p.Type == "olm.csv.metadata" {
				return // declared by the bundle: opm (and Migrate) leave the blob alone
			}
		}
		if err := Migrate(r, b, "bundle-object-to-csv-metadata"); err != nil {
			return
		}
		meta := 0
		for _, p := range r.Properties {
			switch p.Type {
			case "olm.bundle.object":
				t.Fatalf("olm.bundle.object left after the migration: %+v", r.Properties)
			case "olm.csv.metadata":
				meta++
				if !json.Valid(p.Value) {
					t.Fatalf("olm.csv.metadata is not JSON: %s", p.Value)
				}
			}
		}
		if meta != 1 {
			t.Fatalf("%d olm.csv.metadata after the migration", meta)
		}
	})
}

// TestRenderMatchesOpm renders every bundle of the shared test data and compares it with what opm v1.60.0
// rendered of the same directory (testdata/bundle-render, recorded by scripts/record-bundle-render): same
// name, package, properties in the same order, and the same related images (opm lists the operator's
// container images from a set, in no fixed order, so those compare as a set).
func TestRenderMatchesOpm(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	goldens, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "bundle-render", "opm-v1.60.0", "*", "*.json"))
	if _, err := os.Stat(root); err != nil || len(goldens) == 0 {
		t.Skipf("the shared test data (%s) or the goldens are absent", root)
	}
	for _, g := range goldens {
		pkg, ver := filepath.Base(filepath.Dir(g)), strings.TrimSuffix(filepath.Base(g), ".json")
		b, _, err := Load(context.Background(), os.DirFS(filepath.Join(root, pkg, ver)), Limits{})
		if err != nil {
			t.Errorf("%s/%s: %v", pkg, ver, err)
			continue
		}
		r, err := Render(b, "<image>")
		if err != nil {
			t.Errorf("%s/%s: Render: %v", pkg, ver, err)
			continue
		}
		raw, _ := json.Marshal(r)
		var got, want map[string]any
		json.Unmarshal(raw, &got)
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(data, &want)
		hashObjects(got)
		gotRI, wantRI := relatedSet(got), relatedSet(want)
		delete(got, "relatedImages")
		delete(want, "relatedImages")
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.MarshalIndent(got, "", "  ")
			t.Errorf("%s/%s differs from opm's render:\ngot  %s\nwant %s", pkg, ver, clip(string(gj)), clip(string(data)))
		}
		if !reflect.DeepEqual(gotRI, wantRI) {
			t.Errorf("%s/%s related images = %v, opm's %v", pkg, ver, gotRI, wantRI)
		}
	}
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

func hashObjects(blob map[string]any) {
	props, _ := blob["properties"].([]any)
	for _, p := range props {
		m, _ := p.(map[string]any)
		if m["type"] != "olm.bundle.object" {
			continue
		}
		v, _ := m["value"].(map[string]any)
		if d, ok := v["data"].(string); ok {
			sum := sha256.Sum256([]byte(d))
			v["data"] = "sha256:" + hex.EncodeToString(sum[:])
		}
	}
}

func relatedSet(blob map[string]any) []string {
	var out []string
	ris, _ := blob["relatedImages"].([]any)
	for _, ri := range ris {
		m, _ := ri.(map[string]any)
		out = append(out, fmt.Sprint(m["name"])+"="+fmt.Sprint(m["image"]))
	}
	sort.Strings(out)
	return out
}

// BenchmarkLoadAndRenderRealBundles reads, validates and renders every bundle of the shared test data, or of
// the tree $CATALOGBOT_BUNDLES names (scripts/bench-bundles.sh compares with the reference tools on the same
// bundles).
func BenchmarkLoadAndRenderRealBundles(b *testing.B) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	if r := os.Getenv("CATALOGBOT_BUNDLES"); r != "" {
		root = r
	}
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		b.Skip("the shared test data is absent")
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range anns {
			dir := filepath.Dir(filepath.Dir(a))
			bnd, _, err := Load(context.Background(), os.DirFS(dir), Limits{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Render(bnd, "x.example.com/b:v1"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/float64(len(anns)), "ms/bundle")
}

// TestRenderCSVMetadataMatchesOpm compares Render + Migrate("bundle-object-to-csv-metadata") with what
// opm v1.60.0 `render --migrate-level bundle-object-to-csv-metadata` made of every bundle of the shared
// test data (goldens: testdata/bundle-render/opm-v1.60.0-csv-metadata, the olm.csv.metadata value as the
// sha256 of its compact JSON, so the comparison is byte for byte).
func TestRenderCSVMetadataMatchesOpm(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	goldens, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "bundle-render", "opm-v1.60.0-csv-metadata", "*", "*.json"))
	if _, err := os.Stat(root); err != nil || len(goldens) == 0 {
		t.Skipf("the shared test data (%s) or the goldens are absent", root)
	}
	for _, g := range goldens {
		pkg, ver := filepath.Base(filepath.Dir(g)), strings.TrimSuffix(filepath.Base(g), ".json")
		b, _, err := Load(context.Background(), os.DirFS(filepath.Join(root, pkg, ver)), Limits{})
		if err != nil {
			t.Errorf("%s/%s: %v", pkg, ver, err)
			continue
		}
		r, err := Render(b, "<image>")
		if err != nil {
			t.Errorf("%s/%s: Render: %v", pkg, ver, err)
			continue
		}
		if err := Migrate(r, b, "bundle-object-to-csv-metadata"); err != nil {
			t.Errorf("%s/%s: Migrate: %v", pkg, ver, err)
			continue
		}
		n := 0
		for i, p := range r.Properties {
			if p.Type == "olm.csv.metadata" {
				sum := sha256.Sum256(p.Value)
				r.Properties[i].Value, _ = json.Marshal("sha256:" + hex.EncodeToString(sum[:]))
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s/%s: %d olm.csv.metadata properties, want 1", pkg, ver, n)
		}
		raw, _ := json.Marshal(r)
		var got, want map[string]any
		json.Unmarshal(raw, &got)
		data, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(data, &want)
		gotRI, wantRI := relatedSet(got), relatedSet(want)
		delete(got, "relatedImages")
		delete(want, "relatedImages")
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.MarshalIndent(got, "", "  ")
			t.Errorf("%s/%s differs from opm's render --migrate-level bundle-object-to-csv-metadata:\ngot  %s\nwant %s", pkg, ver, clip(string(gj)), clip(string(data)))
		}
		if !reflect.DeepEqual(gotRI, wantRI) {
			t.Errorf("%s/%s related images = %v, opm's %v", pkg, ver, gotRI, wantRI)
		}
	}
}

func TestMigrateUnknownLevel(t *testing.T) {
	if err := Migrate(&Rendered{}, &Bundle{}, "everything"); err == nil || !strings.Contains(err.Error(), "bundle-object-to-csv-metadata") {
		t.Fatalf("Migrate with an unknown level: %v, want an error naming the known levels", err)
	}
}

// TestBundleSizeCountsTheWholeDirectory: the compressed size counts every file of the bundle directory, as
// operator-framework/api's loader does (a regression case: catalogbot once counted only manifests/ and
// metadata/), never follows a link, and says when it could not count rather than passing.
func TestBundleSizeCountsTheWholeDirectory(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 1100<<10)
	for i := range noise {
		noise[i] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ+/"[rnd.IntN(64)]
	}
	sizeFindings := func(fs []catalog.Finding) []catalog.Finding {
		var out []catalog.Finding
		for _, f := range fs {
			if f.Rule == ruleBundleSize {
				out = append(out, f)
			}
		}
		return out
	}
	for _, name := range []string{"tests/scorecard/noise.txt", ".git/objects/pack/x.pack", "bundle.Dockerfile", "manifests/.backup"} {
		m := goodBundle()
		m[name] = &fstest.MapFile{Data: noise}
		_, fs := load(t, m)
		got := sizeFindings(fs)
		if len(got) != 1 || got[0].Severity != catalog.SeverityError || !strings.Contains(got[0].Message, "over OLM's bound") || !strings.Contains(got[0].Message, name) || got[0].Position.String() != "manifests/etcd.csv.yaml:1:1" {
			t.Errorf("%s of %d noisy bytes: size findings %v, want one error at the CSV naming the file", name, len(noise), got)
		}
	}
	// Near the bound: a warning.
	m := goodBundle()
	m["tests/noise.txt"] = &fstest.MapFile{Data: noise[:950<<10]}
	_, fs := load(t, m)
	if got := sizeFindings(fs); len(got) != 1 || got[0].Severity != catalog.SeverityWarning || !strings.Contains(got[0].Message, "near OLM's bound") {
		t.Errorf("950 KiB of noise beside manifests/: %v, want one warning", got)
	}
	// Too many files to count: could not verify, a warning, not a pass.
	m = goodBundle()
	for i := range 20 {
		m[fmt.Sprintf("tests/f%02d", i)] = &fstest.MapFile{Data: []byte("x")}
	}
	_, fs, err := Load(context.Background(), m, Limits{MaxFiles: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := sizeFindings(fs); len(got) != 1 || got[0].Severity != catalog.SeverityWarning || !strings.Contains(got[0].Message, "not checked") {
		t.Errorf("20 files beside manifests/, bound 10: %v, want one could-not-check warning", got)
	}
	// A link beside manifests/ is not followed (operator-sdk would read through it; catalogbot never does).
	dir := t.TempDir()
	for name, f := range goodBundle() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(t.TempDir(), "noise")
	if err := os.WriteFile(outside, noise, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "noise")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	_, fs, err = Load(context.Background(), os.DirFS(dir), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sizeFindings(fs); len(got) != 0 {
		t.Errorf("a link to noise beside manifests/: %v, want it not followed", got)
	}
}
