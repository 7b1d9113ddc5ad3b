package bundle

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"
)

// RenderOnly leaves out the compressed-size rule and nothing else: a bundle over the bound loads with the
// same findings but bundle.size, and renders the same.
func TestLoadRenderOnly(t *testing.T) {
	m := goodBundle()
	rnd := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 1100<<10)
	for i := range noise {
		noise[i] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ+/"[rnd.IntN(64)]
	}
	m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "  version: 0.9.4\n", "  version: 0.9.4\n  icon: [{base64data: "+string(noise)+", mediatype: image/png}]\n", 1))}
	full, ffs, err := Load(context.Background(), m, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	lean, lfs, err := Load(context.Background(), m, Limits{RenderOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	sized := false
	for _, f := range ffs {
		if f.Rule == ruleBundleSize {
			sized = true
			continue
		}
		want = append(want, f.String())
	}
	var got []string
	for _, f := range lfs {
		got = append(got, f.String())
	}
	if !sized || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("size finding without RenderOnly: %v; findings with it:\n%s\nwant:\n%s", sized, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	a, err := Render(full, "quay.io/acme/etcd-bundle:v1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(lean, "quay.io/acme/etcd-bundle:v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Properties) != len(b.Properties) {
		t.Errorf("renders differ: %d and %d properties", len(a.Properties), len(b.Properties))
	}
}

// After Migrate, the manifests' olm.bundle.object values are unreachable: not left in the properties'
// backing array, where they would keep every manifest's base64 alive as long as the blob.
func TestMigrateDropsObjects(t *testing.T) {
	b, _ := load(t, goodBundle())
	r, err := Render(b, "quay.io/acme/etcd-bundle:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(r, b, "bundle-object-to-csv-metadata"); err != nil {
		t.Fatal(err)
	}
	for i, p := range r.Properties[:cap(r.Properties)] {
		if p.Type == "olm.bundle.object" || (i >= len(r.Properties) && p.Value != nil) {
			t.Errorf("property %d of the array (length %d) still holds %s", i, len(r.Properties), p.Type)
		}
	}
}
