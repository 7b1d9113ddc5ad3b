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
)

// Derivation says that a pull request is a catalog update derived entirely from the base branch: its
// templates gain only bundles whose directories the base branch holds (each named by the digest of the image
// built from that directory), added as a catalog update adds them, and its catalogs are exactly what the
// templates render to. Such a pull request carries no decision of its own: the bundles' own pull requests
// were authorized when they merged.
type Derivation struct {
	Package string
	// Bundles are the bundle directories (of the base revision) the templates gain.
	Bundles []string
}

func (d *Derivation) String() string {
	return fmt.Sprintf("%s: %s", d.Package, strings.Join(d.Bundles, ", "))
}

// maxDerivedFiles bounds the files a derived catalog update may change.
const maxDerivedFiles = 64

// Derived reports whether the pull request is a derived catalog update (see Derivation); nil when it is not,
// for any reason. It is computed once, after Prepare.
func Derived(ctx context.Context, pr *PullRequest) *Derivation {
	if pr.Changes == nil {
		return nil
	}
	if pr.Changes.derivedDone {
		return pr.Changes.derived
	}
	pr.Changes.derivedDone = true
	pr.Changes.derived = derive(ctx, pr)
	return pr.Changes.derived
}

func derive(ctx context.Context, pr *PullRequest) *Derivation {
	if len(pr.Files) == 0 || len(pr.Files) > maxDerivedFiles || len(pr.Changes.Bundles) > 0 {
		return nil
	}
	changed := map[string]bool{}
	for _, f := range pr.Files {
		if f.Status != FileModified && f.Status != FileAdded {
			return nil
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
		return nil
	}
	var pkg string
	for p := range pkgs {
		pkg = p
	}
	if pkg == "" {
		return nil
	}
	pts, err := PackageTemplates(pr.Base.FS, pr.Policy, pkg)
	if err != nil || len(pts) == 0 {
		return nil
	}
	explained := map[string]bool{}
	d := &Derivation{Package: pkg}
	for _, pt := range pts {
		if !changed[pt.Template] {
			continue
		}
		base, err := readFileCapped(pr.Base.FS, pt.Template, maxTemplateBytes)
		if err != nil || base == nil {
			return nil
		}
		head, err := readFileCapped(pr.Head.FS, pt.Template, maxTemplateBytes)
		if err != nil || head == nil {
			return nil
		}
		bt, _ := template.Parse(pt.Template, base, pr.Limits)
		ht, _ := template.Parse(pt.Template, head, pr.Limits)
		if bt == nil || ht == nil {
			return nil
		}
		had := map[string]bool{}
		for _, r := range bt.Refs() {
			had[r.Image] = true
		}
		dirs := packageDirResolver(pr.Base.FS, pr.Policy, pt.Root, pkg)
		if dirs == nil {
			return nil
		}
		rebuilt := base
		for _, r := range ht.Refs() {
			if had[r.Image] {
				continue
			}
			if !strings.Contains(r.Image, "@sha256:") {
				return nil // only images pinned by digest are derived
			}
			dir, ok := dirs.DirOf(ctx, r.Image)
			if !ok {
				return nil
			}
			sub, err := fs.Sub(pr.Base.FS, dir)
			if err != nil {
				return nil
			}
			b, _, err := bundle.Load(ctx, sub, bundle.Limits{})
			if err != nil || b == nil {
				return nil
			}
			add, err := template.AdditionOf(b, r.Image)
			if err != nil {
				return nil
			}
			if rebuilt, err = template.AddBundle(rebuilt, add); err != nil {
				return nil
			}
			d.Bundles = append(d.Bundles, dir)
		}
		if !bytes.Equal(rebuilt, head) {
			return nil
		}
		explained[pt.Template] = true
		rendered, _ := renderPackageTemplate(ctx, pr.Base.FS, dirs, pt, head, pr.Limits)
		if rendered == nil {
			return nil
		}
		for p, want := range rendered {
			got, err := readFileCapped(pr.Head.FS, p, catalog.DefaultLimits().MaxFileSize)
			if err != nil || !bytes.Equal(got, want) {
				return nil
			}
			explained[p] = true
		}
	}
	for p := range changed {
		if !explained[p] {
			return nil
		}
	}
	if len(d.Bundles) == 0 {
		return nil
	}
	sort.Strings(d.Bundles)
	return d
}
