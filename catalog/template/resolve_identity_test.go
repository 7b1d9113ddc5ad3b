package template

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
)

// A bundle directory is named by its bundle root's image pattern (by tag) or by that repository with the
// digest of its build, never by the digest alone; without a pattern nothing names it, unless the caller
// vouches for the references (AnyRepository).
func TestDirResolverRepositoryAndDigest(t *testing.T) {
	ctx := context.Background()
	ann := "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n"
	csv := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcd.v1.0.0\nspec:\n  version: 1.0.0\n"
	fsys := fstest.MapFS{
		"operators/etcd/1.0.0/metadata/annotations.yaml": {Data: []byte(ann)},
		"operators/etcd/1.0.0/manifests/etcd.csv.yaml":   {Data: []byte(csv)},
	}
	sub, _ := fsys.Sub("operators/etcd/1.0.0")
	dg, err := BundleImageDigest(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{"operators/etcd/1.0.0"}
	for _, tc := range []struct {
		pattern string
		any     bool
		ref     string
		want    bool
	}{
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io/acme/etcd-bundle@" + dg, true},
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io/acme/etcd-bundle:v1.0.0", true},
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io/acme/etcd-bundle:v1.0.0@" + dg, true},
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io/acme/etcd-bundle:latest@" + dg, true}, // the digest decides, in the repository
		{"quay.io/acme/{package}-bundle:v{version}", false, "QUAY.IO/acme/etcd-bundle@" + dg, true},        // hosts compare case-insensitively
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io/acme/etcd-bundle:v1.0.1", false},
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io/acme/etcd-bundle@sha256:" + strings.Repeat("0", 64), false},
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io/evil/etcd-bundle@" + dg, false},
		{"quay.io/acme/{package}-bundle:v{version}", false, "evil.example/acme/etcd-bundle@" + dg, false},
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io:443/acme/etcd-bundle@" + dg, false}, // another host to a registry client
		{"quay.io/acme/{package}-bundle:v{version}", false, "quay.io/acme/etcd-bundle/extra@" + dg, false},
		{"quay.io/acme/{package}-bundle:v{version}", false, "@" + dg, false},
		{"quay.io/acme/{package}-bundle:v{version}", true, "evil.example/acme/etcd-bundle@" + dg, true},
		{"docker.io/acme/{package}-bundle:v{version}", false, "index.docker.io/acme/etcd-bundle@" + dg, true}, // Docker Hub's aliases
		{"docker.io/acme/{package}-bundle:v{version}", false, "acme/etcd-bundle@" + dg, true},
		{"", false, "quay.io/acme/etcd-bundle@" + dg, false},
		{"", false, "quay.io/acme/etcd-bundle:v1.0.0", false},
		{"", true, "evil.example/acme/etcd-bundle@" + dg, true},
	} {
		d := NewDirResolver(fsys, dirs, tc.pattern, "none")
		if tc.any {
			d = d.AnyRepository()
		}
		dir, ok := d.DirOf(ctx, tc.ref)
		if ok != tc.want || ok && dir != dirs[0] {
			t.Errorf("pattern %q (any repository: %v): DirOf(%s) = %q, %v; want %v", tc.pattern, tc.any, tc.ref, dir, ok, tc.want)
		}
		if _, err := d.Resolve(ctx, tc.ref); (err == nil) != tc.want {
			t.Errorf("pattern %q: Resolve(%s) error %v, want resolved: %v", tc.pattern, tc.ref, err, tc.want)
		}
	}
}

// A template naming a bundle image by tag renders, offline, from the blob a committed catalog holds for that
// exact reference, with a template.tag-reference warning on the reference's line; the digest-only view does
// not take it; an image no catalog holds is reported with the catalog files searched.
func TestCatalogResolverTagReference(t *testing.T) {
	ctx := context.Background()
	cat := "---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\ndescription: the etcd operator\n---\nschema: olm.bundle\npackage: etcd\nname: etcd.v1.0.0\nimage: quay.io/acme/etcd-bundle:v1.0.0\n" +
		"properties:\n  - type: olm.package\n    value: {packageName: etcd, version: 1.0.0}\n"
	docs, fs := catalog.ParseFile("catalogs/v4.16/etcd/catalog.yaml", []byte(cat), catalog.Limits{})
	if len(fs) > 0 {
		t.Fatal(fs)
	}
	cr, _ := NewCatalogResolver("none")
	cr.Add(docs)
	tmpl := func(img string) *Template {
		src := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n" +
			"  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n      - name: etcd.v1.0.0\n  - schema: olm.bundle\n    image: " + img + "\n"
		tm, fs := Parse("t.yaml", []byte(src), catalog.Limits{})
		if tm == nil {
			t.Fatal(fs)
		}
		return tm
	}
	out, fs := Render(ctx, tmpl("quay.io/acme/etcd-bundle:v1.0.0"), Options{Resolver: Chain{cr, cr.ByTag()}})
	if out == nil {
		t.Fatalf("a tag the catalog holds verbatim does not render: %v", fs)
	}
	var warned bool
	for _, f := range fs {
		if f.Rule == ruleTagReference && f.Line == 12 && strings.Contains(f.Message, "catalogs/v4.16/etcd/catalog.yaml:7") && strings.Contains(f.Message, "by digest") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no template.tag-reference warning on line 12 naming the blob and suggesting a digest: %v", fs)
	}
	if out, _ := Render(ctx, tmpl("quay.io/acme/etcd-bundle:v1.0.0"), Options{Resolver: cr}); out != nil {
		t.Error("the digest-only view took a reference by tag")
	}
	if out, fs := Render(ctx, tmpl("quay.io/acme/etcd-bundle:v1.0.1"), Options{Resolver: Chain{cr, cr.ByTag()}}); out != nil ||
		!strings.Contains(fmt.Sprint(fs), "the image of no olm.bundle blob in the catalog file catalogs/v4.16/etcd/catalog.yaml") {
		t.Errorf("an unknown tag: %v, want the catalog files searched", fs)
	}
}

// failingFS fails every read under one directory, as a read budget exhausted does.
type failingFS struct {
	files fstest.MapFS // not embedded: fs.Sub must go through Open
	dir   string
}

func (f failingFS) Open(name string) (fs.File, error) {
	if strings.HasPrefix(name, f.dir+"/manifests/") {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("would exceed the total bytes budget")}
	}
	return f.files.Open(name)
}

// A bundle directory that cannot be read leaves the references that may name it unknown (ErrIncomplete, with
// the directory and the reason), not "not found"; references of other repositories stay not found.
func TestDirResolverIncomplete(t *testing.T) {
	ctx := context.Background()
	ann := "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n"
	m := fstest.MapFS{}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		m["operators/etcd/"+v+"/metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte(ann)}
		m["operators/etcd/"+v+"/manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcd.v" + v + "\nspec:\n  version: " + v + "\n")}
	}
	fsys := failingFS{files: m, dir: "operators/etcd/1.1.0"}
	d := NewDirResolver(fsys, []string{"operators/etcd/1.0.0", "operators/etcd/1.1.0"}, "quay.io/acme/{package}-bundle:v{version}", "none")
	if _, err := d.Resolve(ctx, "quay.io/acme/etcd-bundle:v1.0.0"); err != nil {
		t.Errorf("the readable directory: %v", err)
	}
	_, err := d.Resolve(ctx, "quay.io/acme/etcd-bundle:v1.1.0")
	if !errors.Is(err, ErrIncomplete) || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "operators/etcd/1.1.0") || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a reference the unreadable directory may hold: %v; want ErrIncomplete naming the directory and the reason", err)
	}
	if _, err := d.Resolve(ctx, "quay.io/other/thing:v1.1.0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a reference of another repository: %v; want not found", err)
	}
}
