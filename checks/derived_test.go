package checks_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
	cbundle "github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/catalog/template/authoring"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
)

const derivedAnnotations = "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n"

func derivedBundle(fsys fstest.MapFS, version, replaces string) {
	dir := "operators/etcd/" + version + "/"
	fsys[dir+"metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte(derivedAnnotations)}
	csv := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcd.v" + version + "\nspec:\n  version: " + version + "\n"
	if replaces != "" {
		csv += "  replaces: " + replaces + "\n"
	}
	fsys[dir+"manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(csv)}
}

func digestOf(t *testing.T, fsys fstest.MapFS, dir string) string {
	t.Helper()
	sub, _ := fsys.Sub(dir)
	d, err := template.BundleImageDigest(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Only a pull request whose every change the merged bundles explain is a derived catalog update.
func TestDerived(t *testing.T) {
	ctx := context.Background()
	base := fstest.MapFS{}
	derivedBundle(base, "1.0.0", "")
	derivedBundle(base, "1.1.0", "etcd.v1.0.0")
	img1 := "quay.io/acme/etcd-bundle@" + digestOf(t, base, "operators/etcd/1.0.0")
	img2 := "quay.io/acme/etcd-bundle@" + digestOf(t, base, "operators/etcd/1.1.0")
	const tmplPath, catPath = "templates/etcd.yaml", "catalogs/etcd/catalog.yaml"
	tmpl := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n      - name: etcd.v1.0.0\n  - schema: olm.bundle\n    image: " + img1 + "\n"
	pol := policy.Default()
	pol.Catalogs = []policy.Catalog{{Path: "catalogs"}}
	pol.Bundles = []policy.BundleRoot{{Path: "operators", Image: "quay.io/acme/{package}-bundle:v{version}"}}
	pol.Templates = []policy.Template{{Path: tmplPath, Catalogs: []policy.TemplateCatalog{{Path: catPath, MigrateLevel: "none"}}}}
	pt := pkgtemplate.PackageTemplate{Template: tmplPath, Catalogs: pol.Templates[0].Catalogs}
	render := func(fsys fstest.MapFS, src string) string {
		out, fs := pkgtemplate.Render(ctx, fsys, pol, pt, "etcd", []byte(src), catalog.Limits{})
		if out == nil {
			t.Fatal(fs)
		}
		return string(out[catPath])
	}
	base[tmplPath] = &fstest.MapFile{Data: []byte(tmpl)}
	base[catPath] = &fstest.MapFile{Data: []byte(render(base, tmpl))}
	b2, _, _ := cbundle.Load(ctx, mustSub(base, "operators/etcd/1.1.0"), cbundle.Limits{})
	add, err := authoring.AdditionOf(b2, img2)
	if err != nil {
		t.Fatal(err)
	}
	next, err := authoring.AddBundle([]byte(tmpl), add)
	if err != nil {
		t.Fatal(err)
	}
	headOf := func(tmplBody, catBody string) fstest.MapFS {
		h := fstest.MapFS{}
		for k, v := range base {
			h[k] = v
		}
		h[tmplPath] = &fstest.MapFile{Data: []byte(tmplBody)}
		h[catPath] = &fstest.MapFile{Data: []byte(catBody)}
		return h
	}
	good := render(base, string(next))
	elsewhere := strings.Replace(img2, "quay.io/acme/etcd-bundle", "evil.example/acme/etcd-bundle", 1)
	app := &recordedProvenance{made: "etcd", recorded: map[string]string{img2: "operators/etcd/1.1.0", elsewhere: "operators/etcd/1.1.0"}}
	for _, tc := range []struct {
		name     string
		head     fstest.MapFS
		derived  bool
		withFile string
		prov     checks.Provenance
	}{
		{"the bundle added, the catalog rendered", headOf(string(next), good), true, "", app},
		{"and the package's default channel changed too", headOf(strings.Replace(string(next), "defaultChannel: stable", "defaultChannel: beta", 1), good), false, "", app},
		{"the catalog edited by hand", headOf(string(next), strings.Replace(good, "replaces: etcd.v1.0.0", "skipRange: <1.1.0", 1)), false, "", app},
		{"an image no base directory builds", headOf(strings.Replace(string(next), img2, "quay.io/acme/etcd-bundle@sha256:"+strings.Repeat("0", 64), 1), good), false, "", app},
		{"another file changed", headOf(string(next), good), false, "README.md", app},
		// The same content, but nothing says the App made it (the CLI), or the App says it did not.
		{"no provenance", headOf(string(next), good), false, "", nil},
		{"not the App's pull request", headOf(string(next), good), false, "", &recordedProvenance{made: "other", recorded: app.recorded}},
		{"a bundle the App never recorded", headOf(string(next), good), false, "", &recordedProvenance{made: "etcd"}},
		{"recorded from another directory", headOf(string(next), good), false, "", &recordedProvenance{made: "etcd", recorded: map[string]string{img2: "operators/etcd/1.0.0"}}},
		// The digest of the directory's build, in a repository that is not the bundle root's image: not that
		// directory, so not derived (and the catalog rendered from it is not what the template renders either).
		{"the directory's digest in another repository", headOf(strings.ReplaceAll(string(next), img2, elsewhere), strings.ReplaceAll(good, img2, elsewhere)), false, "", app},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := []checks.FileChange{{Path: tmplPath, Status: checks.FileModified}, {Path: catPath, Status: checks.FileModified}}
			if tc.withFile != "" {
				tc.head[tc.withFile] = &fstest.MapFile{Data: []byte("x\n")}
				files = append(files, checks.FileChange{Path: tc.withFile, Status: checks.FileAdded})
			}
			pr := &checks.PullRequest{Author: "catalogbot[bot]", Policy: pol, Base: checks.Revision{SHA: "b", FS: base}, Head: checks.Revision{SHA: "h", FS: tc.head}, Files: files, Provenance: tc.prov}
			if err := checks.Prepare(ctx, pr); err != nil {
				t.Fatal(err)
			}
			d := checks.Derived(ctx, pr)
			if (d != nil) != tc.derived {
				t.Fatalf("derived = %v (%s), want %v", d, checks.NotDerivedReason(pr), tc.derived)
			}
			res, err := checks.Ownership{}.Run(ctx, pr)
			if err != nil {
				t.Fatal(err)
			}
			if tc.derived && res.Conclusion != checks.Success || !tc.derived && res.Conclusion == checks.Success {
				t.Errorf("ownership %s %q", res.Conclusion, res.Title)
			}
		})
	}
}

func mustSub(fsys fstest.MapFS, dir string) fstest.MapFS {
	out := fstest.MapFS{}
	for k, v := range fsys {
		if rest, ok := strings.CutPrefix(k, dir+"/"); ok {
			out[rest] = v
		}
	}
	return out
}

// recordedProvenance stands for the App's records: the package whose catalog update it made, and the
// bundle images its build recorded (image → directory).
type recordedProvenance struct {
	made     string
	recorded map[string]string
}

func (p *recordedProvenance) MadeUpdate(_ context.Context, pkg string) (bool, string) {
	return pkg == p.made, "not the App's catalog update of " + pkg
}

func (p *recordedProvenance) BundleRecorded(_ context.Context, _, _, image, dir string) (bool, string) {
	d, ok := p.recorded[image]
	return ok && d == dir, image + " was not recorded"
}
