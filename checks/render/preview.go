package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	blang "github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/catalog/template/authoring"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
)

// CatalogPreview is the catalog update a bundle pull request leads to, done in memory at pull-request time:
// what the App's catalog update does after the merge (each new bundle added to every template its package
// maps to, every mapped catalog rendered), without pushing or pulling anything. The checks judge the pull
// request by it: validation validates the rendered catalogs, crd-safety takes the predecessors of each new
// bundle from the rendered channels, and the upgrade graphs show each changed channel before and after.
type CatalogPreview struct {
	Packages []*PackagePreview
}

// PackagePreview is the preview of one package's catalogs.
type PackagePreview struct {
	Package string
	Bundles []*PreviewBundle
	// Catalogs are the rendered catalogs, one per catalog file of each template (templates only).
	Catalogs []*PreviewCatalog
	// Templates is set when the package's catalogs are rendered from templates (the policy's templates: or
	// ci.yaml's fbc.catalog_mapping).
	Templates bool
	// Unverified says why the catalogs could not be rendered ("" when they were, or there are none): the
	// templates' other bundles cannot be resolved offline, say. Neither a pass nor a failure.
	Unverified string
	// Findings are about the catalog update itself: a template that cannot take the bundle, a rendered
	// catalog that is invalid. They are positioned on the new bundle's CSV.
	Findings []catalog.Finding
}

// PreviewBundle is one bundle directory of the pull request and the bundles that would upgrade into it.
type PreviewBundle struct {
	Change *change.BundleChange
	// Name is the CSV's name, Version its spec.version; Image the reference the catalog update adds.
	Name, Version, Image string
	// Rule says how the predecessors were chosen, for people.
	Rule  string
	Edges []PreviewEdge
	// FromCSV: the predecessors are the bundles the CSV's replaces, skips and olm.skipRange name, resolved
	// by crd-safety against the bundles that exist (Edges is empty).
	FromCSV bool
	// CSVSkips: the CSV's skips and olm.skipRange are predecessors too (a semver rule: opm adds them to the
	// channel entry in every mode).
	CSVSkips bool
	// ChainedTo is the channel head a basic template's new entry replaces because the CSV names no
	// predecessor ("" when the CSV's own edges were used).
	ChainedTo string
}

// PreviewEdge is one upgrade into a new bundle.
type PreviewEdge struct {
	From string
	// Kind is replaces, skips or skipRange (declared by a channel entry), or semver / highest lower version
	// for the rules of packages without templates.
	Kind    string
	Channel string
	// Catalogs are the rendered catalogs the edge is in (templates only).
	Catalogs []string
}

// PreviewCatalog is one catalog file rendered from a template with the new bundles.
type PreviewCatalog struct {
	Template, Path string
	// Before is the committed catalog (nil when there is none), After the rendered one.
	Before, After *catalog.Catalog
}

const (
	rulePreviewTemplate     = "preview.template"
	rulePreviewRender       = "preview.render"
	rulePreviewVersionOrder = "preview.version-order"
)

func previewRules() []catalog.Rule {
	return []catalog.Rule{
		{ID: rulePreviewTemplate, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "a template the bundle's package maps to cannot take the bundle, so the catalog update after the merge would fail",
			Hint:    "fix the template (or the package's fbc.catalog_mapping) so that the catalog update can add the bundle"},
		{ID: rulePreviewRender, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "with the bundle added, a template the package maps to does not render, so the catalog update after the merge would fail",
			Hint:    "fix what the message names in the bundle's CSV or annotations"},
		{ID: rulePreviewVersionOrder, Severity: catalog.SeverityWarning, Source: "catalogbot",
			Summary: "the bundle's version does not fit a channel it joins: the catalog update would make it the upgrade of a bundle of the same or a higher version (in a basic template, a CSV naming no predecessor goes after the channel's head), so the upgrade goes backwards",
			Hint:    "join only channels whose head is a lower version (metadata/annotations.yaml's channels), or name the predecessor with spec.replaces"},
	}
}

// previewMemo keeps Preview's answer in the change set, computed once for every check that asks.
const previewMemo = "checks.preview"

// Preview computes the catalog preview of the pull request once (the checks share it); nil when the pull
// request adds or changes no bundle directory.
func Preview(ctx context.Context, pr *change.PullRequest) *CatalogPreview {
	if pr.Changes == nil {
		return nil
	}
	return pr.Changes.Memo(previewMemo).Do(func() any { return previewOf(ctx, pr) }).(*CatalogPreview)
}

func previewOf(ctx context.Context, pr *change.PullRequest) *CatalogPreview {
	byPkg := map[string][]*change.BundleChange{}
	var pkgs []string
	for _, bc := range pr.Changes.Bundles {
		if bc.Head == nil || bc.Head.CSV == nil || bc.Package == "" || !pkgtemplate.ValidFolder(bc.Package) {
			continue
		}
		if _, ok := byPkg[bc.Package]; !ok {
			pkgs = append(pkgs, bc.Package)
		}
		byPkg[bc.Package] = append(byPkg[bc.Package], bc)
	}
	if len(pkgs) == 0 {
		return nil
	}
	sort.Strings(pkgs)
	out := &CatalogPreview{}
	for _, pkg := range pkgs {
		if ctx.Err() != nil {
			break
		}
		out.Packages = append(out.Packages, previewPackage(ctx, pr, pkg, byPkg[pkg]))
	}
	return out
}

// Package returns the preview of pkg, or nil.
func (p *CatalogPreview) Package(pkg string) *PackagePreview {
	if p == nil {
		return nil
	}
	for _, pp := range p.Packages {
		if pp.Package == pkg {
			return pp
		}
	}
	return nil
}

// Bundle returns the preview of the bundle directory dir, or nil.
func (p *PackagePreview) Bundle(dir string) *PreviewBundle {
	if p == nil {
		return nil
	}
	for _, b := range p.Bundles {
		if b.Change.Dir == dir {
			return b
		}
	}
	return nil
}

func CSVString(b *bundle.Bundle, keys ...string) *catalog.Value {
	v := &b.CSV.Value
	for _, k := range keys {
		if v = v.Get(k); v == nil {
			return nil
		}
	}
	if v.Kind != catalog.KindString {
		return nil
	}
	return v
}

func previewPackage(ctx context.Context, pr *change.PullRequest, pkg string, bcs []*change.BundleChange) *PackagePreview {
	pp := &PackagePreview{Package: pkg}
	for _, bc := range bcs {
		pb := &PreviewBundle{Change: bc, Name: bc.Head.CSV.Name}
		if v := CSVString(bc.Head, "spec", "version"); v != nil {
			pb.Version = v.Str()
		}
		pp.Bundles = append(pp.Bundles, pb)
	}
	pts, err := pkgtemplate.List(pr.Head.FS, pr.Policy, pkg)
	if err != nil {
		pp.Unverified = "the package's template mapping cannot be read: " + err.Error()
		pp.Templates = true
		return pp
	}
	if len(pts) == 0 {
		fallbackPredecessors(ctx, pr, pp)
		return pp
	}
	pp.Templates = true
	previewTemplates(ctx, pr, pp, pts)
	return pp
}

// bundleImage is the reference the App's catalog update adds for a bundle directory: the root's image
// pattern, pinned by the digest of the image built from the directory. Without a pattern the App pushes
// nothing; the preview then names the image by digest under a stand-in repository.
func bundleImage(ctx context.Context, pr *change.PullRequest, fsys fs.FS, bc *change.BundleChange, version string) (string, error) {
	digest, err := template.BundleImageDigestOf(ctx, fsys, bc.Dir, change.BundleDirFacts(pr))
	if err != nil {
		return "", err
	}
	repo := "catalogbot.invalid/" + bc.Package + "-bundle"
	if bc.Root.Image != "" {
		ref := strings.NewReplacer("{package}", bc.Package, "{version}", version).Replace(bc.Root.Image)
		if t, err := name.NewTag(ref, name.StrictValidation); err == nil {
			repo = t.Context().Name()
		} else if r, err := name.ParseReference(ref); err == nil {
			repo = r.Context().Name()
		}
	}
	return repo + "@" + digest, nil
}

func previewTemplates(ctx context.Context, pr *change.PullRequest, pp *PackagePreview, pts []pkgtemplate.PackageTemplate) {
	lim := pr.Limits
	var dirs []string
	adds := make([]authoring.Addition, 0, len(pp.Bundles))
	for _, pb := range pp.Bundles {
		bc := pb.Change
		img, err := bundleImage(ctx, pr, pr.Head.FS, bc, pb.Version)
		if err != nil {
			pp.Unverified = fmt.Sprintf("the image of %s cannot be built in memory: %v", bc.Dir, err)
			return
		}
		pb.Image = img
		add, err := authoring.AdditionOf(bc.Head, img)
		if err != nil {
			pp.Findings = append(pp.Findings, csvFinding(bc, rulePreviewTemplate, "", fmt.Sprintf(
				"the catalog update cannot add %s to its templates: %v", bc.Dir, err)))
			continue
		}
		adds = append(adds, add)
		dirs = append(dirs, bc.Dir)
	}
	if len(adds) == 0 {
		return
	}
	pattern := ""
	if len(pp.Bundles) > 0 {
		pattern = pp.Bundles[0].Change.Root.Image
	}
	// The new bundles by the exact reference the update adds, read from their directories (no image built
	// again: the digest is known).
	byImage := map[string]string{}
	for _, pb := range pp.Bundles {
		if pb.Image != "" {
			byImage[pb.Image] = pb.Change.Dir
		}
	}
	newDirs := dirFetcher(pr, pr.Head.FS, func(ref string) (string, bool) { dir, ok := byImage[ref]; return dir, ok })
	// Each committed catalog is parsed once: its blobs resolve the templates' images and it is the "before"
	// of the graphs and of validation.
	docsOf := newRenderCache(pr).docsOf
	for _, pt := range pts {
		if ctx.Err() != nil {
			pp.Unverified = ctx.Err().Error()
			return
		}
		src, err := pkgtemplate.ReadFileCapped(pr.Head.FS, pt.Template, MaxTemplateBytes)
		if err != nil || src == nil {
			why := "it does not exist"
			if err != nil {
				why = err.Error()
			}
			for _, pb := range pp.Bundles {
				pp.Findings = append(pp.Findings, csvFinding(pb.Change, rulePreviewTemplate, "", fmt.Sprintf(
					"the catalog update would add %s to %s, which the package maps to, but %s", pb.Name, pt.Template, why)))
			}
			continue
		}
		original := src
		basic := false
		named := map[string]bool{} // the images the template names as the pull request leaves it
		if t, _ := template.Parse(pt.Template, src, lim); t != nil {
			basic = t.Schema == template.SchemaBasic
			for _, ref := range t.Refs() {
				named[ref.Image] = true
			}
		}
		for i, add := range adds {
			if named[patternTag(pattern, pp.Package, dirs[i])] {
				// The author added the bundle to the template by the tag the image pattern gives its directory
				// (it resolves to that directory): the catalog update has nothing left to add.
				continue
			}
			if basic && add.Replaces == "" && len(add.Skips) == 0 {
				// A CSV that names no predecessor: the community's catalog update puts the bundle after the head of
				// its channels (replaces), which is where the upgrade comes from.
				if head := channelsHead(pt, docsOf, add); head != "" && head != add.Name {
					add.Replaces = head
					pp.bundleOf(dirs[i]).ChainedTo = head
				}
			}
			next, err := authoring.AddBundle(src, add)
			if errors.Is(err, authoring.ErrAlreadyThere) {
				continue
			}
			if err != nil {
				pp.Findings = append(pp.Findings, csvFinding(pp.bundleOf(dirs[i]).Change, rulePreviewTemplate, "", fmt.Sprintf(
					"the catalog update cannot add %s to %s: %v", add.Name, pt.Template, err)))
				continue
			}
			src = next
		}
		tmpl, tf := template.Parse(pt.Template, src, lim)
		if tmpl == nil {
			pp.Unverified = fmt.Sprintf("%s does not parse: %s", pt.Template, firstMessage(tf))
			continue
		}
		// The new bundles come from their directories; the template's other bundles from the committed
		// catalogs' blobs, then from the package's other bundle directories. Nothing is pulled.
		others := otherDirs(pr, pt, pp.Package, pattern)
		pull := func(level string) template.Resolver {
			chain := template.Chain{newDirs(level)}
			if others != nil {
				chain = append(chain, others(level))
			}
			return chain
		}
		r := template.NewRenderer(tmpl, pt.Opm, pkgtemplate.Paths(pt.Catalogs), docsOf, nil, pull)
		for _, c := range pt.Catalogs {
			out, rf := r.Render(ctx, c.MigrateLevel)
			if out == nil {
				previewRenderFailure(ctx, pr, pp, pt, original, c, rf)
				break
			}
			after, err := renderedCatalog(out, c.Path, lim)
			if err != nil {
				pp.Unverified = fmt.Sprintf("%s as rendered from %s: %v", c.Path, pt.Template, err)
				break
			}
			pc := &PreviewCatalog{Template: pt.Template, Path: c.Path, After: after}
			if docs, ok := docsOf(c.Path); ok {
				pc.Before = catalog.NewCatalog(docs, nil)
			}
			pp.Catalogs = append(pp.Catalogs, pc)
		}
	}
	previewValidate(pp)
	if pp.Unverified != "" && len(pp.Catalogs) == 0 {
		return
	}
	for _, pb := range pp.Bundles {
		pb.Rule = "the rendered channels of the package's templates (replaces, skips, skipRange and semver edges)"
		if pb.ChainedTo != "" {
			pb.Rule += fmt.Sprintf("; its CSV names no replaces or skips, so in basic templates it replaces the head of its channels, %s, as the community's catalog update adds it", pb.ChainedTo)
		}
		pb.Edges = renderedEdges(pp, pb.Name)
		versionOrder(pp, pb)
	}
}

// versionOrder warns, on the CSV's spec.version, of each upgrade into pb that the rendered channels hold
// from a bundle of the same or a higher version: the bundle does not fit that channel. Edges the CSV names
// itself are left out (bundle.csv-upgrade-edge already says so on their line), and so are skipRange edges
// (a range admitting this version or a higher one is the bundle's own warning too).
func versionOrder(pp *PackagePreview, pb *PreviewBundle) {
	own, err := blang.ParseTolerant(pb.Version)
	if err != nil || pb.Change == nil || pb.Change.Head == nil || pb.Change.Head.CSV == nil {
		return
	}
	replaces, skips, _ := CSVEdges(pb.Change.Head)
	for _, e := range pb.Edges {
		if (e.Kind != string(catalog.EdgeReplaces) && e.Kind != string(catalog.EdgeSkips)) || e.From == replaces || slices.Contains(skips, e.From) {
			continue
		}
		from, ok := renderedVersion(pp, e.From)
		if !ok || from.LT(own) {
			continue
		}
		f := csvFinding(pb.Change, rulePreviewVersionOrder, "version", fmt.Sprintf(
			"the catalog update would make %s (version %s) the upgrade of %s (version %s) in channel %s of %s: the upgrade goes backwards, since %s is not lower than %s",
			pb.Name, own, e.From, from, e.Channel, strings.Join(e.Catalogs, ", "), from, own))
		f.Severity = catalog.SeverityWarning
		if pb.ChainedTo == e.From {
			f.Message += fmt.Sprintf("; the CSV names no predecessor, so in a basic template the bundle goes after the head of the channel, %s", e.From)
		}
		pp.Findings = append(pp.Findings, f)
	}
}

// renderedVersion is the version of bundle name in the first rendered catalog that holds it.
func renderedVersion(pp *PackagePreview, name string) (blang.Version, bool) {
	for _, pc := range pp.Catalogs {
		if pc.After == nil {
			continue
		}
		p := pc.After.Package(pp.Package)
		if p == nil {
			continue
		}
		b := p.Bundle(name)
		if b == nil {
			continue
		}
		if prop, ok := b.PackageProperty(); ok {
			if v, err := blang.ParseTolerant(prop.Version); err == nil {
				return v, true
			}
		}
	}
	return blang.Version{}, false
}

func pkgNames(pt pkgtemplate.PackageTemplate, pkg string) []string {
	if pt.Root != nil {
		return []string{pkg}
	}
	return append([]string{pkg}, catalogPathNames(pt.Catalogs)...)
}

func (p *PackagePreview) bundleOf(dir string) *PreviewBundle {
	if b := p.Bundle(dir); b != nil {
		return b
	}
	return p.Bundles[0]
}

func firstMessage(fs []catalog.Finding) string {
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return f.String()
		}
	}
	if len(fs) > 0 {
		return fs[0].String()
	}
	return "no reason given"
}

// previewRenderFailure says why a template does not render with the new bundles: the bundle's doing when the
// template as committed renders, a could-not-verify otherwise (the template's other bundles cannot be
// resolved offline, or it is broken already).
func previewRenderFailure(ctx context.Context, pr *change.PullRequest, pp *PackagePreview, pt pkgtemplate.PackageTemplate, original []byte, c policy.TemplateCatalog, rf []catalog.Finding) {
	unresolvedOnly := true
	for _, f := range rf {
		if f.Severity == catalog.SeverityError && f.Rule != "template.bundle-unresolved" {
			unresolvedOnly = false
		}
	}
	if !unresolvedOnly {
		if tmpl, _ := template.Parse(pt.Template, original, pr.Limits); tmpl != nil {
			pull := otherDirs(pr, pt, pp.Package, pp.Bundles[0].Change.Root.Image)
			if out, _ := pkgtemplate.NewRenderer(tmpl, pt.Opm, pr.Base.FS, pt.Catalogs, nil, pr.Limits, pull).Render(ctx, c.MigrateLevel); out != nil {
				for _, f := range rf {
					if f.Severity != catalog.SeverityError {
						continue
					}
					pb := pp.Bundles[0]
					for _, b := range pp.Bundles {
						if strings.Contains(f.Message, b.Name) || strings.Contains(f.Message, b.Image) {
							pb = b
						}
					}
					pp.Findings = append(pp.Findings, csvFinding(pb.Change, rulePreviewRender, f.Message, fmt.Sprintf(
						"with %s added, %s no longer renders (the catalog update after the merge would fail): %s", pb.Name, pt.Template, f.Message)))
				}
				return
			}
		}
	}
	pp.Unverified = fmt.Sprintf("%s → %s cannot be rendered offline: %s", pt.Template, c.Path, firstMessage(rf))
}

// renderedCatalog reads a rendered catalog into the model (its JSON blobs, one per line).
func renderedCatalog(out *template.Output, file string, lim catalog.Limits) (*catalog.Catalog, error) {
	var buf bytes.Buffer
	for _, b := range out.Blobs {
		buf.Write(b.JSON)
		buf.WriteByte('\n')
	}
	docs, fs := catalog.ParseFile(file, buf.Bytes(), lim)
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return nil, errors.New(f.String())
		}
	}
	return catalog.NewCatalog(docs, nil), nil
}

// positionsInText matches "file:line" and "file:line:col" and "line N" in messages, which differ between a
// committed catalog and a rendered one.
var positionsInText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^\s"'(]+:\d+(:\d+)?|\b(line|lines) \d+`) })

// previewValidate validates each rendered catalog, limited to the package, and keeps what the committed
// catalog does not have already: those findings are the new bundles' doing and go on their CSV.
func previewValidate(pp *PackagePreview) {
	seen := map[string]bool{}
	for _, pc := range pp.Catalogs {
		had := map[string]bool{}
		if pc.Before != nil {
			for _, f := range catalog.Validate(pc.Before, catalog.ValidateOptions{Packages: []string{pp.Package}}) {
				had[f.Rule+"\x00"+positionsInText().ReplaceAllString(f.Message, "")] = true
			}
		}
		for _, f := range catalog.Validate(pc.After, catalog.ValidateOptions{Packages: []string{pp.Package}}) {
			if f.Severity != catalog.SeverityError {
				continue
			}
			key := f.Rule + "\x00" + positionsInText().ReplaceAllString(f.Message, "")
			if had[key] {
				continue
			}
			pb := pp.Bundles[0]
			for _, b := range pp.Bundles {
				if strings.Contains(f.Message, b.Name) {
					pb = b
				}
			}
			msg := fmt.Sprintf("the catalog update would render %s (from %s) invalid: %s", pc.Path, pc.Template, f.Message)
			nf := csvFinding(pb.Change, f.Rule, f.Rule, msg)
			nf.Hint = f.Hint
			if seen[nf.Rule+"\x00"+key] {
				continue // the same finding in another catalog of the package
			}
			seen[nf.Rule+"\x00"+key] = true
			pp.Findings = append(pp.Findings, nf)
		}
	}
}

// csvFinding is an error finding on the line of the bundle's CSV that the text (a rule id or message of the
// rendered catalog) points at: olm.skipRange, replaces, skips, version, else the CSV's name.
func csvFinding(bc *change.BundleChange, rule, about, msg string) catalog.Finding {
	f := catalog.Finding{Rule: rule, Severity: catalog.SeverityError, Package: bc.Package, Message: msg, Hint: ruleHint(rule)}
	csv := bc.Head.CSV
	f.Position = catalog.Position{File: path.Join(bc.Dir, csv.File), Line: csv.Pos.Line}
	var v *catalog.Value
	about = strings.ToLower(about)
	switch {
	case strings.Contains(about, "skiprange") || strings.Contains(about, "skip-range") || strings.Contains(about, "skip range"):
		v = CSVString(bc.Head, "metadata", "annotations", "olm.skipRange")
	case strings.Contains(about, "replaces") || strings.Contains(about, "head"):
		v = CSVString(bc.Head, "spec", "replaces")
	case strings.Contains(about, "skips"):
		if s := csv.Value.Get("spec"); s != nil {
			v = s.Get("skips")
		}
	case strings.Contains(about, "version"):
		v = CSVString(bc.Head, "spec", "version")
	}
	if v == nil {
		if md := csv.Value.Get("metadata"); md != nil {
			v = md.Get("name")
		}
	}
	if v != nil && v.Line > 0 {
		f.Position.Line, f.Position.Column = int(v.Line), int(v.Col)
	}
	return f
}

// renderedEdges are the upgrades into bundle name in every rendered catalog, each listed once with the
// catalogs it is in.
func renderedEdges(pp *PackagePreview, bundleName string) []PreviewEdge {
	idx := map[catalog.UpgradeEdge]int{}
	var out []PreviewEdge
	for _, pc := range pp.Catalogs {
		for _, e := range pc.After.Predecessors(pp.Package, bundleName) {
			i, ok := idx[e]
			if !ok {
				i = len(out)
				idx[e] = i
				out = append(out, PreviewEdge{From: e.From, Kind: string(e.Kind), Channel: e.Channel})
			}
			out[i].Catalogs = append(out[i].Catalogs, catalogLabel(pc.Path))
		}
	}
	return out
}

// catalogLabel is the short name of a catalog file: catalogs/v4.18/etcd/catalog.yaml is v4.18.
func catalogLabel(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) >= 4 && parts[0] == "catalogs" {
		return parts[1]
	}
	return p
}

// fallbackPredecessors chooses the predecessors of each new bundle of a package without templates: ci.yaml's
// updateGraph (semver-mode: the highest lower version in each channel the bundle joins; replaces-mode: the
// CSV's replaces, skips and olm.skipRange); without it, the CSV's edges when it declares any, else the highest
// lower version among the package's bundle directories.
func fallbackPredecessors(ctx context.Context, pr *change.PullRequest, pp *PackagePreview) {
	for _, pb := range pp.Bundles {
		bc := pb.Change
		mode := updateGraphMode(pr, bc)
		replaces, skips, skipRange := CSVEdges(bc.Head)
		declares := replaces != "" || len(skips) > 0 || skipRange != ""
		switch {
		case mode == "replaces-mode" || (mode == "" && declares):
			pb.Rule, pb.FromCSV = "the CSV's replaces, skips and olm.skipRange", true
			if mode != "" {
				pb.Rule = "ci.yaml updateGraph: replaces-mode (" + pb.Rule + ")"
			}
			// The edges are resolved against the bundles that exist by crd-safety, as before.
		case mode == "semver-mode":
			pb.Rule = "ci.yaml updateGraph: semver-mode (the highest lower version in each channel the bundle joins, and the CSV's skips and olm.skipRange)"
			pb.Edges, pb.CSVSkips = semverPredecessors(ctx, pr, bc, pb.Version, true), true
		default:
			pb.Rule = "the highest lower version among the package's bundle directories (no templates, no ci.yaml updateGraph, no replaces, skips or olm.skipRange)"
			pb.Edges = semverPredecessors(ctx, pr, bc, pb.Version, false)
		}
	}
}

// updateGraphMode reads updateGraph from the package's ci.yaml (base revision; head for a package the base
// does not have).
func updateGraphMode(pr *change.PullRequest, bc *change.BundleChange) string {
	ci := path.Join(bc.Root.Path, bc.Folder, "ci.yaml")
	for _, rev := range []change.Revision{pr.Base, pr.Head} {
		data, err := pkgtemplate.ReadFileCapped(rev.FS, ci, change.MaxCIYamlBytes)
		if err != nil || data == nil {
			continue
		}
		docs, _ := catalog.ParseDocuments("ci.yaml", data, pr.Limits)
		if len(docs) == 0 {
			return ""
		}
		if v := docs[0].Value.Get("updateGraph"); v != nil && v.Kind == catalog.KindString {
			return strings.TrimSpace(v.Str())
		}
		return ""
	}
	return ""
}

func CSVEdges(b *bundle.Bundle) (replaces string, skips []string, skipRange string) {
	if v := CSVString(b, "spec", "replaces"); v != nil {
		replaces = v.Str()
	}
	if s := b.CSV.Value.Get("spec"); s != nil {
		if sk := s.Get("skips"); sk != nil {
			for _, it := range sk.Items() {
				if it.Kind == catalog.KindString && it.Str() != "" {
					skips = append(skips, it.Str())
				}
			}
		}
	}
	if v := CSVString(b, "metadata", "annotations", "olm.skipRange"); v != nil {
		skipRange = v.Str()
	}
	return
}

// semverPredecessors is the highest version below version among the package's bundle directories of the
// base revision: in each channel the new bundle joins (perChannel), or overall.
func semverPredecessors(ctx context.Context, pr *change.PullRequest, bc *change.BundleChange, version string, perChannel bool) []PreviewEdge {
	nv, err := blang.ParseTolerant(version)
	if err != nil {
		return nil
	}
	type best struct {
		name string
		v    blang.Version
	}
	top := map[string]best{} // channel ("" overall) -> best
	joins := map[string]bool{}
	for _, ch := range bc.Head.Channels {
		joins[ch] = true
	}
	for _, prev := range PackageBundles(ctx, pr.Base.FS, bc) {
		v, err := blang.ParseTolerant(prev.Version)
		if err != nil || v.GTE(nv) {
			continue
		}
		keys := []string{""}
		if perChannel {
			keys = nil
			for _, ch := range prev.Bundle.Channels {
				if joins[ch] {
					keys = append(keys, ch)
				}
			}
		}
		for _, k := range keys {
			if b, ok := top[k]; !ok || v.GT(b.v) {
				top[k] = best{prev.Bundle.CSV.Name, v}
			}
		}
	}
	kind := "semver"
	if !perChannel {
		kind = "highest lower version"
	}
	var out []PreviewEdge
	for ch, b := range top {
		out = append(out, PreviewEdge{From: b.name, Kind: kind, Channel: ch})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Channel < out[j].Channel })
	return out
}

// DirBundle is a bundle directory of a package in one revision.
type DirBundle struct {
	Dir, Version string
	Bundle       *bundle.Bundle
}

// PackageBundles reads the bundle directories of bc's package folder in fsys (the base revision: the
// bundles already merged), skipping those that do not load.
func PackageBundles(ctx context.Context, fsys fs.FS, bc *change.BundleChange) []DirBundle {
	folder := path.Join(bc.Root.Path, bc.Folder)
	entries, _ := fs.ReadDir(fsys, folder)
	var out []DirBundle
	for _, e := range entries {
		if !e.IsDir() || ctx.Err() != nil {
			continue
		}
		dir := path.Join(folder, e.Name())
		if dir == bc.Dir {
			continue
		}
		b, _, err := change.ReadBundle(ctx, fsys, dir)
		if err != nil || b == nil || b.CSV == nil || b.Package != bc.Package {
			continue
		}
		v := ""
		if s := CSVString(b, "spec", "version"); s != nil {
			v = s.Str()
		}
		out = append(out, DirBundle{Dir: dir, Version: v, Bundle: SlimBundle(b)})
	}
	return out
}

// SlimBundle keeps of a bundle what the predecessor searches and CRD comparisons read — package, channels,
// the CSV's name, where each CRD is — so that a package's bundle directories (sailoperator's 41 hold 3 MB of
// CRDs each) are not all held in memory parsed while the check runs: their CRDs are read again when compared.
func SlimBundle(b *bundle.Bundle) *bundle.Bundle {
	s := &bundle.Bundle{Package: b.Package, Channels: b.Channels, DefaultChannel: b.DefaultChannel}
	light := func(m *bundle.Manifest) *bundle.Manifest {
		return &bundle.Manifest{File: m.File, Pos: m.Pos, APIVersion: m.APIVersion, Kind: m.Kind, Name: m.Name}
	}
	if b.CSV != nil {
		s.CSV = light(b.CSV)
	}
	for _, m := range b.CRDs {
		s.CRDs = append(s.CRDs, light(m))
	}
	return s
}

// dirFetcher resolves the references dirOf maps to a bundle directory of fsys by reading that directory, as
// opm renders a bundle image built from it (what a directory renders to is shared with pr's other checks);
// other references are not found.
func dirFetcher(pr *change.PullRequest, fsys fs.FS, dirOf func(ref string) (string, bool)) func(level string) template.Resolver {
	return func(level string) template.Resolver {
		return template.FetchDirResolver(fsys, func(ref string) (string, error) {
			dir, ok := dirOf(ref)
			if !ok {
				return "", fmt.Errorf("%s: built by no bundle directory the preview reads: %w", ref, template.ErrNotFound)
			}
			return dir, nil
		}, level, change.BundleDirRenders(pr))
	}
}

// otherDirs resolves the template's other bundles from the package's bundle directories of the head: with an
// image pattern, a reference the pattern gives for a version is that version's directory, read directly
// (nothing built); without one, by the digest of each directory's image (all of them built once).
func otherDirs(pr *change.PullRequest, pt pkgtemplate.PackageTemplate, pkg, pattern string) func(level string) template.Resolver {
	if pattern == "" || !strings.Contains(pattern, "{version}") {
		dirs := pkgtemplate.DirResolver(pr.Head.FS, pr.Policy, pt.Root, pkgNames(pt, pkg)...).WithFacts(change.BundleDirFacts(pr)).WithRenders(change.BundleDirRenders(pr))
		if dirs == nil {
			return nil
		}
		return func(level string) template.Resolver { return dirs.AtLevel(level) }
	}
	re := regexp.MustCompile("^" + strings.NewReplacer(regexp.QuoteMeta("{package}"), regexp.QuoteMeta(pkg), regexp.QuoteMeta("{version}"), `([^/@:]+)`).
		Replace(regexp.QuoteMeta(pattern)) + "$")
	var roots []string
	if pt.Root != nil {
		roots = []string{pt.Root.Path}
	} else {
		for _, r := range pr.Policy.Bundles {
			roots = append(roots, r.Path)
		}
	}
	return dirFetcher(pr, pr.Head.FS, func(ref string) (string, bool) {
		m := re.FindStringSubmatch(ref)
		if m == nil || !pkgtemplate.ValidFolder(m[1]) {
			return "", false
		}
		for _, root := range roots {
			dir := path.Join(root, pkg, m[1])
			if st, err := fs.Stat(pr.Head.FS, path.Join(dir, "metadata", "annotations.yaml")); err == nil && st.Mode().IsRegular() {
				return dir, true
			}
		}
		return "", false
	})
}

// patternTag is the reference the bundle root's image pattern gives bundle directory dir of pkg ({version}
// is the directory's name, as otherDirs resolves it), "" without a pattern naming {version}.
func patternTag(pattern, pkg, dir string) string {
	if !strings.Contains(pattern, "{version}") {
		return ""
	}
	return strings.NewReplacer("{package}", pkg, "{version}", path.Base(dir)).Replace(pattern)
}

// channelsHead is the one head the channels add joins have in the template's committed catalogs, "" when they
// have none or several.
func channelsHead(pt pkgtemplate.PackageTemplate, docsOf func(string) ([]catalog.Doc, bool), add authoring.Addition) string {
	head := ""
	for _, c := range pt.Catalogs {
		docs, ok := docsOf(c.Path)
		if !ok {
			continue
		}
		cat := catalog.NewCatalog(docs, nil)
		for _, ch := range add.Channels {
			h, err := cat.ChannelHead(add.Package, ch)
			if err != nil {
				continue
			}
			if head != "" && h != head {
				return ""
			}
			head = h
		}
	}
	return head
}
