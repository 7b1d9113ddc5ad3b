package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	blang "github.com/blang/semver/v4"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/crd"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/checks/render"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/registry"
)

// ManifestSource reads the files under manifests/ of a bundle image. The
// registry client implements it (with its host guard and budget); tests use
// an in-process registry.
type ManifestSource interface {
	Manifests(ctx context.Context, image string) (map[string][]byte, error)
}

// CRDSafety compares the CRDs of every bundle the pull request adds to a
// channel with those of every bundle a user could be upgrading from (an
// upgrade edge into it in any channel: replaces, skips or skipRange), as OLM
// v1's preflight would on a cluster, but before merge.
type CRDSafety struct {
	// Manifests reads bundle images for bundles that carry no olm.bundle.object
	// (catalogs with olm.csv.metadata only). Nil: such bundles cannot be checked.
	Manifests ManifestSource
}

func (CRDSafety) Name() string { return "crd-safety" }

const (
	ruleCRDNoSource        = "crd-safety.no-source"
	ruleCRDInvalidOverride = "crd-safety.invalid-override"
	ruleCRDUnreadable      = "crd-safety.unreadable"
)

func crdSafetyRules() []catalog.Rule {
	return []catalog.Rule{
		{ID: ruleCRDNoSource, Severity: catalog.SeverityWarning, Source: "catalogbot",
			Summary: "the CRDs of a bundle could not be read (no olm.bundle.object and its image could not be read), so its upgrade safety is not verified",
			Hint:    "make the bundle image readable by catalogbot (allowed registry, credentials), or embed the manifests as olm.bundle.object properties"},
		{ID: ruleCRDInvalidOverride, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "crdSafety.overrides in .catalogbot.yaml names an unknown rule or severity",
			Hint:    "use a rule id from docs/rules.md and one of error, warning, ignore"},
		{ID: ruleCRDUnreadable, Severity: catalog.SeverityError, Source: "catalogbot",
			Summary: "a CRD shipped by a bundle does not parse",
			Hint:    "fix the CRD manifest in the bundle; a cluster would refuse it too"},
	}
}

// bundleCRDs are the CRDs of one bundle and where to point findings at.
type bundleCRDs struct {
	crds []*crd.CRD
	// pos maps a CRD name to the olm.bundle.object property that holds it
	// (or to the bundle's image when the CRDs came from the image).
	pos map[string]catalog.Position
	// err says why the CRDs could not be read; findings were not.
	err error
	// findings are parse problems of the CRD documents.
	findings []catalog.Finding
}

// Costly: reading bundle images spends registry requests; without Manifests it reads none.
func (c CRDSafety) Costly() bool { return c.Manifests != nil }

func (c CRDSafety) Run(ctx context.Context, pr *PullRequest) (Result, error) {
	// Bundle images are read only from allowed registries; their token services must be on allowed hosts too.
	ctx = registry.WithTokenHosts(ctx, pr.Policy.Images.RegistryHosts()...)
	if err := Prepare(ctx, pr); err != nil {
		return Result{}, err
	}
	var fs []catalog.Finding
	overrides := crd.Overrides{}
	for _, o := range pr.Policy.CRDSafety.Overrides {
		rule, sev, err := crd.ParseOverride(o.Rule + "=" + o.Severity)
		if err != nil {
			fs = append(fs, catalog.Finding{Rule: ruleCRDInvalidOverride, Severity: catalog.SeverityError,
				Position: catalog.Position{File: policyFile(pr), Line: o.Pos.Line, Column: o.Pos.Column},
				Message:  err.Error(), Hint: ruleHint(ruleCRDInvalidOverride)})
			continue
		}
		overrides[rule] = sev
	}

	var b strings.Builder
	groups := &crdGroups{}
	unverified := false
	// notEmbedded counts the unreadable upgrades whose CRDs are not
	// embedded while bundle images are not read.
	compared, unreadable, notEmbedded := 0, 0, 0
	for _, cc := range pr.Changes.Catalogs {
		cache := map[string]*bundleCRDs{}
		get := func(pkg, name string) *bundleCRDs {
			key := pkg + "\x00" + name
			if bc, ok := cache[key]; ok {
				return bc
			}
			bc := c.readCRDs(ctx, cc, pr.Policy.Images, pkg, name)
			cache[key] = bc
			return bc
		}
		for _, ref := range cc.AddedToChannels() {
			if err := ctx.Err(); err != nil {
				return Result{}, err
			}
			edges := cc.Head.Predecessors(ref.Package, ref.Bundle)
			if len(edges) == 0 || cc.Head.Package(ref.Package).Bundle(ref.Bundle) == nil {
				continue
			}
			next := get(ref.Package, ref.Bundle)
			if err := ctx.Err(); err != nil {
				return Result{}, err
			}
			fs = append(fs, next.findings...)
			if next.err != nil {
				unverified = true
				unreadable += len(edges)
				if errors.Is(next.err, errNotEmbedded) {
					notEmbedded += len(edges)
				}
				fs = append(fs, noSource(cc, ref.Package, ref.Bundle, next.err))
				fmt.Fprintf(&b, "- `%s`: not compared with the %s it upgrades from: %s\n",
					ref.Bundle, countNoun(len(edges), "bundle", "bundles"), unreadableWhy(next.err, "its own CRDs cannot be read"))
				continue
			}
			lines := &summaryLines{b: &b}
			for _, e := range edges {
				// Read for each upgrade, not kept: a wide skipRange has hundreds of predecessors.
				prev := c.readCRDs(ctx, cc, pr.Policy.Images, ref.Package, e.From)
				if err := ctx.Err(); err != nil {
					return Result{}, err
				}
				if prev.err != nil {
					unverified = true
					unreadable++
					if errors.Is(prev.err, errNotEmbedded) {
						notEmbedded++
					}
					fs = append(fs, noSource(cc, ref.Package, e.From, prev.err))
					lines.add("not compared", "- `%s` → `%s` (%s, channel `%s`): not compared: %s\n",
						e.From, ref.Bundle, e.Kind, e.Channel, unreadableWhy(prev.err, "the predecessor's CRDs cannot be read"))
					continue
				}
				compared++
				changes, err := crd.DiffContext(ctx, prev.crds, next.crds, crd.Options{Overrides: overrides, Profile: pr.Policy.CRDSafety.Profile})
				if err != nil {
					return Result{}, err
				}
				for _, ch := range changes {
					if ch.Rule == crd.RuleInvalidOverride {
						continue // reported above at the policy's line
					}
					f := ch.Finding
					f.Package = ref.Package
					pos, ok := next.pos[ch.CRD]
					if !ok {
						pos = bundlePos(cc, ref.Package, ref.Bundle)
					}
					f.Position = pos
					f.Message = ch.Message
					if m := ch.OLMMessage(); m != "" {
						f.Hint = strings.TrimSpace(f.Hint + "\nA cluster would say: " + m)
					}
					groups.add(f, ref.Bundle, e.From, fmt.Sprintf("%s in channel %s", e.Kind, e.Channel))
				}
				verdict := "safe"
				if crd.Unsafe(changes) {
					verdict = "**unsafe**"
				}
				lines.add(verdict, "- `%s` → `%s` (%s, channel `%s`): %s\n", e.From, ref.Bundle, e.Kind, e.Channel, verdict)
			}
			lines.close("")
		}
	}
	// New bundle directories against the bundle directories of their package they upgrade from.
	for _, bc := range pr.Changes.Bundles {
		if bc.Head == nil || bc.Base != nil || bc.Head.CSV == nil {
			continue
		}
		t, err := c.compareBundleDir(ctx, pr, bc, overrides, &fs, groups, &b)
		if err != nil {
			return Result{}, err
		}
		compared += t.compared
		unreadable += t.unreadable
		notEmbedded += t.notEmbedded
		unverified = unverified || t.unreadable > 0 || t.unverified
	}
	fs = append(fs, groups.findings()...)
	total := len(fs)
	fs = capFindings(fs, maxCRDFindings)
	res := Result{Findings: fs, Conclusion: Conclude(fs, unverified)}
	switch {
	case res.Conclusion == Failure:
		res.Title = "Unsafe CRD changes"
	case res.Conclusion == Neutral && compared == 0 && notEmbedded == unreadable:
		res.Title = "CRDs not embedded, not compared"
	case res.Conclusion == Neutral && notEmbedded == unreadable:
		res.Title = "Some CRDs not embedded, not compared"
	case res.Conclusion == Neutral:
		res.Title = "Some CRDs could not be read"
	case compared == 0:
		res.Title = "No upgrade to compare"
	default:
		res.Title = "CRD changes are safe"
	}
	if total > len(fs) {
		res.Title += fmt.Sprintf(" (%d findings, %d listed)", total, len(fs))
	}
	switch {
	case compared == 0 && unreadable == 0:
		res.Summary = "No bundle added to a channel has a bundle it upgrades from (no predecessor), so there are no CRDs to compare.\n\n" + b.String()
	case unreadable > 0 && notEmbedded == unreadable:
		res.Summary = fmt.Sprintf("Each bundle added was compared with every bundle it upgrades from; %s not compared: CRDs not embedded (no olm.bundle.object) and reading bundle images is off (it comes with the images check):\n\n",
			countNoun(unreadable, "upgrade was", "upgrades were")) + b.String()
	case unreadable > 0:
		res.Summary = fmt.Sprintf("Each bundle added to a channel was compared with every bundle it upgrades from; %s could not be compared because CRDs could not be read:\n\n",
			countNoun(unreadable, "upgrade", "upgrades")) + b.String()
	default:
		res.Summary = "Each bundle added to a channel was compared with every bundle it upgrades from:\n\n" + b.String()
	}
	if total > len(fs) {
		res.Summary += fmt.Sprintf("\n%d findings in all (identical changes of several upgrades already count once); the first %d, errors first, are listed.\n", total, len(fs))
	}
	return res, nil
}

// summaryLines writes at most maxSummaryLines lines of upgrades into a summary and counts the others by
// verdict.
type summaryLines struct {
	b     *strings.Builder
	n     int
	extra map[string]int
}

const maxSummaryLines = 50

func (l *summaryLines) add(verdict, format string, args ...any) {
	l.n++
	if l.n <= maxSummaryLines {
		fmt.Fprintf(l.b, format, args...)
		return
	}
	if l.extra == nil {
		l.extra = map[string]int{}
	}
	l.extra[strings.Trim(verdict, "*")]++
}

// close states the lines left out.
func (l *summaryLines) close(indent string) {
	if len(l.extra) == 0 {
		return
	}
	var parts []string
	for _, v := range []string{"unsafe", "safe", "not compared"} {
		if n := l.extra[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	fmt.Fprintf(l.b, "%s- … and %s more (%s)\n", indent, countNoun(l.n-maxSummaryLines, "upgrade", "upgrades"), strings.Join(parts, ", "))
}

// maxCRDFindings bounds the findings one crd-safety result lists; the total is stated.
const maxCRDFindings = 1000

// capFindings keeps at most max findings, errors first, in their order otherwise.
func capFindings(fs []catalog.Finding, max int) []catalog.Finding {
	if len(fs) <= max {
		return fs
	}
	sort.SliceStable(fs, func(i, j int) bool {
		return fs[i].Severity == catalog.SeverityError && fs[j].Severity != catalog.SeverityError
	})
	return fs[:max:max]
}

// crdGroups collects the CRD changes of the upgrades into new bundles: a change found identically in the
// upgrades from several predecessors (same rule, severity, place and words) is one finding that lists them.
// It keeps at most maxCRDGroups distinct changes and counts the rest.
type crdGroups struct {
	idx     map[string]int
	groups  []crdGroup
	omitted int
}

type crdGroup struct {
	f     catalog.Finding
	to    string
	froms []string // the first maxGroupFroms predecessors, each with how it upgrades
	first string   // the first predecessor's name and how, apart
	how   string
	n     int
}

const (
	maxCRDGroups  = 5000
	maxGroupFroms = 5
)

func (g *crdGroups) add(f catalog.Finding, to, from, how string) {
	key := strings.Join([]string{f.Rule, string(f.Severity), f.Position.String(), f.Message, f.Hint, to}, "\x00")
	i, ok := g.idx[key]
	if !ok {
		if len(g.groups) >= maxCRDGroups {
			g.omitted++
			return
		}
		if g.idx == nil {
			g.idx = map[string]int{}
		}
		i = len(g.groups)
		g.idx[key] = i
		g.groups = append(g.groups, crdGroup{f: f, to: to})
	}
	gr := &g.groups[i]
	gr.n++
	if gr.n == 1 {
		gr.first, gr.how = from, how
	}
	if len(gr.froms) < maxGroupFroms {
		gr.froms = append(gr.froms, from+" ("+how+")")
	}
}

// findings are the grouped findings: "upgrade A → B: …" for one predecessor, "upgrades from 3 bundles (A,
// B, C) → D: …" for several.
func (g *crdGroups) findings() []catalog.Finding {
	out := make([]catalog.Finding, 0, len(g.groups)+1)
	for _, gr := range g.groups {
		f := gr.f
		if gr.n == 1 {
			f.Message = fmt.Sprintf("upgrade %s → %s (%s): %s", gr.first, gr.to, gr.how, f.Message)
		} else {
			list := strings.Join(gr.froms, ", ")
			if gr.n > len(gr.froms) {
				list += fmt.Sprintf(" and %d more", gr.n-len(gr.froms))
			}
			f.Message = fmt.Sprintf("upgrades from %d bundles (%s) → %s: %s", gr.n, list, gr.to, f.Message)
		}
		out = append(out, f)
	}
	if g.omitted > 0 {
		out = append(out, catalog.Finding{Rule: ruleCRDNoSource, Severity: catalog.SeverityWarning,
			Message: fmt.Sprintf("%d more distinct CRD changes not listed (at most %d are kept)", g.omitted, maxCRDGroups)})
	}
	return out
}

// countNoun is "1 bundle" or "3 bundles".
func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func policyFile(pr *PullRequest) string {
	if pr.Policy.File != "" {
		return pr.Policy.File
	}
	return ".catalogbot.yaml"
}

func bundlePos(cc *change.CatalogChange, pkg, name string) catalog.Position {
	b := cc.Head.Package(pkg).Bundle(name)
	if b == nil {
		return catalog.Position{}
	}
	p := b.Pos
	p.File = cc.RepoPath(p.File)
	return p
}

func noSource(cc *change.CatalogChange, pkg, name string, err error) catalog.Finding {
	msg := fmt.Sprintf("cannot read the CRDs of bundle %q: %v", name, err)
	if errors.Is(err, errNotEmbedded) {
		msg = fmt.Sprintf("bundle %q: %v", name, err)
	}
	return catalog.Finding{Rule: ruleCRDNoSource, Severity: catalog.SeverityWarning, Position: bundlePos(cc, pkg, name), Package: pkg,
		Message: msg, Hint: ruleHint(ruleCRDNoSource)}
}

// unreadableWhy is the summary's reason for an upgrade not compared.
func unreadableWhy(err error, otherwise string) string {
	if errors.Is(err, errNotEmbedded) {
		return "CRDs not embedded, not compared (reading bundle images is off)"
	}
	return otherwise
}

// errNotEmbedded: the bundle carries no olm.bundle.object and its image is
// not read (registry access is off, or it names no image). Offline means
// offline: such a bundle is not compared, and nothing is fetched for it.
var errNotEmbedded = errors.New("CRDs not embedded, not compared: the bundle has no olm.bundle.object properties and reading bundle images is off")

// readCRDs gets the CRDs of bundle name of package pkg in a changed catalog.
func (c CRDSafety) readCRDs(ctx context.Context, cc *change.CatalogChange, rules policy.Images, pkg, name string) *bundleCRDs {
	return c.bundleCRDsOf(ctx, cc.Head.Package(pkg).Bundle(name), cc.RepoPath, rules, name)
}

// bundleCRDsOf gets a catalog bundle's CRDs from its olm.bundle.object properties, or from its image's
// manifests/ when it has none. repoPath turns the catalog's positions into repository paths.
func (c CRDSafety) bundleCRDsOf(ctx context.Context, b *catalog.Bundle, repoPath func(string) string, rules policy.Images, name string) *bundleCRDs {
	bc := &bundleCRDs{pos: map[string]catalog.Position{}}
	if b == nil {
		bc.err = errors.New("the bundle is not in the catalog")
		return bc
	}
	if b.HasObjects() {
		objs, err := b.Objects()
		if err != nil {
			bc.err = fmt.Errorf("its olm.bundle.object properties do not decode: %w", err)
			return bc
		}
		var props []*catalog.Property
		for i := range b.Properties {
			if b.Properties[i].Type == catalog.PropertyBundleObject {
				props = append(props, &b.Properties[i])
			}
		}
		for i, data := range objs {
			pos := b.Pos
			if i < len(props) {
				pos = props[i].Pos
			}
			pos.File = repoPath(pos.File)
			bc.add(ctx, fmt.Sprintf("%s (olm.bundle.object #%d of %s)", pos.File, i, name), data, pos)
		}
		return bc
	}
	if c.Manifests == nil || b.Image == "" {
		bc.err = errNotEmbedded
		return bc
	}
	if !rules.RegistryAllowed(b.Image) {
		// The images check reports the reference; nothing is fetched from a registry the policy does not allow.
		bc.err = fmt.Errorf("its image %s is not in an allowed registry (images.allowedRegistries), so its CRDs were not read", b.Image)
		return bc
	}
	files, err := c.Manifests.Manifests(ctx, b.Image)
	if err != nil {
		bc.err = fmt.Errorf("reading %s: %w", b.Image, err)
		return bc
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	pos := b.ImagePos
	pos.File = repoPath(pos.File)
	for _, n := range names {
		bc.add(ctx, b.Image+"#"+path.Clean(n), files[n], pos)
	}
	return bc
}

func (bc *bundleCRDs) add(ctx context.Context, label string, data []byte, pos catalog.Position) {
	crds, found, err := crd.ParseManifestsContext(ctx, label, data)
	if ctxErr := ctx.Err(); ctxErr != nil && err != nil {
		bc.err = ctxErr
		return
	}
	for _, f := range found {
		if f.Severity != catalog.SeverityError {
			continue
		}
		f.Rule, f.Hint = ruleCRDUnreadable, ruleHint(ruleCRDUnreadable)
		f.Message = fmt.Sprintf("%s: %s", f.Position, f.Message)
		f.Position = pos
		bc.findings = append(bc.findings, f)
	}
	for _, c := range crds {
		bc.crds = append(bc.crds, c)
		if _, ok := bc.pos[c.Name]; !ok {
			bc.pos[c.Name] = pos
		}
	}
}

// RegistryManifests reads bundle manifests through the registry client, with
// its host guard, budget and limits.
type RegistryManifests struct {
	Client *registry.Client
	Limits registry.Limits
}

func (m RegistryManifests) Manifests(ctx context.Context, image string) (map[string][]byte, error) {
	return m.Client.Manifests(ctx, image, m.Limits)
}

// crdTally counts the upgrades of a bundle directory: compared, not compared because CRDs could not be read,
// and of those, not compared because they are not embedded while bundle images are not read.
type crdTally struct {
	compared, unreadable, notEmbedded int
	// unverified: the predecessors themselves are not all known (the catalog update could not be previewed).
	unverified bool
}

// catalogSource is a catalog a predecessor's blob may be found in.
type catalogSource struct {
	cat      *catalog.Catalog
	label    string
	repoPath func(string) string
}

// bundlePredecessor is one bundle a new bundle directory would be upgraded from, and how.
type bundlePredecessor struct {
	name, kind, where string
}

// baseDirs finds the bundle directories of a package folder in the base revision by CSV name, reading the
// directory a version names first and the whole folder only when that misses.
type baseDirs struct {
	fsys    fs.FS
	bc      *change.BundleChange
	byName  map[string]render.DirBundle
	all     []render.DirBundle
	scanned bool
}

func (d *baseDirs) scan(ctx context.Context) []render.DirBundle {
	if !d.scanned {
		d.scanned = true
		d.all = render.PackageBundles(ctx, d.fsys, d.bc)
		for _, db := range d.all {
			d.byName[db.Bundle.CSV.Name] = db
		}
	}
	return d.all
}

func (d *baseDirs) find(ctx context.Context, name, version string) (render.DirBundle, bool) {
	if db, ok := d.byName[name]; ok {
		return db, true
	}
	if version != "" && !d.scanned {
		folder := path.Join(d.bc.Root.Path, d.bc.Folder)
		for _, cand := range []string{version, "v" + version} {
			dir := path.Join(folder, cand)
			if dir == d.bc.Dir || !pkgtemplate.ValidFolder(cand) {
				continue
			}
			if b, _, err := change.ReadBundle(ctx, d.fsys, dir); err == nil && b != nil && b.CSV != nil && b.CSV.Name == name && b.Package == d.bc.Package {
				db := render.DirBundle{Dir: dir, Version: version, Bundle: render.SlimBundle(b)}
				d.byName[name] = db
				return db, true
			}
		}
	}
	d.scan(ctx)
	db, ok := d.byName[name]
	return db, ok
}

// compareBundleDir compares the CRDs of a new bundle directory with those of every bundle that would be
// upgraded into it. The predecessors come from the catalog preview: the rendered channels of the package's
// templates (replaces, skips, skipRange, semver edges); without templates, ci.yaml's updateGraph or the
// highest lower version; or the CSV's replaces, skips and olm.skipRange. A predecessor's CRDs come from its
// bundle directory (base revision), else from a catalog's olm.bundle.object, else from its image when
// images are read. A predecessor whose CRDs cannot be read is an upgrade not compared (a warning, the
// check neutral), never a pass.
func (c CRDSafety) compareBundleDir(ctx context.Context, pr *PullRequest, bc *change.BundleChange, overrides crd.Overrides, found *[]catalog.Finding, groups *crdGroups, b *strings.Builder) (crdTally, error) {
	var t crdTally
	newCRDs, newPos, err := bundleDirCRDs(ctx, pr.Head.FS, bc.Dir, bc.Head)
	if err != nil {
		return t, err
	}
	csvPos := catalog.Position{File: path.Join(bc.Dir, bc.Head.CSV.File), Line: bc.Head.CSV.Pos.Line}
	newName := bc.Head.CSV.Name
	dirs := &baseDirs{fsys: pr.Base.FS, bc: bc, byName: map[string]render.DirBundle{}}
	pp := render.Preview(ctx, pr).Package(bc.Package)
	pb := pp.Bundle(bc.Dir)

	// The catalogs a predecessor may be found in: the preview's (committed, then rendered), then the
	// pull request's changed catalogs.
	var sources []catalogSource
	if pp != nil {
		for _, pc := range pp.Catalogs {
			if pc.Before != nil {
				sources = append(sources, catalogSource{pc.Before, pc.Path, func(string) string { return pc.Path }})
			}
		}
		for _, pc := range pp.Catalogs {
			sources = append(sources, catalogSource{pc.After, pc.Path + " (as the catalog update renders it)", func(string) string { return pc.Path }})
		}
	}
	for _, cc := range pr.Changes.Catalogs {
		sources = append(sources, catalogSource{cc.Head, "catalog " + cc.Root, cc.RepoPath})
	}
	versionOf := func(name string) string {
		for _, s := range sources {
			if cb := s.cat.Package(bc.Package).Bundle(name); cb != nil {
				if v, err := cb.Version(); err == nil {
					return v.String()
				}
			}
		}
		return ""
	}

	rule := "the CSV's replaces, skips and olm.skipRange"
	var preds []bundlePredecessor
	fromCSV := pb == nil || pb.FromCSV
	if pb != nil && pp.Templates && pp.Unverified != "" {
		fromCSV = true
		t.unverified = true
		*found = append(*found, catalog.Finding{Rule: ruleCRDNoSource, Severity: catalog.SeverityWarning, Package: bc.Package, Position: csvPos,
			Message: fmt.Sprintf("the catalog update of %s could not be previewed, so the bundles that would upgrade into %s are not all known: %s", bc.Package, newName, pp.Unverified),
			Hint:    ruleHint(ruleCRDNoSource)})
		rule += " (the catalog update could not be previewed: " + pp.Unverified + ")"
	} else if pb != nil && pb.Rule != "" {
		rule = pb.Rule
	}
	// One comparison per predecessor, whatever number of edges lead from it.
	at := map[string]int{}
	addPred := func(name, kind, where string) {
		if i, ok := at[name]; ok {
			p := &preds[i]
			if !strings.Contains(", "+p.kind+", ", ", "+kind+", ") {
				p.kind += ", " + kind
			}
			if !strings.Contains("; "+p.where+"; ", "; "+where+"; ") {
				p.where += "; " + where
			}
			return
		}
		at[name] = len(preds)
		preds = append(preds, bundlePredecessor{name: name, kind: kind, where: where})
	}
	if fromCSV || (pb != nil && pb.CSVSkips) {
		// The CSV's edges; with a semver rule only skips and olm.skipRange, which opm adds in every mode.
		for _, p := range csvPredecessors(ctx, bc, dirs, sources, fromCSV) {
			addPred(p.name, p.kind, p.where)
		}
	}
	if pb != nil && !pb.FromCSV {
		// The rendered channels (those that rendered, when some did not), or the semver rules.
		for _, e := range pb.Edges {
			where := "channel " + e.Channel
			if e.Channel == "" {
				where = "bundle directories"
			}
			if len(e.Catalogs) > 0 {
				where += " of " + strings.Join(e.Catalogs, ", ")
			}
			addPred(e.From, e.Kind, where)
		}
	}
	fmt.Fprintf(b, "- `%s`: predecessors from %s\n", newName, rule)
	if len(preds) == 0 {
		fmt.Fprintf(b, "  - none: no bundle upgrades into `%s`\n", newName)
	}

	lines := &summaryLines{b: b}
	defer lines.close("  ")
	diff := func(p bundlePredecessor, oldCRDs []*crd.CRD, from string) error {
		t.compared++
		changes, err := crd.DiffContext(ctx, oldCRDs, newCRDs, crd.Options{Overrides: overrides, Profile: pr.Policy.CRDSafety.Profile})
		if err != nil {
			return err
		}
		for _, ch := range changes {
			if ch.Rule == crd.RuleInvalidOverride {
				continue
			}
			f := ch.Finding
			f.Package = bc.Package
			msg := ch.Message
			if f.File == "" || f.Line <= 0 || !isNewCRDFile(newPos, f.File) {
				// Nothing to point at in the new CRD (a field removed): the CRD's document; the message names the
				// field's path.
				if pos, ok := newPos[ch.CRD]; ok {
					f.Position = pos
					// The nearest node of the field's path the new CRD has (the parent of a removed field).
					for _, nc := range newCRDs {
						if nc.Name == ch.CRD && nc.Pos.File == pos.File {
							f.Position = catalog.Position{File: pos.File, Line: nc.NearestLine(ch.Version, ch.Path)}
						}
					}
				} else {
					f.Position = bc.FirstFile()
				}
			}
			f.Message = msg
			if m := ch.OLMMessage(); m != "" {
				f.Hint = strings.TrimSpace(f.Hint + "\nA cluster would say: " + m)
			}
			groups.add(f, newName, p.name, p.kind+", "+p.where)
		}
		verdict := "safe"
		if crd.Unsafe(changes) {
			verdict = "**unsafe**"
		}
		lines.add(verdict, "  - `%s` → `%s` (%s, %s; CRDs of %s): %s\n", p.name, newName, p.kind, p.where, from, verdict)
		return nil
	}
	for _, p := range preds {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		if db, ok := dirs.find(ctx, p.name, versionOf(p.name)); ok {
			oldCRDs, _, err := bundleDirCRDs(ctx, pr.Base.FS, db.Dir, db.Bundle)
			if err != nil {
				return t, err
			}
			if err := diff(p, oldCRDs, "bundle directory "+db.Dir); err != nil {
				return t, err
			}
			continue
		}
		// Not in a bundle directory: a catalog's blob, embedded objects first.
		var prev *bundleCRDs
		from := ""
		for pass := 0; pass < 2 && prev == nil; pass++ {
			for _, s := range sources {
				cb := s.cat.Package(bc.Package).Bundle(p.name)
				if cb == nil || (pass == 0 && !cb.HasObjects()) {
					continue
				}
				prev, from = c.bundleCRDsOf(ctx, cb, s.repoPath, pr.Policy.Images, p.name), s.label
				break
			}
		}
		if err := ctx.Err(); err != nil {
			return t, err
		}
		if prev == nil {
			prev = &bundleCRDs{err: errors.New("it is in neither a bundle directory of the base revision nor a catalog")}
		}
		*found = append(*found, prev.findings...)
		if prev.err != nil {
			t.unreadable++
			if errors.Is(prev.err, errNotEmbedded) {
				t.notEmbedded++
			}
			*found = append(*found, catalog.Finding{Rule: ruleCRDNoSource, Severity: catalog.SeverityWarning, Package: bc.Package, Position: csvPos,
				Message: fmt.Sprintf("upgrade %s → %s (%s, %s) not compared: bundle %q: %v", p.name, newName, p.kind, p.where, p.name, prev.err),
				Hint:    ruleHint(ruleCRDNoSource)})
			lines.add("not compared", "  - `%s` → `%s` (%s, %s): not compared: %s\n", p.name, newName, p.kind, p.where, unreadableWhy(prev.err, "the predecessor's CRDs cannot be read"))
			continue
		}
		if err := diff(p, prev.crds, from); err != nil {
			return t, err
		}
	}
	return t, nil
}

// isNewCRDFile reports whether file is one of the new bundle's CRD files.
func isNewCRDFile(newPos map[string]catalog.Position, file string) bool {
	for _, p := range newPos {
		if p.File == file {
			return true
		}
	}
	return false
}

// csvPredecessors are the bundles the CSV's replaces, skips and olm.skipRange name: among the package's
// bundle directories of the base revision, then among the catalogs' bundles.
func csvPredecessors(ctx context.Context, bc *change.BundleChange, dirs *baseDirs, sources []catalogSource, withReplaces bool) []bundlePredecessor {
	replaces, skipList, skipRange := render.CSVEdges(bc.Head)
	if !withReplaces {
		replaces = ""
	}
	skips := map[string]bool{}
	for _, s := range skipList {
		skips[s] = true
	}
	var inRange func(string) bool
	if skipRange != "" {
		if r, err := blang.ParseRange(skipRange); err == nil {
			inRange = func(v string) bool {
				sv, err := blang.ParseTolerant(v)
				return err == nil && r(sv)
			}
		}
	}
	kindOf := func(name, version string) string {
		switch {
		case name == replaces:
			return "replaces"
		case skips[name]:
			return "skips"
		case inRange != nil && inRange(version):
			return "skipRange"
		}
		return ""
	}
	if replaces == "" && len(skips) == 0 && inRange == nil {
		return nil
	}
	var out []bundlePredecessor
	seen := map[string]bool{bc.Head.CSV.Name: true}
	for _, db := range dirs.scan(ctx) {
		if k := kindOf(db.Bundle.CSV.Name, db.Version); k != "" && !seen[db.Bundle.CSV.Name] {
			seen[db.Bundle.CSV.Name] = true
			out = append(out, bundlePredecessor{name: db.Bundle.CSV.Name, kind: k, where: "bundle directory " + db.Dir})
		}
	}
	for _, s := range sources {
		p := s.cat.Package(bc.Package)
		if p == nil {
			continue
		}
		for _, cb := range p.Bundles {
			if seen[cb.Name] {
				continue
			}
			version := ""
			if v, err := cb.Version(); err == nil {
				version = v.String()
			}
			if k := kindOf(cb.Name, version); k != "" {
				seen[cb.Name] = true
				out = append(out, bundlePredecessor{name: cb.Name, kind: k, where: s.label})
			}
		}
	}
	return out
}

// bundleDirCRDs parses the CRD manifests of a bundle directory, and where each CRD is.
func bundleDirCRDs(ctx context.Context, fsys fs.FS, dir string, bnd *bundle.Bundle) ([]*crd.CRD, map[string]catalog.Position, error) {
	var out []*crd.CRD
	pos := map[string]catalog.Position{}
	for _, m := range bnd.CRDs {
		file := path.Join(dir, m.File)
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", file, err)
		}
		crds, _, err := crd.ParseManifestsContext(ctx, file, data)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range crds {
			out = append(out, c)
			pos[c.Name] = catalog.Position{File: file, Line: m.Pos.Line}
		}
	}
	return out, pos, nil
}
