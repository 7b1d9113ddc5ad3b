package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/markdown"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/registry"
)

// BundleImages pulls bundle images for rendering templates.
type BundleImages interface {
	BundleFS(ctx context.Context, ref string) (fs.FS, error)
}

// RegistryBundles pulls bundle images through the registry client, with its host guard, budget and limits.
type RegistryBundles struct {
	Client *registry.Client
	Limits registry.Limits
}

// BundleFS implements BundleImages.
func (r RegistryBundles) BundleFS(ctx context.Context, ref string) (fs.FS, error) {
	img, err := r.Client.Bundle(ctx, ref, r.Limits)
	if err != nil {
		return nil, err
	}
	return img.FS, nil
}

// Templates checks that every committed catalog a template renders into is what the template renders:
// for each package the pull request touches (its templates, its bundle directories, its rendered
// catalogs), the head's templates are rendered as opm alpha render-template does and compared with the
// head's catalogs, blob by blob.
type Templates struct {
	// Images pulls the bundle images that neither a catalog of the base revision (by digest) nor a bundle
	// directory of the head resolves; only images inside the policy's images.allowedRegistries are asked
	// for. Nil: such templates are not verified (neutral), nothing is pulled.
	Images BundleImages

	// offline says why Images is not used ("" when it is nil by configuration).
	offline string
}

func (Templates) Name() string { return "templates" }

// Costly: rendering may pull bundle images.
func (t Templates) Costly() bool { return t.Images != nil }

// WithoutRegistry is the check without its registry work: what it renders from the catalogs of the base and
// the bundle directories, the rest not verified for the reason given.
func (t Templates) WithoutRegistry(reason string) change.Check {
	return Templates{offline: reason}
}

const (
	ruleTemplateMappingSource = "templates.mapping"
	ruleTemplateUnverified    = "template.bundle-unverified"
	MaxTemplateBytes          = 4 << 20
)

func templatesRules() []catalog.Rule {
	return append(template.Rules(), catalog.Rule{ID: ruleTemplateMappingSource, Severity: catalog.SeverityError, Source: "catalogbot",
		Summary: "a ci.yaml's fbc.catalog_mapping cannot be read (not YAML, a template_name or catalog name that is not a plain name)",
		Hint:    "fix operators/<package>/ci.yaml: template_name is a file of catalog-templates/, catalog_names are directories of catalogs/"},
		catalog.Rule{ID: ruleTemplateUnverified, Severity: catalog.SeverityWarning, Source: "catalogbot",
			Summary: "a bundle image the template names could not be read (registry unreachable, rate limited or failing, outside images.allowedRegistries, registry access off or waiting for an owner's approval), so its catalogs are not verified: neutral, never a difference",
			Hint:    "re-run the check when the registry answers; pin the image by digest in a catalog of the base branch, or name it by the bundle root's image, to render it offline"})
}

// unverifiable records the bundle images a render could not read, and why.
type unverifiable struct {
	mu      sync.Mutex
	reasons map[string]string
}

func (u *unverifiable) add(ref, reason string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.reasons == nil {
		u.reasons = map[string]string{}
	}
	if _, ok := u.reasons[ref]; !ok {
		u.reasons[ref] = reason
	}
}

func (u *unverifiable) reason(ref string) (string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	r, ok := u.reasons[ref]
	return r, ok
}

// guardedPull resolves images through images, contacting only references inside the policy's
// images.allowedRegistries; a reference outside them, or one the registry could not answer for (network
// errors, 429, 5xx, timeouts, an exhausted budget or read limit), is recorded as unverifiable.
func guardedPull(images BundleImages, rules policy.Images, level string, unv *unverifiable) template.Resolver {
	fetch := template.FetchResolver(images.BundleFS, level)
	return template.ResolverFunc(func(ctx context.Context, ref string) (*template.Resolved, error) {
		parsed, err := registry.ParseRef(ref)
		if err != nil {
			return nil, err
		}
		if !rules.RegistryAllowed(parsed.Name()) {
			reason := fmt.Sprintf("outside images.allowedRegistries (%s), so it was not contacted", strings.Join(rules.AllowedRegistries, ", "))
			unv.add(ref, reason)
			return nil, fmt.Errorf("%s is %s", ref, reason)
		}
		res, err := fetch.Resolve(ctx, ref)
		if err == nil {
			return res, nil
		}
		var re *registry.Error
		switch {
		case errors.As(err, &re) && re.Result.Kind == registry.Unverified:
			unv.add(ref, re.Result.Reason)
		case errors.Is(err, registry.ErrLimit):
			unv.add(ref, err.Error())
		case ctx.Err() != nil:
			unv.add(ref, "stopped: "+ctx.Err().Error())
		}
		return nil, err
	})
}

// mapping is one template with the catalogs it renders into, wherever it was declared.
type mapping struct {
	template string
	catalogs []policy.TemplateCatalog
	opm      string
	root     *policy.BundleRoot // the bundle root whose ci.yaml declared it, if any
	pkg      string             // the package folder, for ci.yaml mappings
	declared catalog.Position   // where the mapping is declared
}

func (t Templates) Run(ctx context.Context, pr *change.PullRequest) (change.Result, error) {
	ctx = registry.WithTokenHosts(ctx, pr.Policy.Images.RegistryHosts()...)
	if err := change.Prepare(ctx, pr); err != nil {
		return change.Result{}, err
	}
	var findings []catalog.Finding
	maps, mf := t.mappings(pr)
	// A package's bundle directories and its base catalogs are read once for all its templates.
	cache := newRenderCache(pr)
	findings = append(findings, mf...)
	var b strings.Builder
	unverified := false
	checked := 0
	for _, m := range maps {
		fs, summary, unv := t.checkMapping(ctx, pr, m, cache)
		findings = append(findings, fs...)
		unverified = unverified || unv
		checked++
		b.WriteString(summary)
	}
	catalog.SortFindings(findings)
	res := change.Result{Conclusion: change.Conclude(findings, unverified), Findings: findings}
	errs := 0
	for _, f := range findings {
		if f.Severity == catalog.SeverityError {
			errs++
		}
	}
	switch {
	case checked == 0:
		res.Title = "No catalog template touched"
		res.Summary = "The pull request touches no template, and no package whose catalogs are rendered from templates.\n"
	case errs > 0:
		res.Title = fmt.Sprintf("%s between templates and their catalogs", markdown.Count(errs, "difference", "differences"))
	case unverified:
		res.Title = "Some templates could not be rendered offline"
	default:
		res.Title = fmt.Sprintf("%s match %s", markdown.Count(checked, "template's catalogs", "templates' catalogs"), map[bool]string{true: "its template", false: "their templates"}[checked == 1])
	}
	if checked > 0 {
		res.Summary = b.String()
	}
	return res, nil
}

// mappings lists the templates to check: those of the policy whose template or catalogs changed, or whose
// catalogs are a touched package's; and, for bundle roots that read ci.yaml, every mapping of the touched
// packages' ci.yaml in base and head (a pull request may add mappings, never drop the base's).
func (t Templates) mappings(pr *change.PullRequest) ([]mapping, []catalog.Finding) {
	cs := pr.Changes
	changed := map[string]bool{}
	for _, f := range pr.Files {
		changed[f.Path] = true
		if f.OldPath != "" {
			changed[f.OldPath] = true
		}
	}
	touched := map[string]bool{}
	for _, cc := range cs.Catalogs {
		for pkg := range cc.Touched {
			if pkg != "" {
				touched[pkg] = true
			}
		}
	}
	folders := map[string]map[string]bool{} // bundle root -> package folders touched
	addFolder := func(root, pkg string) {
		if folders[root] == nil {
			folders[root] = map[string]bool{}
		}
		folders[root][pkg] = true
	}
	for _, bc := range cs.Bundles {
		addFolder(bc.Root.Path, bc.Folder)
		if bc.Package != "" {
			touched[bc.Package] = true
		}
	}
	for _, pf := range cs.PackageFiles {
		addFolder(pf.Root.Path, pf.Package)
		touched[pf.Package] = true
	}
	var out []mapping
	for _, tm := range pr.Policy.Templates {
		hit := changed[tm.Path]
		for _, c := range tm.Catalogs {
			if changed[c.Path] {
				hit = true
			}
			for pkg := range touched {
				if strings.Contains("/"+c.Path+"/", "/"+pkg+"/") {
					hit = true
				}
			}
		}
		if hit {
			out = append(out, mapping{template: tm.Path, catalogs: tm.Catalogs, opm: tm.Opm, declared: catalog.Position{File: policy.FileName, Line: tm.Pos.Line}})
		}
	}
	var findings []catalog.Finding
	for i := range pr.Policy.Bundles {
		root := &pr.Policy.Bundles[i]
		if !root.TemplatesFromCIYaml {
			continue
		}
		pkgs := map[string]bool{}
		for pkg := range folders[root.Path] {
			pkgs[pkg] = true
		}
		// A changed rendered catalog catalogs/<version>/<package>/... names its package folder.
		for pkg := range touched {
			pkgs[pkg] = true
		}
		names := make([]string, 0, len(pkgs))
		for p := range pkgs {
			names = append(names, p)
		}
		sort.Strings(names)
		for _, pkg := range names {
			if !pkgtemplate.ValidFolder(pkg) {
				continue
			}
			dir := path.Join(root.Path, pkg)
			ci := path.Join(dir, "ci.yaml")
			seen := map[string]int{}
			for _, rev := range []change.Revision{pr.Base, pr.Head} {
				data, err := pkgtemplate.ReadFileCapped(rev.FS, ci, change.MaxCIYamlBytes)
				if err != nil || data == nil {
					continue
				}
				ms, err := template.CIMappings(dir, pkg, data)
				if err != nil {
					if rev.SHA == pr.Head.SHA {
						findings = append(findings, catalog.Finding{Rule: ruleTemplateMappingSource, Severity: catalog.SeverityError, Package: pkg,
							Position: catalog.Position{File: ci, Line: 1}, Message: err.Error(), Hint: "fix fbc.catalog_mapping"})
					}
					continue
				}
				opm := pkgtemplate.MakefileOpm(rev.FS, path.Join(dir, "Makefile"))
				for _, m := range ms {
					var cats []policy.TemplateCatalog
					for _, c := range m.Catalogs {
						cats = append(cats, policy.TemplateCatalog{Path: c, MigrateLevel: m.MigrateLevel[c]})
					}
					if i, ok := seen[m.Template]; ok {
						// The head's mapping of a template the base maps too: keep the base's catalogs, add new ones.
						have := map[string]bool{}
						for _, c := range out[i].catalogs {
							have[c.Path] = true
						}
						for _, c := range cats {
							if !have[c.Path] {
								out[i].catalogs = append(out[i].catalogs, c)
							}
						}
						continue
					}
					seen[m.Template] = len(out)
					out = append(out, mapping{template: m.Template, catalogs: cats, opm: opm, root: root, pkg: pkg, declared: catalog.Position{File: ci, Line: 1}})
				}
			}
		}
	}
	return out, findings
}

// removedWithCatalogs reports whether every catalog m renders is absent from the head revision (a
// catalog that cannot be stat'ed for another reason counts as present, so the mapping is still judged).
func removedWithCatalogs(pr *change.PullRequest, m mapping) bool {
	if len(m.catalogs) == 0 {
		return false
	}
	for _, c := range m.catalogs {
		if _, err := fs.Stat(pr.Head.FS, c.Path); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// fixCommand is the command that writes what should be committed.
func fixCommand(m mapping, c policy.TemplateCatalog) string {
	cmd := "catalog-check template render " + m.template + " --output " + template.OutputFormat(c.Path)
	if c.MigrateLevel != "" && c.MigrateLevel != "none" {
		cmd += " --migrate-level " + c.MigrateLevel
	}
	if m.opm != "" {
		cmd += " --opm " + m.opm
	}
	return "`" + cmd + " > " + c.Path + "` writes what should be committed"
}

// checkMapping renders one template for each of its catalogs and compares.
// renderCache keeps, for one run of the check, the bundle-directory resolvers (each package's directories
// read once, whatever number of templates render it) and the parsed catalogs of the base.
type renderCache struct {
	pr   *change.PullRequest
	dirs map[string]*template.DirResolver
	docs *change.BaseDocs
}

func newRenderCache(pr *change.PullRequest) *renderCache {
	return &renderCache{pr: pr, dirs: map[string]*template.DirResolver{}, docs: change.BaseDocsOf(pr)}
}

func (c *renderCache) dirResolver(root *policy.BundleRoot, names ...string) *template.DirResolver {
	key := strings.Join(names, "\x00")
	if root != nil {
		key = root.Path + "\x00" + key
	}
	if d, ok := c.dirs[key]; ok {
		return d
	}
	d := pkgtemplate.DirResolver(c.pr.Head.FS, c.pr.Policy, root, names...).WithFacts(change.BundleDirFacts(c.pr)).WithRenders(change.BundleDirRenders(c.pr))
	c.dirs[key] = d
	return d
}

// docsOf is a base catalog file's documents (false when it cannot be read: absent, or an error kept for
// errOf).
func (c *renderCache) docsOf(name string) ([]catalog.Doc, bool) { return c.docs.DocsOf(c.pr, name) }

// unreadCatalogs says which of the base catalogs could not be read to resolve images from, and why ("" when
// every one was read or is absent).
func (c *renderCache) unreadCatalogs(cats []policy.TemplateCatalog) string {
	var out []string
	for _, cat := range cats {
		if err := c.docs.ErrOf(cat.Path); err != nil {
			out = append(out, fmt.Sprintf("`%s` (%v)", cat.Path, err))
		}
	}
	if len(out) == 0 {
		return ""
	}
	if len(out) > 3 {
		out = append(out[:3:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	return "; base catalogs that could not be read to resolve them: " + strings.Join(out, ", ")
}

// readError is the "could not verify" reason when err is about reading (a read budget exhausted, a
// context done, an object a partial clone lacks), "" when it is about the file itself.
func readError(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, gitfs.ErrBudget):
		return "the read budget of this check is exhausted: " + err.Error()
	case errors.Is(err, gitfs.ErrObjectMissing), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err.Error()
	}
	return ""
}

func (t Templates) checkMapping(ctx context.Context, pr *change.PullRequest, m mapping, cache *renderCache) ([]catalog.Finding, string, bool) {
	var findings []catalog.Finding
	maxFile := pkgtemplate.MaxFileOf(pr.Limits)
	var b strings.Builder
	pkgOf := func(fs []catalog.Finding) []catalog.Finding {
		for i := range fs {
			if fs[i].Package == "" {
				fs[i].Package = m.pkg
			}
		}
		return fs
	}
	src, err := pkgtemplate.ReadFileCapped(pr.Head.FS, m.template, MaxTemplateBytes)
	if why := readError(err); why != "" {
		// Not a fault of the mapping: the template could not be read.
		findings = append(findings, catalog.Finding{Rule: ruleTemplateUnverified, Severity: catalog.SeverityWarning, Position: catalog.Position{File: m.template}, Package: m.pkg,
			Message: fmt.Sprintf("could not verify: template %s could not be read: %s", m.template, why), Hint: ruleHint(ruleTemplateUnverified)})
		fmt.Fprintf(&b, "- `%s`: not verified: it could not be read (%s)\n", m.template, why)
		return findings, b.String(), true
	}
	if err == nil && src == nil && removedWithCatalogs(pr, m) {
		// The pull request removes the template together with everything it renders (an operator
		// leaving the repository): nothing is left to drift; immutability and ownership judge the removal.
		fmt.Fprintf(&b, "- `%s`: removed with the catalogs it renders\n", m.template)
		return findings, b.String(), false
	}
	if err != nil || src == nil {
		msg := fmt.Sprintf("template %s (declared at %s) does not exist in the head revision", m.template, m.declared)
		if err != nil {
			msg = fmt.Sprintf("template %s cannot be read: %v", m.template, err)
		}
		findings = append(findings, catalog.Finding{Rule: template.RuleDriftMapping, Severity: catalog.SeverityError, Position: m.declared, Package: m.pkg,
			Message: msg, Hint: "add the template, or fix the mapping"})
		fmt.Fprintf(&b, "- `%s`: missing\n", m.template)
		return findings, b.String(), false
	}
	tmpl, pf := template.Parse(m.template, src, pr.Limits)
	findings = append(findings, pkgOf(pf)...)
	if tmpl == nil {
		fmt.Fprintf(&b, "- `%s`: does not parse\n", m.template)
		return findings, b.String(), false
	}
	unverified := false
	names := []string{m.pkg}
	if m.root == nil {
		names = catalogPathNames(m.catalogs)
	}
	unv := &unverifiable{}
	var pull func(string) template.Resolver
	if t.Images != nil {
		pull = func(level string) template.Resolver { return guardedPull(t.Images, pr.Policy.Images, level, unv) }
	} else {
		off := t.offline
		if off == "" {
			off = "registry access is off"
		}
		// Images that are nowhere offline are not a fault of the pull request when pulling is off.
		pull = func(string) template.Resolver {
			return template.ResolverFunc(func(_ context.Context, ref string) (*template.Resolved, error) {
				unv.add(ref, off)
				return nil, fmt.Errorf("not pulled: %s: %w", off, template.ErrNotFound)
			})
		}
	}
	// The blobs the base revision already renders from these images (digests name content).
	r := template.NewRenderer(tmpl, m.opm, pkgtemplate.Paths(m.catalogs), cache.docsOf, cache.dirResolver(m.root, names...), pull)
	r.Incomplete = unv.add
	// A template that does not render at one migrate level may at another (community templates render into
	// catalogs/v4.16 as they are and into v4.17 on with olm.csv.metadata, from other base catalogs): each
	// level is judged on its own, and the catalogs of a level that did not render are said so once.
	failedLevels := map[string]bool{}
	for _, c := range m.catalogs {
		if failedLevels[c.MigrateLevel] {
			fmt.Fprintf(&b, "- `%s` → `%s`: not verified, as above (the same rendering)\n", m.template, c.Path)
			continue
		}
		out, rf := r.Render(ctx, c.MigrateLevel)
		if out == nil {
			failedLevels[c.MigrateLevel] = true
			// Images that could not be read make the template not verified, never a difference: the
			// findings about them are warnings, the rest (an image the registry says does not exist, a
			// template that does not parse) stay errors.
			images := unverifiedFindings(tmpl, rf, unv)
			if len(images) > 0 {
				unverified = true
			}
			if why := cache.unreadCatalogs(m.catalogs); why != "" {
				// The annotation says what it lacked too: a base catalog that would have resolved the image
				// offline (a blob a partial clone left out, a read budget exhausted).
				for i := range rf {
					if rf[i].Rule == ruleTemplateUnverified {
						rf[i].Message += why
					}
				}
			}
			if hasErrorFindings(rf) {
				fmt.Fprintf(&b, "- `%s` → `%s`: the template does not render\n", m.template, c.Path)
			} else {
				shown := images
				const most = 5
				if len(shown) > most {
					shown = append(shown[:most:most], fmt.Sprintf("and %d more", len(images)-most))
				}
				fmt.Fprintf(&b, "- `%s` → `%s`: not verified: %s could not be read: %s%s\n", m.template, c.Path,
					markdown.Count(len(images), "bundle image", "bundle images"), strings.Join(shown, "; "), cache.unreadCatalogs(m.catalogs))
			}
			findings = append(findings, pkgOf(rf)...)
			continue
		}
		findings = append(findings, pkgOf(rf)...)
		data, err := pkgtemplate.ReadFileCapped(pr.Head.FS, c.Path, maxFile)
		if why := readError(err); why != "" {
			unverified = true
			findings = append(findings, catalog.Finding{Rule: ruleTemplateUnverified, Severity: catalog.SeverityWarning, Position: catalog.Position{File: c.Path}, Package: m.pkg,
				Message: fmt.Sprintf("could not verify: %s could not be read: %s", c.Path, why), Hint: ruleHint(ruleTemplateUnverified)})
			fmt.Fprintf(&b, "- `%s` → `%s`: not verified: the catalog could not be read (%s)\n", m.template, c.Path, why)
			continue
		}
		if err != nil || data == nil {
			findings = append(findings, catalog.Finding{Rule: template.RuleDriftMissing, Severity: catalog.SeverityError, Position: catalog.Position{File: m.template, Line: 1}, Package: m.pkg,
				Message: fmt.Sprintf("%s, which the template renders into, does not exist; %s", c.Path, fixCommand(m, c)),
				Hint:    "commit the rendered catalog"})
			fmt.Fprintf(&b, "- `%s` → `%s`: catalog missing\n", m.template, c.Path)
			continue
		}
		drift := pkgOf(template.Drift(out, c.Path, data, pr.Limits, fixCommand(m, c)))
		if line := templateChangeLine(pr, m.template, c.Path, src); line > 0 {
			// The template changed and the catalog did not: the difference is the template's doing, and GitHub shows
			// annotations inline only on changed lines, so it goes on the template's first changed line.
			for i := range drift {
				if drift[i].File == c.Path {
					drift[i].Message = fmt.Sprintf("%s (the template changed, the catalog did not): %s", drift[i].Position, drift[i].Message)
					drift[i].Position = catalog.Position{File: m.template, Line: line}
				}
			}
		}
		if untouchedRender(pr, m, c.Path) {
			// Neither the template, nor the catalog, nor a bundle directory of the package changed: the
			// difference is on the base branch already (the mapping is checked because something else of it
			// changed, ci.yaml say), so it is not this pull request's to fix.
			for i := range drift {
				if drift[i].Severity == catalog.SeverityError {
					drift[i].Severity = catalog.SeverityWarning
					drift[i].Message += " (already so on the base branch; not this pull request's doing)"
				}
			}
		}
		findings = append(findings, drift...)
		n := 0
		for _, f := range drift {
			if f.Severity == catalog.SeverityError {
				n++
			}
		}
		if n == 0 {
			fmt.Fprintf(&b, "- `%s` → `%s`: matches\n", m.template, c.Path)
		} else {
			fmt.Fprintf(&b, "- `%s` → `%s`: **%s**\n", m.template, c.Path, markdown.Count(n, "difference", "differences"))
		}
	}
	return dedupe(findings), b.String(), unverified
}

// unverifiedFindings turns the unresolved-image findings of images recorded in unv into
// template.bundle-unverified warnings, and lists those images with their reasons ("ref (reason)").
func unverifiedFindings(tmpl *template.Template, fs []catalog.Finding, unv *unverifiable) []string {
	byPos := map[catalog.Position]string{}
	for _, ref := range tmpl.Refs() {
		byPos[ref.Pos] = ref.Image
	}
	var images []string
	for i := range fs {
		f := &fs[i]
		if f.Rule != "template.bundle-unresolved" || f.Severity != catalog.SeverityError {
			continue
		}
		img, ok := byPos[f.Position]
		if !ok {
			continue
		}
		reason, ok := unv.reason(img)
		if !ok {
			continue
		}
		f.Rule, f.Severity, f.Hint = ruleTemplateUnverified, catalog.SeverityWarning, ruleHint(ruleTemplateUnverified)
		f.Message = fmt.Sprintf("could not verify: bundle image %s could not be read: %s (%s)", img, reason,
			strings.TrimSuffix(strings.TrimPrefix(f.Message, "bundle image "+img+" could not be rendered: "), ": "+template.ErrNotFound.Error()))
		images = append(images, fmt.Sprintf("`%s` (%s)", img, reason))
	}
	return images
}

func hasErrorFindings(fs []catalog.Finding) bool {
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return true
		}
	}
	return false
}

func dedupe(fs []catalog.Finding) []catalog.Finding {
	seen := map[string]bool{}
	out := fs[:0]
	for _, f := range fs {
		k := f.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out
}

// untouchedRender reports whether the pull request changes none of what catalogFile is rendered from and
// compared with: the template, the catalog file, and the bundle directories of the mapping's package.
func untouchedRender(pr *change.PullRequest, m mapping, catalogFile string) bool {
	for _, f := range pr.Files {
		for _, p := range []string{f.Path, f.OldPath} {
			if p != "" && (p == m.template || p == catalogFile) {
				return false
			}
		}
	}
	if pr.Changes == nil {
		return false
	}
	for _, b := range pr.Changes.Bundles {
		if m.pkg == "" || b.Package == m.pkg || b.Folder == m.pkg {
			return false
		}
	}
	return true
}

// templateChangeLine is the first line of the head template the pull request changed, when it changed the
// template but not the catalog; 0 otherwise.
func templateChangeLine(pr *change.PullRequest, tmpl, catalogFile string, head []byte) int {
	changedTemplate, changedCatalog := false, false
	for _, f := range pr.Files {
		for _, p := range []string{f.Path, f.OldPath} {
			switch p {
			case tmpl:
				changedTemplate = true
			case catalogFile:
				changedCatalog = true
			}
		}
	}
	if !changedTemplate || changedCatalog {
		return 0
	}
	base, _ := change.ReadCapped(pr.Base.FS, tmpl, change.MaxDiffBytes)
	return change.FirstChangedLineOf(base, string(head))
}

// catalogPathNames are the directory names of the catalogs' paths, the candidates for their package.
func catalogPathNames(catalogs []policy.TemplateCatalog) []string {
	var names []string
	for _, c := range catalogs {
		names = append(names, strings.Split(path.Dir(c.Path), "/")...)
	}
	return names
}

// TemplateFile is a template file the pull request concerns, and the package folder whose ci.yaml maps it
// ("" for a template of the policy).
type TemplateFile struct {
	Path, Package string
}

// TemplateFiles are the templates the templates check judges for the pull request (each mapping, in its
// order; a file may come more than once). Findings about the mappings are the templates check's to report.
func TemplateFiles(pr *change.PullRequest) []TemplateFile {
	maps, _ := Templates{}.mappings(pr)
	out := make([]TemplateFile, len(maps))
	for i, m := range maps {
		out[i] = TemplateFile{Path: m.template, Package: m.pkg}
	}
	return out
}
