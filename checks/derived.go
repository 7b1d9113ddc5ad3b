package checks

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/catalog/template/authoring"
	"github.com/catalogbot/catalogbot/checks/render"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/promote"
)

// Derivation says that a pull request is a catalog update derived entirely from the base branch: its
// templates gain only bundles whose directories the base branch holds (each named by the digest of the image
// built from that directory), added as a catalog update adds them, and its catalogs are exactly what the
// templates render to. Such a pull request carries no decision of its own: the bundles' own pull requests
// were authorized when they merged.
//
// Content alone proves nothing about who made it, so a pull request is derived only when its Provenance
// (the App's own records) says that the App made it — opened it from its own branch, made every commit on
// it — and that each bundle it adds is one the App's post-merge build pushed for a default-branch commit and
// no later default-branch commit took out of the template. Without a Provenance (the CLI) nothing is derived.
type Derivation struct {
	Package string
	// Bundles are the bundle directories (of the base revision) the templates gain.
	Bundles []string
	// Promotion, when set, is the App's promotion of the package to a new catalog version (From, To): a
	// derived promotion adds no bundle.
	Promotion *PromotionRecord
	// added are the bundles as the templates gain them, for the provenance.
	added []derivedAddition
}

func (d *Derivation) String() string {
	if d.Promotion != nil {
		return fmt.Sprintf("%s: promoted from %s to %s", d.Package, d.Promotion.From, d.Promotion.To)
	}
	return fmt.Sprintf("%s: %s", d.Package, strings.Join(d.Bundles, ", "))
}

// PromotionRecord is one promotion the App made: a package's catalog from From copied or rendered into To.
type PromotionRecord struct{ From, To, Package string }

// PromotionProvenance is what the App's records say of a promotion pull request; a Provenance that also
// implements it can make one derived. MadePromotion reports which promotion the pull request is when the
// App made it: opened by the App's bot account from catalogbot/promote/<to>/<package> of the base repository
// into the default branch, every commit on it one the App created for that promotion. The reason says why not.
type PromotionProvenance interface {
	MadePromotion(ctx context.Context) (PromotionRecord, bool, string)
}

// derivePromotion: a promotion the App made is derived when its change is exactly what promoting the
// package computes on the base (promote.Verify: the base's ci.yaml, templates and catalogs) and the base's
// ci.yaml says version_promotion_strategy: always. Any other strategy leaves it to the package's owners.
func derivePromotion(ctx context.Context, pr *PullRequest, rec PromotionRecord) (*Derivation, string) {
	if len(pr.Files) == 0 || len(pr.Files) > maxDerivedFiles || len(pr.Changes.Bundles) > 0 {
		return nil, "it changes no file, too many files, or bundle directories"
	}
	paths := make([]string, 0, len(pr.Files))
	for _, f := range pr.Files {
		if f.Status != FileModified && f.Status != FileAdded {
			return nil, "it deletes or renames " + f.Path
		}
		paths = append(paths, f.Path)
	}
	pk, why := promote.Verify(ctx, pr.Base.FS, pr.Head.FS, pr.Policy, promote.Options{From: rec.From, To: rec.To, Limits: pr.Limits}, rec.Package, paths)
	if pk == nil {
		return nil, why
	}
	if pk.Strategy != promote.Always {
		return nil, fmt.Sprintf("%s's version_promotion_strategy is %s (%s): its owners approve the promotion", rec.Package, pk.Strategy, pk.StrategyFrom)
	}
	r := rec
	return &Derivation{Package: rec.Package, Promotion: &r}, ""
}

// maxDerivedFiles bounds the files a derived catalog update may change.
const maxDerivedFiles = 64

// Derived reports whether the pull request is a derived catalog update (see Derivation); nil when it is not,
// for any reason. It is computed once, after Prepare.
func Derived(ctx context.Context, pr *PullRequest) *Derivation {
	if pr.Changes == nil {
		return nil
	}
	return derivedOf(ctx, pr).d
}

// NotDerivedReason says why Derived found the pull request not to be a derived catalog update ("" when it
// is one, or when Derived has not run).
func NotDerivedReason(pr *PullRequest) string {
	if pr.Changes == nil {
		return ""
	}
	if m := pr.Changes.Memo(derivedMemo); m.Started() {
		return derivedOf(context.Background(), pr).why
	}
	return ""
}

func derive(ctx context.Context, pr *PullRequest) (*Derivation, string) {
	if pr.Provenance == nil {
		return nil, "nothing tells who made the pull request"
	}
	if pp, ok := pr.Provenance.(PromotionProvenance); ok {
		if rec, made, _ := pp.MadePromotion(ctx); made {
			return derivePromotion(ctx, pr, rec)
		}
	}
	d, why := deriveContent(ctx, pr)
	if d == nil {
		return nil, why
	}
	if ok, why := pr.Provenance.MadeUpdate(ctx, d.Package); !ok {
		return nil, why
	}
	for _, a := range d.added {
		if ok, why := pr.Provenance.BundleRecorded(ctx, d.Package, a.template, a.image, a.dir); !ok {
			return nil, why
		}
	}
	return d, ""
}

// derivedAddition is one bundle a derived pull request adds to a template.
type derivedAddition struct{ template, image, dir string }

// deriveContent is the part of the derivation read from the two revisions alone.
func deriveContent(ctx context.Context, pr *PullRequest) (*Derivation, string) {
	if len(pr.Files) == 0 || len(pr.Files) > maxDerivedFiles || len(pr.Changes.Bundles) > 0 {
		return nil, "it changes no file, too many files, or bundle directories"
	}
	changed := map[string]bool{}
	for _, f := range pr.Files {
		if f.Status != FileModified && f.Status != FileAdded {
			return nil, "it deletes or renames " + f.Path
		}
		changed[f.Path] = true
	}
	// The package: the one every changed catalog file's blobs belong to.
	pkgs := map[string]bool{}
	for _, cc := range pr.Changes.Catalogs {
		for _, p := range cc.TouchedPackages() {
			pkgs[p] = true
		}
	}
	if len(pkgs) != 1 {
		return nil, "its catalog changes do not belong to exactly one package"
	}
	var pkg string
	for p := range pkgs {
		pkg = p
	}
	if pkg == "" {
		return nil, "its catalog changes belong to no package"
	}
	pts, err := pkgtemplate.List(pr.Base.FS, pr.Policy, pkg)
	if err != nil || len(pts) == 0 {
		return nil, "the package has no template"
	}
	explained := map[string]bool{}
	d := &Derivation{Package: pkg}
	for _, pt := range pts {
		if !changed[pt.Template] {
			continue
		}
		base, err := pkgtemplate.ReadFileCapped(pr.Base.FS, pt.Template, render.MaxTemplateBytes)
		if err != nil || base == nil {
			return nil, pt.Template + " cannot be read from the base"
		}
		head, err := pkgtemplate.ReadFileCapped(pr.Head.FS, pt.Template, render.MaxTemplateBytes)
		if err != nil || head == nil {
			return nil, pt.Template + " cannot be read from the head"
		}
		bt, _ := template.Parse(pt.Template, base, pr.Limits)
		ht, _ := template.Parse(pt.Template, head, pr.Limits)
		if bt == nil || ht == nil {
			return nil, pt.Template + " does not parse"
		}
		had := map[string]bool{}
		for _, r := range bt.Refs() {
			had[r.Image] = true
		}
		dirs := pkgtemplate.DirResolver(pr.Base.FS, pr.Policy, pt.Root, pkg)
		if dirs == nil {
			return nil, "the package's bundle directories cannot be read"
		}
		rebuilt := base
		for _, r := range ht.Refs() {
			if had[r.Image] {
				continue
			}
			if !strings.Contains(r.Image, "@sha256:") {
				return nil, r.Image + " is not pinned by digest" // only images pinned by digest are derived
			}
			dir, ok := dirs.DirOf(ctx, r.Image)
			if !ok {
				return nil, "no bundle directory of the base builds " + r.Image
			}
			sub, err := fs.Sub(pr.Base.FS, dir)
			if err != nil {
				return nil, err.Error()
			}
			b, _, err := bundle.Load(ctx, sub, bundle.Limits{})
			if err != nil || b == nil {
				return nil, dir + " does not load"
			}
			add, err := authoring.AdditionOf(b, r.Image)
			if err != nil {
				return nil, err.Error()
			}
			if rebuilt, err = authoring.AddBundle(rebuilt, add); err != nil {
				return nil, err.Error()
			}
			d.Bundles = append(d.Bundles, dir)
			d.added = append(d.added, derivedAddition{template: pt.Template, image: r.Image, dir: dir})
		}
		if !bytes.Equal(rebuilt, head) {
			return nil, pt.Template + " changes more than a catalog update's additions"
		}
		explained[pt.Template] = true
		rendered, _ := pkgtemplate.RenderWith(ctx, pr.Base.FS, dirs, pt, head, pr.Limits)
		if rendered == nil {
			return nil, pt.Template + " does not render"
		}
		for p, want := range rendered {
			got, err := pkgtemplate.ReadFileCapped(pr.Head.FS, p, catalog.DefaultLimits().MaxFileSize)
			if err != nil || !bytes.Equal(got, want) {
				return nil, p + " is not what the template renders to"
			}
			explained[p] = true
		}
	}
	for p := range changed {
		if !explained[p] {
			return nil, p + " is not explained by a template's additions"
		}
	}
	if len(d.Bundles) == 0 {
		return nil, "no template gains a bundle"
	}
	sort.Strings(d.Bundles)
	return d, ""
}

// derivedMemo keeps Derived's answer in the change set, computed once.
const derivedMemo = "checks.derived"

type derivedAnswer struct {
	d   *Derivation
	why string
}

func derivedOf(ctx context.Context, pr *PullRequest) derivedAnswer {
	return pr.Changes.Memo(derivedMemo).Do(func() any {
		d, why := derive(ctx, pr)
		return derivedAnswer{d, why}
	}).(derivedAnswer)
}
