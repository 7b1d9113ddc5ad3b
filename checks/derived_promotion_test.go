package checks_test

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/promote"
)

// promotionProvenance stands for the App's records of the promotion pull request it made (made false: the
// records say the App did not make it).
type promotionProvenance struct {
	rec  checks.PromotionRecord
	made bool
}

func (p *promotionProvenance) MadeUpdate(context.Context, string) (bool, string) {
	return false, "not a catalog update"
}

func (p *promotionProvenance) BundleRecorded(context.Context, string, string, string, string) (bool, string) {
	return false, "not recorded"
}

func (p *promotionProvenance) MadePromotion(context.Context) (checks.PromotionRecord, bool, string) {
	return p.rec, p.made, "not the App's promotion"
}

// TestDerivedPromotion: a promotion pull request is derived — it needs no owner — only when the App's records
// say the App made it, its change is exactly the promotion the base computes, and the base's ci.yaml says
// always; the same content without the records, a review-needed package, or one file more each leave it to
// the package's owners.
func TestDerivedPromotion(t *testing.T) {
	ctx := context.Background()
	base := fstest.MapFS{}
	root := os.DirFS("../testdata/promote")
	err := fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, name)
		base[name] = &fstest.MapFile{Data: data, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Parse(".catalogbot.yaml", base[".catalogbot.yaml"].Data)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := promote.Compute(ctx, base, pol, promote.Options{From: "v4.22", To: "v4.23"})
	if err != nil {
		t.Fatal(err)
	}
	promotion := func(pkg string) []promote.File {
		for _, p := range plan.Packages {
			if p.Name == pkg {
				return p.Files
			}
		}
		t.Fatalf("%s is not promoted", pkg)
		return nil
	}
	for _, tc := range []struct {
		name    string
		files   []promote.File
		prov    checks.Provenance
		derived bool
		why     string
	}{
		{"always, made by the App", promotion("acme-operator"), &promotionProvenance{checks.PromotionRecord{From: "v4.22", To: "v4.23", Package: "acme-operator"}, true}, true, ""},
		{"always, not made by the App", promotion("acme-operator"), &promotionProvenance{checks.PromotionRecord{From: "v4.22", To: "v4.23", Package: "acme-operator"}, false}, false, ""},
		{"always, no records (the CLI)", promotion("acme-operator"), nil, false, "nothing tells"},
		{"review-needed, made by the App", promotion("gizmo-operator"), &promotionProvenance{checks.PromotionRecord{From: "v4.22", To: "v4.23", Package: "gizmo-operator"}, true}, false, "review-needed"},
		{"a file more", append(promotion("acme-operator"), promote.File{Path: "catalogs/v4.23/acme-operator/extra.yaml", Data: []byte("---\nschema: olm.deprecations\npackage: acme-operator\nentries: []\n")}), &promotionProvenance{checks.PromotionRecord{From: "v4.22", To: "v4.23", Package: "acme-operator"}, true}, false, "changes 3 files"},
		{"recorded for another package", promotion("acme-operator"), &promotionProvenance{checks.PromotionRecord{From: "v4.22", To: "v4.23", Package: "legacy-operator"}, true}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := fstest.MapFS{}
			for k, v := range base {
				head[k] = v
			}
			var changes []checks.FileChange
			for _, f := range tc.files {
				st := checks.FileAdded
				if _, ok := base[f.Path]; ok {
					st = checks.FileModified
				}
				head[f.Path] = &fstest.MapFile{Data: f.Data, Mode: 0o644}
				changes = append(changes, checks.FileChange{Path: f.Path, Status: st})
			}
			pr := &checks.PullRequest{Author: "catalogbot[bot]", Policy: pol, Base: checks.Revision{SHA: "b", FS: base}, Head: checks.Revision{SHA: "h", FS: head}, Files: changes, Provenance: tc.prov}
			if err := checks.Prepare(ctx, pr); err != nil {
				t.Fatal(err)
			}
			d := checks.Derived(ctx, pr)
			if (d != nil) != tc.derived {
				t.Fatalf("derived = %v (%s), want %v", d, checks.NotDerivedReason(pr), tc.derived)
			}
			if tc.why != "" && !strings.Contains(checks.NotDerivedReason(pr), tc.why) {
				t.Errorf("why %q, want %q in it", checks.NotDerivedReason(pr), tc.why)
			}
			res, err := checks.Ownership{}.Run(ctx, pr)
			if err != nil {
				t.Fatal(err)
			}
			if tc.derived != (res.Conclusion == checks.Success) {
				t.Errorf("ownership %s %q", res.Conclusion, res.Title)
			}
			if tc.derived && (d.String() != "acme-operator: promoted from v4.22 to v4.23" || !strings.Contains(res.Title, "Promotion to v4.23")) {
				t.Errorf("%s / %s", d, res.Title)
			}
		})
	}
}
