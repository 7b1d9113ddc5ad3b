package template

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/catalog/bundle"
)

// checkDirectYAML: when directYAML writes a blob, it writes what sigs.k8s.io/yaml (opm's converter) writes.
func checkDirectYAML(t *testing.T, js []byte) bool {
	t.Helper()
	got, ok := directYAML(js)
	if !ok {
		return false
	}
	want, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatalf("directYAML(%.300q) wrote a blob sigs.k8s.io/yaml refuses: %v", js, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("directYAML(%.300q):\n%s\nsigs.k8s.io/yaml:\n%s", js, got, want)
	}
	return true
}

var directYAMLSeeds = []string{
	`{}`, `{"a":{}}`, `{"a":[]}`, `{"a":[{}],"b":[[]]}`, `{"b":1,"a":"x","c":null,"d":true,"e":false}`,
	`{"schema":"olm.bundle","name":"etcd.v0.9.4","image":"quay.io/x/etcd@sha256:0123","properties":[{"type":"olm.gvk","value":{"group":"etcd.database.coreos.com","kind":"EtcdCluster","version":"v1beta2"}},{"type":"olm.package","value":{"packageName":"etcd","version":"0.9.4"}}]}`,
	`{"a":[[1,2],[[3]],{"b":[4,{"c":5}]}],"z":{"y":{"x":[]}}}`,
	`{"a10":1,"a9":2,"a":3,"A":4,"_":5,"a0":6,"a00":7,"b1c":8,"b01c":9}`,
	`{"v":"1.2.3","w":"1.2","x":"0.1.0-rc.1","y":"1.2.3+b:1","z":"y","Y":"Yes","on":"On","n":"null","t":"True"}`,
	`{"a":"-x","b":"/x","c":"x:","d":"x:y","e":"@x","f":"x@y","g":"~","h":"a~b","i":"1e3","j":"0x1F","k":"1:20"}`,
	`{"n":[0,-1,10,-10,123456789012345,1234567890123456,01,-0,1.5,1e3]}`,
	`{"a":"","b":[""],"c":"` + strings.Repeat("QUJD", 200) + `"}`,
	`{"a":"x y","b":"x\ny","c":"é","d":"x\"y"}`,
	`{"a":"127.0.0.1:5000/b/x@sha256:00","b":"1/2","c":"1.2/3"}`,
	`{"a":1,"a":2}`, ` {"a" : [ 1 , 2 ] } `, `[1]`, `"x"`, `{"a":1}x`,
}

func TestDirectYAMLSeeds(t *testing.T) {
	wrote := 0
	for _, s := range directYAMLSeeds {
		if checkDirectYAML(t, []byte(s)) {
			wrote++
		}
	}
	if wrote < 8 {
		t.Errorf("directYAML wrote %d seeds directly; the fast path is not taken", wrote)
	}
}

// TestDirectYAMLRenderedBlobs: every blob of the rendered goldens under testdata (JSON and YAML files),
// converted back to compact JSON, goes through both.
func TestDirectYAMLRenderedBlobs(t *testing.T) {
	n, direct := 0, 0
	_ = filepath.WalkDir("testdata", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || n >= 3000 {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || len(data) > 8<<20 {
			return nil
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			js, err := yaml.YAMLToJSON(doc)
			if err != nil || !bytes.HasPrefix(js, []byte("{")) {
				continue
			}
			var buf bytes.Buffer
			if json.Compact(&buf, js) != nil {
				continue
			}
			n++
			if checkDirectYAML(t, buf.Bytes()) {
				direct++
			}
		}
		return nil
	})
	t.Logf("%d blobs compared, %d written directly", n, direct)
	if n > 0 && direct == 0 {
		t.Error("no rendered blob took the direct path")
	}
}

// TestDirectYAMLRealBundles: the olm.bundle blob of every bundle of the shared test data, the bulk of a
// rendered catalog, at both migrate levels.
func TestDirectYAMLRealBundles(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skip("the shared test data (../shared/testdata/bundles) is absent")
	}
	n, direct, plain := 0, 0, 0
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		b, _, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
		if err != nil {
			continue
		}
		for _, level := range bundle.MigrateLevels {
			r, err := bundle.Render(b, "quay.io/example/"+filepath.Base(filepath.Dir(dir))+":v"+filepath.Base(dir))
			if err == nil {
				err = bundle.Migrate(r, b, level)
			}
			if err != nil {
				continue
			}
			js, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if checkDirectYAML(t, js) {
				direct++
				if level == "none" {
					plain++
				}
			}
		}
	}
	// olm.csv.metadata holds the CSV's description (spaces, line breaks): those blobs go the slow way.
	t.Logf("%d rendered bundles compared, %d written directly (%d of %d without migration)", n, direct, plain, len(anns))
	if plain < len(anns)/2 {
		t.Errorf("only %d of %d rendered bundles without migration took the direct path", plain, len(anns))
	}
}

func FuzzDirectYAML(f *testing.F) {
	for _, s := range directYAMLSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		checkDirectYAML(t, js)
	})
}

// BenchmarkRenderedBundleYAML converts the olm.bundle blobs of the shared test data's bundles to YAML, directly
// and through the library.
func BenchmarkRenderedBundleYAML(b *testing.B) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		b.Skip("the shared test data (../shared/testdata/bundles) is absent")
	}
	var blobs [][]byte
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		bnd, _, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
		if err != nil {
			continue
		}
		if r, err := bundle.Render(bnd, "quay.io/example/b:v1"); err == nil {
			js, _ := json.Marshal(r)
			blobs = append(blobs, js)
		}
	}
	for _, c := range []struct {
		name string
		conv func([]byte) ([]byte, error)
	}{{"direct", jsonToYAML}, {"library", jsonToYAMLLibrary}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, js := range blobs {
					if _, err := c.conv(js); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
