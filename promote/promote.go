// Package promote computes what promoting a catalog repository's packages from one OpenShift catalog version
// to the next changes, as the community's catalog promotion does when OpenShift releases a new version, and
// better: each package whose ci.yaml maps its catalogs to templates (fbc.catalog_mapping) gains the new
// catalog name in the mapping entry that renders the source version, and the new catalog is rendered from the
// template as opm alpha render-template would render it; any other package's catalog files are copied. Every
// package's fbc.version_promotion_strategy says what becomes of its change: never (skipped), review-needed (a
// pull request its owners approve) or always (a pull request derived from the default branch, merged without
// review). The result is a Plan; the command line writes it to a work tree, the App opens pull requests.
//
// It reads only the tree given (one commit), bounded, and never runs anything of the repository.
package promote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/policy"
)

// CatalogsDir is where the community layout keeps one catalog per OpenShift version (catalogs/v4.22/), and
// what ci.yaml's catalog names are directories of.
const CatalogsDir = "catalogs"

// Bounds on what one package's promotion reads and writes.
const (
	maxPackages      = 10000
	maxPackageFiles  = 1000
	maxTemplateBytes = 4 << 20
	maxMakefileBytes = 1 << 20
)

// Options say what to promote.
type Options struct {
	// From and To are catalog names: directories of catalogs/ (v4.22, v4.23).
	From, To string
	// Packages, when set, are the only packages considered.
	Packages []string
	// Limits bound the catalog files read (catalog.DefaultLimits when zero).
	Limits catalog.Limits
	// Pull, when set, gives the resolver of a migrate level that renders bundle images neither the package's
	// committed catalogs (by digest) nor its bundle directories resolve: a registry client's bundle pull
	// (template.FetchResolver). Only images the policy's images.allowedRegistries allow are given to it.
	// Without it rendering stays offline.
	Pull func(level string) template.Resolver
}

// Outcome is what promotion does with a package.
type Outcome string

// The outcomes.
const (
	Promoted  Outcome = "promoted"  // Files hold its change
	Skipped   Outcome = "skipped"   // Reason says why; nothing changes
	Unchanged Outcome = "unchanged" // the target catalog is there already
)

// Method is how a promoted package's new catalog is made.
type Method string

// The methods.
const (
	Rendered Method = "template" // rendered from the template ci.yaml maps, ci.yaml gaining the catalog name
	Copied   Method = "copy"     // the source catalog's files copied
)

// File is one file a promotion writes, relative to the repository root.
type File struct {
	Path string
	Data []byte
}

// Package is one package's promotion.
type Package struct {
	Name     string
	Strategy Strategy
	// StrategyFrom says where the strategy comes from: "operators/x/ci.yaml:4", or "default".
	StrategyFrom string
	Outcome      Outcome
	Method       Method
	// Reason says why a package is skipped or unchanged.
	Reason string
	// Files are what a promoted package's change writes, sorted by path: new catalog files and, for a
	// rendered one, its edited ci.yaml.
	Files []File
	// Notes are things the owners should know (drift between a template and its committed catalog, a
	// mapping that does not name the source version).
	Notes []string
	// Err is set when the package's files are malformed (a ci.yaml error on its line, a template that does
	// not render); the package is skipped.
	Err error
	// CIYaml is the package's ci.yaml path ("" when it has none).
	CIYaml string
}

// Plan is a whole promotion.
type Plan struct {
	From, To               string
	SourceRoot, TargetRoot string
	// TargetDeclared: TargetRoot is one of the policy's catalogs on this revision — listed by its path, or
	// matched by a pattern and present — so a pull request adding the new catalog is checked as catalog
	// content (owned by its package's owners, validated) and its image built like the others. TargetNote
	// says what to do when it is not.
	TargetDeclared bool
	TargetNote     string
	Packages       []Package
}

// Count is the number of packages with the outcome (and, when s is not "", the strategy).
func (p *Plan) Count(o Outcome, s Strategy) int {
	n := 0
	for _, pk := range p.Packages {
		if pk.Outcome == o && (s == "" || pk.Strategy == s) {
			n++
		}
	}
	return n
}

// Compute works out the promotion of the packages of fsys (one commit of the repository) under pol (that
// commit's policy, or policy.Default()).
func Compute(ctx context.Context, fsys fs.FS, pol *policy.Policy, opt Options) (*Plan, error) {
	for _, v := range []string{opt.From, opt.To} {
		if !validCatalogName().MatchString(v) {
			return nil, fmt.Errorf("%q is not a catalog name (a directory of %s/ such as v4.22)", v, CatalogsDir)
		}
	}
	if opt.From == opt.To {
		return nil, fmt.Errorf("--from and --to are both %s", opt.From)
	}
	if pol == nil {
		pol = policy.Default()
	}
	lim := opt.Limits
	if lim.MaxFileSize == 0 {
		lim = catalog.DefaultLimits()
	}
	plan := &Plan{From: opt.From, To: opt.To, SourceRoot: path.Join(CatalogsDir, opt.From), TargetRoot: path.Join(CatalogsDir, opt.To)}
	if info, err := fs.Stat(fsys, plan.SourceRoot); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory of this revision: nothing to promote from", plan.SourceRoot)
	}
	plan.TargetDeclared, plan.TargetNote = targetState(fsys, pol, plan.TargetRoot)
	roots := bundleRoots(pol)
	names, err := packageNames(ctx, fsys, plan.SourceRoot, roots, opt.Packages)
	if err != nil {
		return nil, err
	}
	p := &promoter{fsys: fsys, pol: pol, opt: opt, lim: lim, plan: plan, roots: roots}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		plan.Packages = append(plan.Packages, p.promote(ctx, name))
	}
	return plan, nil
}

// targetState says whether the policy makes root a catalog on this revision, and if not what to do.
func targetState(fsys fs.FS, pol *policy.Policy, root string) (bool, string) {
	for _, c := range pol.Catalogs {
		if c.Path == root && !policy.IsPattern(c.Path) {
			return true, ""
		}
	}
	if !declares(pol, root) {
		return false, fmt.Sprintf("the policy's catalogs do not include %s: a maintainer adds it to .catalogbot.yaml (catalogs: - path: %s) on the default branch, so that pull requests adding the new catalogs are checked as catalog content and its image is built", root, root)
	}
	if info, err := fs.Stat(fsys, root); err == nil && info.IsDir() {
		return true, ""
	}
	return false, fmt.Sprintf("%s matches a catalog pattern of the policy, which makes it a catalog only once the directory exists on the default branch (a pattern is resolved on the base of each pull request): until then pull requests adding the new catalogs change files outside the catalogs, which only maintainers may do, and are not validated. A maintainer first commits %s/.indexignore on the default branch", root, root)
}

// declares reports whether the policy's catalogs include root, by path or by a pattern matching it.
func declares(pol *policy.Policy, root string) bool {
	for _, c := range pol.Catalogs {
		for _, pat := range []string{c.Path, c.Pattern} {
			if pat == root {
				return true
			}
			if pat != "" && policy.IsPattern(pat) {
				if ok, _ := path.Match(pat, root); ok {
					return true
				}
			}
		}
	}
	return false
}

// bundleRoots are the directories holding <package>/ci.yaml: the policy's bundle roots, else the community's
// operators/.
func bundleRoots(pol *policy.Policy) []policy.BundleRoot {
	if len(pol.Bundles) > 0 {
		return pol.Bundles
	}
	return []policy.BundleRoot{{Path: "operators"}}
}

var packageName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`) })

// packageNames lists the packages to consider: the package directories of the source catalog, and the
// packages whose ci.yaml maps catalogs (so one that stopped short of the source version is reported), or
// the packages asked for.
func packageNames(ctx context.Context, fsys fs.FS, source string, roots []policy.BundleRoot, only []string) ([]string, error) {
	if len(only) > 0 {
		seen := map[string]bool{}
		var out []string
		for _, n := range only {
			if !packageName().MatchString(n) || len(n) > 253 {
				return nil, fmt.Errorf("%q is not a package name", n)
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		sort.Strings(out)
		return out, nil
	}
	set := map[string]bool{}
	entries, err := fs.ReadDir(fsys, source)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	for _, e := range entries {
		if e.IsDir() && packageName().MatchString(e.Name()) {
			set[e.Name()] = true
		}
	}
	for _, r := range roots {
		entries, err := fs.ReadDir(fsys, r.Path)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if len(set) > maxPackages {
				break
			}
			if !e.IsDir() || set[e.Name()] || !packageName().MatchString(e.Name()) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			data, err := readCapped(fsys, path.Join(r.Path, e.Name(), "ci.yaml"), MaxCIYamlBytes)
			if err != nil || data == nil {
				continue
			}
			if cfg, err := ParseCI("ci.yaml", data); err == nil && cfg.Enabled && len(cfg.Mappings) > 0 {
				set[e.Name()] = true
			}
		}
	}
	if len(set) > maxPackages {
		return nil, fmt.Errorf("more than %d packages: promote some with --package", maxPackages)
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

type promoter struct {
	fsys  fs.FS
	pol   *policy.Policy
	opt   Options
	lim   catalog.Limits
	plan  *Plan
	roots []policy.BundleRoot
}

func (p *promoter) promote(ctx context.Context, name string) Package {
	pk := Package{Name: name, Strategy: DefaultStrategy, StrategyFrom: "default"}
	skip := func(err error, format string, a ...any) Package {
		pk.Outcome, pk.Reason, pk.Err, pk.Files, pk.Method = Skipped, fmt.Sprintf(format, a...), err, nil, ""
		return pk
	}
	// ci.yaml: the first bundle root holding one for the package.
	var cfg *CIConfig
	var root policy.BundleRoot
	for _, r := range p.roots {
		file := path.Join(r.Path, name, "ci.yaml")
		data, err := readCapped(p.fsys, file, MaxCIYamlBytes)
		if err != nil {
			return skip(err, "%s cannot be read: %v", file, err)
		}
		if data == nil {
			continue
		}
		c, err := ParseCI(file, data)
		if err != nil {
			pk.CIYaml = file
			return skip(err, "%v", err)
		}
		cfg, root, pk.CIYaml = c, r, file
		if c.StrategyLine > 0 {
			pk.Strategy, pk.StrategyFrom = c.Strategy, fmt.Sprintf("%s:%d", file, c.StrategyLine)
		}
		break
	}
	if pk.Strategy == Never {
		return skip(nil, "fbc.version_promotion_strategy is never (%s)", pk.StrategyFrom)
	}
	src := path.Join(p.plan.SourceRoot, name)
	dst := path.Join(p.plan.TargetRoot, name)
	if info, err := fs.Stat(p.fsys, src); err != nil || !info.IsDir() {
		return skip(nil, "it has no %s catalog (%s/ is absent)", p.opt.From, src)
	}
	if _, err := fs.Stat(p.fsys, dst); err == nil {
		pk.Outcome, pk.Reason = Unchanged, dst+"/ exists already"
		if cfg != nil && cfg.Enabled && cfg.MappingOf(p.opt.From) != nil && cfg.MappingOf(p.opt.To) == nil {
			pk.Notes = append(pk.Notes, fmt.Sprintf("%s maps %s to a template but not %s: add it where %s is, so the template renders it", pk.CIYaml, p.opt.From, p.opt.To, p.opt.From))
		}
		return pk
	}
	files, err := p.sourceFiles(src)
	if err != nil {
		return skip(err, "%v", err)
	}
	var m *CIMapping
	if cfg != nil && cfg.Enabled {
		m = cfg.MappingOf(p.opt.From)
		if m == nil && len(cfg.Mappings) > 0 {
			pk.Notes = append(pk.Notes, fmt.Sprintf("%s's fbc.catalog_mapping does not name %s: its catalog files are copied", pk.CIYaml, p.opt.From))
		}
	}
	for _, t := range p.pol.Templates {
		for _, c := range t.Catalogs {
			if strings.HasPrefix(c.Path, src+"/") {
				pk.Notes = append(pk.Notes, fmt.Sprintf("the policy's template %s renders %s: a maintainer adds %s to its catalogs", t.Path, c.Path, dst+strings.TrimPrefix(c.Path, src)))
			}
		}
	}
	pk.Outcome = Promoted
	if m == nil {
		pk.Method = Copied
		for _, f := range files {
			pk.Files = append(pk.Files, File{Path: dst + strings.TrimPrefix(f.Path, src), Data: f.Data})
		}
		return pk
	}
	pk.Method = Rendered
	catalogFile := path.Join(dst, "catalog.yaml")
	rendered, notes, err := p.render(ctx, name, root, m)
	if err != nil {
		// Images the template names that nothing offline renders (a template ahead of its catalogs): when
		// the new catalog has the source's migrate level, the source catalog is what the template rendered
		// for it last, and copying it is what the community's promotion does.
		var ue *unresolvedError
		if !errors.As(err, &ue) || template.CommunityMigrateLevel(p.opt.From) != template.CommunityMigrateLevel(p.opt.To) || !hasFile(files, path.Join(src, "catalog.yaml")) {
			return skip(err, "%v", err)
		}
		pk.Method = Copied
		pk.Notes = append(pk.Notes, fmt.Sprintf("%s names %d bundle image(s) that neither the package's catalogs nor its bundle directories render offline (first: %s): %s/catalog.yaml is copied, and the mapping gains %s; render the template with registry access and commit the result to bring both up to date",
			ue.template, len(ue.images), ue.images[0], src, p.opt.To))
		rendered = nil
	}
	// The new directory: the rendered catalog.yaml, and the source's other files (an .indexignore, a file the
	// template does not make). Anything opm would refuse in it — a template behind its catalog, a rendered
	// catalog.yaml clashing with another file of the directory — must not replace a valid catalog: the
	// source's files are copied instead, and the owners told.
	var newFiles []File
	if rendered != nil {
		newFiles = append(newFiles, File{Path: catalogFile, Data: rendered})
	}
	for _, f := range files {
		if rendered != nil && f.Path == path.Join(src, "catalog.yaml") {
			continue
		}
		newFiles = append(newFiles, File{Path: dst + strings.TrimPrefix(f.Path, src), Data: f.Data})
	}
	if rendered != nil {
		if bad := invalid(ctx, dst, newFiles, p.lim); bad != "" && invalid(ctx, src, files, p.lim) == "" {
			pk.Method = Copied
			pk.Notes = append(pk.Notes, fmt.Sprintf("%s renders a catalog that does not validate in %s/ (%s): the files of %s/ are copied instead, and the mapping gains %s; fix the template so it renders the catalog", path.Join(root.Path, name, "catalog-templates", m.Template), dst, bad, src, p.opt.To))
			newFiles = newFiles[:0]
			for _, f := range files {
				newFiles = append(newFiles, File{Path: dst + strings.TrimPrefix(f.Path, src), Data: f.Data})
			}
		}
	}
	pk.Notes = append(pk.Notes, notes...)
	pk.Files = append(pk.Files, newFiles...)
	ciSrc, err := readCapped(p.fsys, pk.CIYaml, MaxCIYamlBytes)
	if err != nil {
		return skip(err, "%v", err)
	}
	edited, changed, err := AddCatalogName(pk.CIYaml, ciSrc, p.opt.From, p.opt.To)
	if err != nil {
		return skip(err, "%v", err)
	}
	if changed {
		pk.Files = append(pk.Files, File{Path: pk.CIYaml, Data: edited})
	}
	sort.Slice(pk.Files, func(i, j int) bool { return pk.Files[i].Path < pk.Files[j].Path })
	return pk
}

// sourceFiles reads every file under the package's source catalog directory, bounded; anything but a
// regular file or a directory (a link) is refused.
func (p *promoter) sourceFiles(dir string) ([]File, error) {
	var out []File
	var total int64
	err := fs.WalkDir(p.fsys, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file (a link?): promote the package by hand", name)
		}
		if len(out) >= maxPackageFiles {
			return fmt.Errorf("%s holds more than %d files", dir, maxPackageFiles)
		}
		data, err := readCapped(p.fsys, name, p.lim.MaxFileSize)
		if err != nil {
			return err
		}
		total += int64(len(data))
		if total > p.lim.MaxTotalSize {
			return fmt.Errorf("%s holds more than %d bytes", dir, p.lim.MaxTotalSize)
		}
		out = append(out, File{Path: name, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no file", dir)
	}
	return out, nil
}

// render renders the mapping's template for the target catalog, as opm alpha render-template does (the opm
// release the package's Makefile names, the migrate level the community uses for the target version), the
// bundle images resolved from the package's committed catalogs of the mapping (by digest), from its bundle
// directories, then pulled (opt.Pull). It notes when the source catalog is not what the template renders
// for it.
func (p *promoter) render(ctx context.Context, name string, root policy.BundleRoot, m *CIMapping) ([]byte, []string, error) {
	pkgDir := path.Join(root.Path, name)
	tfile := path.Join(pkgDir, "catalog-templates", m.Template)
	src, err := readCapped(p.fsys, tfile, maxTemplateBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", tfile, err)
	}
	if src == nil {
		return nil, nil, fmt.Errorf("%s:%d: the template %s is not there", pathOr(root, name), m.Line, tfile)
	}
	tmpl, findings := template.Parse(tfile, src, p.lim)
	if tmpl == nil {
		return nil, nil, findingsError(tfile, findings)
	}
	opm := ""
	if mk, _ := readCapped(p.fsys, path.Join(pkgDir, "Makefile"), maxMakefileBytes); mk != nil {
		if mm := opmVersionLine().FindSubmatch(mk); mm != nil {
			opm = string(mm[1])
		}
	}
	beh, err := template.BehaviourOf(opm)
	if err != nil {
		beh, _ = template.BehaviourOf("")
	}
	cr, _ := template.NewCatalogResolver("none")
	var sourceCatalog []byte
	for _, c := range m.Catalogs {
		file := path.Join(CatalogsDir, c, name, "catalog.yaml")
		data, err := readCapped(p.fsys, file, p.lim.MaxFileSize)
		if err != nil || data == nil {
			continue
		}
		if c == p.opt.From {
			sourceCatalog = data
		}
		docs, _ := catalog.ParseFile(file, data, p.lim)
		cr.Add(docs)
	}
	dirs := template.NewDirResolver(p.fsys, bundleDirs(p.fsys, pkgDir), root.Image, "none")
	renderAt := func(level string) (*template.Output, []catalog.Finding) {
		var chain template.Chain
		if c, err := cr.AtLevel(level); err == nil {
			chain = append(chain, c, dirs.AtLevel(level), c.ByTag())
		}
		if p.opt.Pull != nil {
			pull, allowed := p.opt.Pull(level), p.pol.Images
			chain = append(chain, template.ResolverFunc(func(ctx context.Context, ref string) (*template.Resolved, error) {
				if !allowed.RegistryAllowed(ref) {
					return nil, fmt.Errorf("%s is outside the policy's images.allowedRegistries: not pulled: %w", ref, template.ErrNotFound)
				}
				return pull.Resolve(ctx, ref)
			}))
		}
		return template.Render(ctx, tmpl, template.Options{Resolver: chain, Behaviour: beh})
	}
	level := template.CommunityMigrateLevel(p.opt.To)
	out, rf := renderAt(level)
	if out == nil {
		if ue := unresolved(tfile, rf); ue != nil {
			return nil, nil, ue
		}
		return nil, nil, findingsError(tfile, rf)
	}
	var buf bytes.Buffer
	if err := out.WriteYAML(&buf); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", tfile, err)
	}
	notes := summarize(rf)
	if sourceCatalog != nil {
		fromLevel := template.CommunityMigrateLevel(p.opt.From)
		same := buf.Bytes()
		if fromLevel != level {
			same = nil
			if o, _ := renderAt(fromLevel); o != nil {
				var b bytes.Buffer
				if o.WriteYAML(&b) == nil {
					same = b.Bytes()
				}
			}
		}
		if same != nil && !bytes.Equal(same, sourceCatalog) {
			notes = append(notes, fmt.Sprintf("%s/%s/catalog.yaml is not what %s renders for it (drift): the new catalog is the template's rendering", p.plan.SourceRoot, name, tfile))
		}
	}
	return buf.Bytes(), notes, nil
}

func pathOr(root policy.BundleRoot, name string) string { return path.Join(root.Path, name, "ci.yaml") }

var opmVersionLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*OPM_VERSION\s*[?:]?=\s*(v?1\.[0-9]+\.[0-9]+)\s*$`)
})

// bundleDirs lists the <version>/ directories of a package folder holding metadata/annotations.yaml.
func bundleDirs(fsys fs.FS, pkgDir string) []string {
	entries, err := fs.ReadDir(fsys, pkgDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := path.Join(pkgDir, e.Name())
		if info, err := fs.Stat(fsys, path.Join(dir, "metadata", "annotations.yaml")); err == nil && info.Mode().IsRegular() {
			out = append(out, dir)
		}
	}
	return out
}

// findingsError is the error findings make: the errors among them (at most 5), on their lines.
func findingsError(file string, findings []catalog.Finding) error {
	var msgs []string
	for _, f := range findings {
		if f.Severity != catalog.SeverityError {
			continue
		}
		if len(msgs) == 5 {
			msgs = append(msgs, "…")
			break
		}
		msgs = append(msgs, f.String())
	}
	if len(msgs) == 0 {
		return fmt.Errorf("%s does not render", file)
	}
	return errors.New(strings.Join(msgs, "; "))
}

// readCapped reads a file of at most max bytes; nil, nil when it is absent.
func readCapped(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s is a directory", name)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d read", name, info.Size(), max)
	}
	buf := make([]byte, 0, info.Size())
	b := bytes.NewBuffer(buf)
	if _, err := b.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, err
	}
	if int64(b.Len()) > max {
		return nil, fmt.Errorf("%s is more than %d bytes", name, max)
	}
	return b.Bytes(), nil
}

func hasFile(files []File, name string) bool {
	for _, f := range files {
		if f.Path == name {
			return true
		}
	}
	return false
}

// unresolvedError: the template does not render only because bundle images could not be resolved.
type unresolvedError struct {
	template string
	images   []string
	msg      error
}

func (e *unresolvedError) Error() string { return e.msg.Error() }

// unresolved is the unresolvedError of findings whose every error is an unresolved bundle image; nil else.
func unresolved(file string, findings []catalog.Finding) *unresolvedError {
	var imgs []string
	for _, f := range findings {
		if f.Severity != catalog.SeverityError {
			continue
		}
		if f.Rule != ruleUnresolved {
			return nil
		}
		img := f.Message
		if i := strings.Index(img, "bundle image "); i >= 0 {
			img = img[i+len("bundle image "):]
			if j := strings.IndexByte(img, ' '); j >= 0 {
				img = img[:j]
			}
		}
		imgs = append(imgs, img)
	}
	if len(imgs) == 0 {
		return nil
	}
	return &unresolvedError{template: file, images: imgs, msg: findingsError(file, findings)}
}

const ruleUnresolved = "template.bundle-unresolved"

// summarize turns a render's warnings into notes: one per rule, with the first message and how many more.
func summarize(findings []catalog.Finding) []string {
	var order []string
	byRule := map[string][]catalog.Finding{}
	for _, f := range findings {
		if f.Severity != catalog.SeverityWarning {
			continue
		}
		if _, ok := byRule[f.Rule]; !ok {
			order = append(order, f.Rule)
		}
		byRule[f.Rule] = append(byRule[f.Rule], f)
	}
	var notes []string
	for _, r := range order {
		fs := byRule[r]
		n := fs[0].String()
		if len(fs) > 1 {
			n += fmt.Sprintf(" (and %d more %s)", len(fs)-1, r)
		}
		notes = append(notes, n)
	}
	return notes
}

// invalid validates the files of one package directory dir as opm would and returns the first error ("" when
// they pass).
func invalid(ctx context.Context, dir string, files []File, lim catalog.Limits) string {
	fsys := fstest.MapFS{}
	for _, f := range files {
		fsys[strings.TrimPrefix(f.Path, dir+"/")] = &fstest.MapFile{Data: f.Data}
	}
	res, err := catalog.ValidateFS(ctx, fsys, lim)
	if err != nil {
		return err.Error()
	}
	n := 0
	first := ""
	for _, f := range res.Findings {
		if f.Severity == catalog.SeverityError {
			if n == 0 {
				first = dir + "/" + f.String()
			}
			n++
		}
	}
	switch n {
	case 0:
		return ""
	case 1:
		return first
	}
	return fmt.Sprintf("%s, and %d more errors", first, n-1)
}
