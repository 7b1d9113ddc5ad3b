package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// encodeRendered is how the rendered blob was written before AppendJSON: encoding/json's indenting encoder.
func encodeRendered(r *Rendered, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", indent)
	enc.SetEscapeHTML(false)
	err := enc.Encode(r)
	return buf.Bytes(), err
}

func checkRenderedJSON(t *testing.T, r *Rendered) {
	t.Helper()
	for _, indent := range []string{"    ", "  "} {
		want, werr := encodeRendered(r, indent)
		got, gerr := r.AppendJSON([]byte("x"), indent)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("AppendJSON: error %v, encoding/json's %v (%+v)", gerr, werr, r)
		}
		if werr != nil {
			if string(got) != "x" {
				t.Fatalf("AppendJSON failed but wrote %q", got)
			}
			continue
		}
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("AppendJSON:\n%s\nencoding/json:\n%s", got[1:], want)
		}
	}
}

// TestRenderedJSONRealBundles writes every bundle of the shared test data both ways (both migrate levels).
func TestRenderedJSONRealBundles(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skip("the shared test data (../shared/testdata/bundles) is absent")
	}
	n := 0
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		b, _, err := Load(context.Background(), os.DirFS(dir), Limits{})
		if err != nil {
			continue
		}
		for _, level := range MigrateLevels {
			r, err := Render(b, "quay.io/example/bundle:v1")
			if err == nil {
				err = Migrate(r, b, level)
			}
			if err != nil {
				continue
			}
			checkRenderedJSON(t, r)
			n++
		}
	}
	if n < 100 {
		t.Errorf("only %d renders compared", n)
	}
}

// FuzzRenderedJSON compares AppendJSON with encoding/json on blobs of arbitrary strings and property values.
func FuzzRenderedJSON(f *testing.F) {
	f.Add("olm.bundle", "etcd.v0.9.4", "etcd", "quay.io/x/y@sha256:00", "olm.gvk", []byte(`{"group":"a","kind":"B","version":"v1"}`), "olm.bundle.object", []byte(`{"data":"QUJD"}`), "img", "q.io/a:b", uint8(3))
	f.Add("<&>", "é\u2028", "\x00\"\\", "\xff", "t", []byte(` [ 1, {"a" : [] , "b":{}}, "x\u00e9" ] `), "", []byte(`nope`), "", "", uint8(0))
	f.Add("", "", "", "", "", []byte(nil), "", []byte{}, "", "", uint8(1))
	f.Fuzz(func(t *testing.T, schema, name, pkg, image, t1 string, v1 []byte, t2 string, v2 []byte, riName, riImage string, shape uint8) {
		r := &Rendered{Schema: schema, Name: name, Package: pkg, Image: image}
		switch shape % 4 {
		case 1:
			r.Properties = []Property{}
		case 2, 3:
			r.Properties = []Property{{Type: t1, Value: v1}, {Type: t2, Value: v2}}
		}
		if shape&4 != 0 {
			r.RelatedImages = []RelatedImage{{Name: riName, Image: riImage}, {Name: riImage, Image: riName}}
		} else if shape&8 != 0 {
			r.RelatedImages = []RelatedImage{}
		}
		checkRenderedJSON(t, r)
	})
}
