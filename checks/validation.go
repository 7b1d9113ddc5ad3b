package checks

import (
	"context"
	"path"
	"strconv"

	"fmt"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/render"
	"github.com/catalogbot/catalogbot/internal/markdown"
)

// Validation validates the head revision's catalogs as opm validate would,
// limited to the packages the pull request touches plus the catalog-wide
// rules, so its cost follows the change.
type Validation struct{}

func (Validation) Name() string { return "validation" }

func (Validation) Run(ctx context.Context, pr *PullRequest) (Result, error) {
	if err := Prepare(ctx, pr); err != nil {
		return Result{}, err
	}
	var fs []catalog.Finding
	var b, b2 strings.Builder
	checked := 0
	for _, cc := range pr.Changes.Catalogs {
		if len(cc.Files) == 0 {
			continue
		}
		checked++
		pkgs := cc.TouchedPackages()
		if len(pkgs) == 0 {
			// Only content of no package changed: the catalog-wide rules still apply.
			pkgs = []string{""}
		}
		found := catalog.Validate(cc.Head, catalog.ValidateOptions{Packages: pkgs})
		errs := 0
		for _, f := range cc.Refused {
			fs = append(fs, f) // already repository paths
			errs++
		}
		for _, f := range found {
			f.File = cc.RepoPath(f.File)
			fs = append(fs, f)
			if f.Severity == catalog.SeverityError {
				errs++
			}
		}
		verdict := "valid"
		if errs > 0 {
			verdict = "**invalid**: " + markdown.Count(errs, "error", "errors")
		}
		fmt.Fprintf(&b, "- `%s`: %s (packages checked: %s)\n", cc.Root, verdict, quoteList(nonEmpty(pkgs)))
	}
	for _, b := range pr.Changes.Bundles {
		if b.Head == nil {
			continue // removed: immutability judges that
		}
		checked++
		errs := 0
		if b.Root.Strict {
			bundle.Strict(b.Findings)
		}
		for _, f := range bundle.RunSuites(b.Root.OptionalSuites, b.Head, bundle.SuiteOptions{K8sVersion: b.Root.K8sVersion}) {
			f.File = path.Join(b.Dir, f.File)
			b.Findings = append(b.Findings, f)
		}
		// The OLM v1 installability report: informational unless the bundle root promises OLM v1.
		for _, f := range bundle.OLMv1(b.Head) {
			f.File = path.Join(b.Dir, f.File)
			if b.Root.RequireOLMv1 {
				f.Severity = catalog.SeverityError
			}
			b.Findings = append(b.Findings, f)
		}
		for _, f := range b.Findings {
			fs = append(fs, f)
			if f.Severity == catalog.SeverityError {
				errs++
			}
		}
		verdict := "valid"
		if errs > 0 {
			verdict = "**invalid**: " + markdown.Count(errs, "error", "errors")
		}
		fmt.Fprintf(&b2, "- bundle `%s`: %s (package `%s`)\n", b.Dir, verdict, b.Package)
	}
	b.WriteString(b2.String())
	// The policy's rules about image references are rules about text: they hold without a registry.
	if im := pr.Policy.Images; len(im.AllowedRegistries) > 0 || im.RequireDigest {
		refs := append(changedImageRefs(pr), templateImageRefs(pr)...)
		imf, _ := ImageTextFindings(im, refs)
		fs = append(fs, imf...)
		if len(refs) > 0 {
			checked++
			verdict := "allowed"
			if len(imf) > 0 {
				verdict = "**" + markdown.Count(len(imf), "refused", "refused") + "**"
			}
			fmt.Fprintf(&b, "- %s added or changed, against images.allowedRegistries and images.requireDigest: %s\n", markdown.Count(len(refs), "image reference", "image references"), verdict)
		}
	}
	// The catalog update the merge leads to, previewed: its rendered catalogs must be valid too.
	if p := render.Preview(ctx, pr); p != nil {
		reported := map[string]bool{}
		for _, f := range fs {
			if f.Severity == catalog.SeverityError {
				reported[f.Position.File+":"+strconv.Itoa(f.Line)] = true
			}
		}
		for _, pp := range p.Packages {
			if !pp.Templates {
				continue
			}
			checked++
			errs := 0
			for _, f := range pp.Findings {
				if reported[f.Position.File+":"+strconv.Itoa(f.Line)] {
					continue // the bundle's own check already fails that line (an olm.skipRange that does not parse)
				}
				fs = append(fs, f)
				if f.Severity == catalog.SeverityError {
					errs++
				}
			}
			var cats []string
			for _, pc := range pp.Catalogs {
				cats = append(cats, pc.Path)
			}
			switch {
			case errs > 0:
				fmt.Fprintf(&b, "- catalog update of `%s` (previewed): **invalid**: %s\n", pp.Package, markdown.Count(errs, "error", "errors"))
			case pp.Unverified != "":
				fmt.Fprintf(&b, "- catalog update of `%s` (previewed): not verified: %s\n", pp.Package, pp.Unverified)
			default:
				fmt.Fprintf(&b, "- catalog update of `%s` (previewed): valid (%s rendered with the new bundles: %s)\n", pp.Package,
					markdown.Count(len(cats), "catalog", "catalogs"), quoteList(cats))
			}
		}
	}
	res := Result{Findings: fs, Conclusion: Conclude(fs, false)}
	switch {
	case checked == 0:
		res.Title = "No catalog changed"
		res.Summary = "This pull request changes no file in the catalogs or bundle directories declared by the policy."
		return res, nil
	case res.Conclusion == Success:
		res.Title = "Catalog is valid"
	default:
		res.Title = "Catalog is invalid"
	}
	res.Summary = "Validated as `opm validate` (v1.60.0) would, with the rules of newer opm releases, limited to the packages this pull request touches and the catalog-wide rules.\n\n" + b.String()
	return res, nil
}

func nonEmpty(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
