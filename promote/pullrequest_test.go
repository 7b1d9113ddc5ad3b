package promote

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/policy"
)

// sampleRepo is the sample repository of testdata/promote as a MapFS, to change freely.
func sampleRepo(t *testing.T) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	root := os.DirFS("../testdata/promote")
	err := fsWalk(root, func(name string, data []byte) { out[name] = &fstest.MapFile{Data: data, Mode: 0o644} })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBranchNames(t *testing.T) {
	b := Branch("v4.23", "acme-operator")
	if b != "catalogbot/promote/v4.23/acme-operator" {
		t.Fatal(b)
	}
	if to, pkg, ok := ParseBranch(b); !ok || to != "v4.23" || pkg != "acme-operator" {
		t.Errorf("ParseBranch(%s) = %s %s %v", b, to, pkg, ok)
	}
	for _, bad := range []string{"catalogbot/promote/v4.23", "catalogbot/catalog-update/x", "catalogbot/promote/../x/y", "catalogbot/promote/v4.23/a/b", "catalogbot/promote/v4.23/A"} {
		if _, _, ok := ParseBranch(bad); ok {
			t.Errorf("ParseBranch(%s) accepted", bad)
		}
	}
	if Label(Always) != "catalog-promotion/always" || Label(ReviewNeeded) != "catalog-promotion/review-needed" {
		t.Error(Label(Always), Label(ReviewNeeded))
	}
}

// TestVerify: the promotion computed on the base and applied is verified; one byte more, a file more, a file
// of another package or a package that is not promoted are not.
func TestVerify(t *testing.T) {
	ctx := context.Background()
	base := sampleRepo(t)
	pol, err := policy.Parse(".catalogbot.yaml", base[".catalogbot.yaml"].Data)
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{From: "v4.22", To: "v4.23"}
	plan, err := Compute(ctx, base, pol, opt)
	if err != nil {
		t.Fatal(err)
	}
	var acme *Package
	for i := range plan.Packages {
		if plan.Packages[i].Name == "acme-operator" {
			acme = &plan.Packages[i]
		}
	}
	if acme == nil || acme.Outcome != Promoted || acme.Strategy != Always {
		t.Fatalf("acme-operator: %+v", acme)
	}
	apply := func(files []File) (fstest.MapFS, []string) {
		head := fstest.MapFS{}
		for k, v := range base {
			head[k] = v
		}
		var changed []string
		for _, f := range files {
			head[f.Path] = &fstest.MapFile{Data: f.Data, Mode: 0o644}
			changed = append(changed, f.Path)
		}
		return head, changed
	}
	head, changed := apply(acme.Files)
	if pk, why := Verify(ctx, base, head, pol, opt, "acme-operator", changed); pk == nil || pk.Strategy != Always {
		t.Errorf("the promotion itself: %s", why)
	}
	body := Body(plan, acme)
	for _, want := range []string{"merges once its checks pass", "operators/acme-operator/ci.yaml", "rendered from the template"} {
		if !strings.Contains(body, want) {
			t.Errorf("the body lacks %q:\n%s", want, body)
		}
	}
	// One byte more in the catalog.
	files := append([]File(nil), acme.Files...)
	files[0] = File{Path: files[0].Path, Data: append(append([]byte(nil), files[0].Data...), '\n')}
	head, changed = apply(files)
	if pk, _ := Verify(ctx, base, head, pol, opt, "acme-operator", changed); pk != nil {
		t.Error("a changed catalog verified")
	}
	// A file more.
	head, changed = apply(append(append([]File(nil), acme.Files...), File{Path: "catalogs/v4.23/acme-operator/extra.yaml", Data: []byte("{}")}))
	if pk, _ := Verify(ctx, base, head, pol, opt, "acme-operator", changed); pk != nil {
		t.Error("an extra file verified")
	}
	// Another package's file in its place.
	head, changed = apply([]File{acme.Files[0], {Path: "operators/gizmo-operator/ci.yaml", Data: acme.Files[1].Data}})
	if pk, _ := Verify(ctx, base, head, pol, opt, "acme-operator", changed); pk != nil {
		t.Error("another package's file verified")
	}
	// A package whose strategy is never.
	if pk, why := Verify(ctx, base, head, pol, opt, "frozen-operator", changed); pk != nil || !strings.Contains(why, "never") {
		t.Errorf("frozen-operator: %v %s", pk, why)
	}
}

// TestNewTargets: a catalog root the policy gains asks for its promotion from the newest version below it;
// one both policies declare, a pattern and a root outside catalogs/ ask for none.
func TestNewTargets(t *testing.T) {
	fsys := fstest.MapFS{
		"catalogs/v4.9/a/catalog.yaml":  {Data: []byte("{}")},
		"catalogs/v4.10/a/catalog.yaml": {Data: []byte("{}")},
		"catalogs/v4.12/a/catalog.yaml": {Data: []byte("{}")},
		"catalogs/v4.11/a/catalog.yaml": {Data: []byte("{}")},
	}
	pol := func(paths ...string) *policy.Policy {
		src := "version: 1\nmaintainers: [admin]\ncatalogs:\n"
		for _, p := range paths {
			src += "  - path: " + p + "\n"
		}
		p, err := policy.Parse(".catalogbot.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	got := NewTargets(fsys, pol("catalogs/v4.11", "catalogs/v4.12"), pol("catalogs/v4.11", "catalogs/v4.12", "catalogs/v4.13"))
	if len(got) != 1 || got[0] != (Target{From: "v4.12", To: "v4.13"}) {
		t.Errorf("v4.13 added: %v", got)
	}
	if got := NewTargets(fsys, pol("catalogs/v4.*"), pol("catalogs/v4.*")); len(got) != 0 {
		t.Errorf("pattern: %v", got)
	}
	if got := NewTargets(fsys, pol("catalogs/v4.9"), pol("catalogs/v4.9", "other/v4.13")); len(got) != 0 {
		t.Errorf("outside catalogs/: %v", got)
	}
	if v, ok := PreviousVersion(fsys, "v4.11"); !ok || v != "v4.10" {
		t.Errorf("before v4.11: %s %v (v4.10 sorts after v4.9)", v, ok)
	}
	if _, ok := PreviousVersion(fsys, "v4.9"); ok {
		t.Error("something before v4.9")
	}
}

func fsWalk(fsys fs.FS, fn func(name string, data []byte)) error {
	return fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		fn(name, data)
		return nil
	})
}
