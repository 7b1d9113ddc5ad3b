package change

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"testing/fstest"
)

// blobFS names each file's content, as a git tree does.
type blobFS struct{ fstest.MapFS }

func (b blobFS) ContentKey(name string) (string, bool) {
	f, ok := b.MapFS[name]
	if !ok {
		return "", false
	}
	sum := sha256.Sum256(f.Data)
	return "blob:" + hex.EncodeToString(sum[:]), true
}

// Catalog files of one content are parsed once and shared, each under its own name; a missing file is not
// read; another content is parsed on its own.
func TestBaseDocsShareContent(t *testing.T) {
	cat := "---\nschema: olm.package\nname: etcd\n---\nschema: olm.bundle\npackage: etcd\nname: etcd.v1.0.0\nimage: quay.io/acme/etcd@sha256:" + "0000000000000000000000000000000000000000000000000000000000000000\n"
	fsys := blobFS{fstest.MapFS{
		"catalogs/v4.17/etcd/catalog.yaml": {Data: []byte(cat)},
		"catalogs/v4.18/etcd/catalog.yaml": {Data: []byte(cat)},
		"catalogs/v4.19/etcd/catalog.yaml": {Data: []byte(cat + "---\nschema: olm.channel\npackage: etcd\nname: stable\nentries: [{name: etcd.v1.0.0}]\n")},
	}}
	pr := &PullRequest{Base: Revision{SHA: "base", FS: fsys}}
	b := newBaseDocs()
	a, ok := b.DocsOf(pr, "catalogs/v4.17/etcd/catalog.yaml")
	c, ok2 := b.DocsOf(pr, "catalogs/v4.18/etcd/catalog.yaml")
	d, ok3 := b.DocsOf(pr, "catalogs/v4.19/etcd/catalog.yaml")
	if !ok || !ok2 || !ok3 || len(a) != 2 || len(c) != 2 || len(d) != 3 {
		t.Fatalf("docs: %d %v, %d %v, %d %v", len(a), ok, len(c), ok2, len(d), ok3)
	}
	if len(b.byKey) != 2 {
		t.Errorf("%d contents parsed, want 2", len(b.byKey))
	}
	for i := range a {
		if a[i].Pos.File != "catalogs/v4.17/etcd/catalog.yaml" || c[i].Pos.File != "catalogs/v4.18/etcd/catalog.yaml" || a[i].Pos.Line != c[i].Pos.Line {
			t.Errorf("doc %d: %v and %v", i, a[i].Pos, c[i].Pos)
		}
	}
	if again, _ := b.DocsOf(pr, "catalogs/v4.18/etcd/catalog.yaml"); &again[0] != &c[0] {
		t.Error("a name read twice was not kept")
	}
	if docs, ok := b.DocsOf(pr, "catalogs/v4.20/etcd/catalog.yaml"); ok || docs != nil || b.ErrOf("catalogs/v4.20/etcd/catalog.yaml") != nil {
		t.Errorf("a missing catalog: %v, %v, %v", docs, ok, b.ErrOf("catalogs/v4.20/etcd/catalog.yaml"))
	}
}
