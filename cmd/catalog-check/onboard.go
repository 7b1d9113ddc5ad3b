package main

// catalog-check init and catalog-check policy lint: writing a .catalogbot.yaml for a repository that has
// none, and checking one against the repository it governs.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// Bounds of a repository scan: directories visited, depth, bytes read from the head of a file.
const (
	scanMaxDirs  = 20000
	scanMaxDepth = 6
	scanHead     = 64 << 10
	maxCIYaml    = 1 << 20
)

// repoScan is what init finds in a repository.
type repoScan struct {
	// catalogRoots are the directories holding a file-based catalog (slash paths, "." the root).
	catalogRoots []string
	bundleRoots  []bundleRootScan
	templates    []templateScan
	maintainers  []string
	// maintainersFrom says where the maintainers came from.
	maintainersFrom   string
	allowedRegistries []string
	// packages are the package names of every catalog root (package folders, or olm.package blobs of
	// files at a root), and of every bundle root's package folders.
	packages map[string]bool
}

type bundleRootScan struct {
	path                   string
	bundles, pkgs          int
	ciFiles                int
	ciReviewers, ciMapping int
}

type templateScan struct {
	path, schema, pkg string
	catalogs          []string
}

// openRepo gives the file system init and policy lint read: the working tree at dir, or the commit rev of
// the git repository at dir (never checked out).
func openRepo(ctx context.Context, dir, rev string) (fs.FS, func(), error) {
	if rev == "" {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, nil, err
		}
		if !st.IsDir() {
			return nil, nil, fmt.Errorf("%s is not a directory", dir)
		}
		return os.DirFS(dir), func() {}, nil
	}
	repo, err := gitfs.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	h, err := repo.Resolve(rev)
	if err != nil {
		repo.Close()
		return nil, nil, err
	}
	tree, err := repo.TreeFS(ctx, h, gitfs.Limits{})
	if err != nil {
		repo.Close()
		return nil, nil, err
	}
	return tree, func() { repo.Close() }, nil
}

// readHead reads at most n bytes of a regular file (links are not followed).
func readHead(fsys fs.FS, name string, n int64) ([]byte, error) {
	if st, err := fs.Stat(fsys, name); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

func isCatalogFileName(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// The markers are compiled on first use, not at every start of the program (issue 33.1).
var (
	templateMarker = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)(^schema:\s*["']?(olm\.template\.basic|olm\.semver)["']?\s*$|"schema"\s*:\s*"(olm\.template\.basic|olm\.semver)")`)
	})
	packageMarker = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)(^schema:\s*["']?olm\.package["']?\s*$|"schema"\s*:\s*"olm\.package")`)
	})
)

// fileKind says whether the head of a file is a catalog template, a catalog file declaring a package, or
// neither.
func fileKind(head []byte) string {
	switch {
	case templateMarker().Match(head):
		return "template"
	case packageMarker().Match(head):
		return "catalog"
	}
	return ""
}

// declaresName reports whether a catalog file's head names name (the package folder's name) as a blob's name.
func declaresName(head []byte, name string) bool {
	q := regexp.QuoteMeta(name)
	return regexp.MustCompile(`(?m)(^name:\s*["']?` + q + `["']?\s*$|"name"\s*:\s*"` + q + `")`).Match(head)
}

func isBundleDir(fsys fs.FS, dir string) bool {
	if st, err := fs.Stat(fsys, path.Join(dir, "metadata", "annotations.yaml")); err == nil && st.Mode().IsRegular() {
		return true
	}
	m, err1 := fs.Stat(fsys, path.Join(dir, "manifests"))
	md, err2 := fs.Stat(fsys, path.Join(dir, "metadata"))
	return err1 == nil && err2 == nil && m.IsDir() && md.IsDir()
}

func subdirs(entries []fs.DirEntry) []string {
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// scanRepo walks the repository (breadth first, bounded) for catalog roots, bundle directories and
// templates, and reads the community pipeline's config.yaml and CODEOWNERS for maintainers.
func scanRepo(ctx context.Context, fsys fs.FS) (*repoScan, error) {
	s := &repoScan{packages: map[string]bool{}}
	var bundleDirs, ciFolders []string
	queue := []string{"."}
	visited := 0
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dir := queue[0]
		queue = queue[1:]
		if visited++; visited > scanMaxDirs {
			return nil, fmt.Errorf("the repository has more than %d directories within %d levels; give the catalog roots in the policy by hand", scanMaxDirs, scanMaxDepth)
		}
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return nil, err
		}
		if dir != "." && isBundleDir(fsys, dir) {
			bundleDirs = append(bundleDirs, dir)
			continue
		}
		if pkgs := packageFolders(fsys, dir, entries); len(pkgs) > 0 {
			s.catalogRoots = append(s.catalogRoots, dir)
			for _, p := range pkgs {
				s.packages[p] = true
			}
			continue
		}
		isRoot := false
		for _, e := range entries {
			if e.Name() == "ci.yaml" && e.Type().IsRegular() && dir != "." {
				// <root>/<package>/ci.yaml: a package folder of the community layout, bundles or not.
				ciFolders = append(ciFolders, dir)
			}
			if !e.Type().IsRegular() || !isCatalogFileName(e.Name()) {
				continue
			}
			name := path.Join(dir, e.Name())
			head, err := readHead(fsys, name, scanHead)
			if err != nil {
				continue
			}
			switch fileKind(head) {
			case "template":
				s.templates = append(s.templates, templateScan{path: name})
			case "catalog":
				isRoot = true
				for _, p := range packagesOf(fsys, name) {
					s.packages[p] = true
				}
			}
		}
		if isRoot {
			s.catalogRoots = append(s.catalogRoots, dir)
			continue
		}
		if strings.Count(dir, "/") >= scanMaxDepth-1 {
			continue
		}
		for _, sub := range subdirs(entries) {
			queue = append(queue, path.Join(dir, sub))
		}
	}
	sort.Strings(s.catalogRoots)
	s.scanBundleRoots(fsys, bundleDirs, ciFolders)
	s.scanTemplates(fsys)
	s.scanMaintainers(fsys)
	return s, nil
}

// packageFolders returns the package folders of dir when dir is a catalog root laid out one folder per
// package (catalogs/v4.16/<package>/catalog.yaml): a subdirectory holding a catalog file that declares a
// package of the subdirectory's name. It looks at the subdirectories until one qualifies (at most 16), then
// takes every subdirectory holding a catalog file as a package folder.
func packageFolders(fsys fs.FS, dir string, entries []fs.DirEntry) []string {
	subs := subdirs(entries)
	qualifies := func(sub string) (catalogFile, declares bool) {
		files, err := fs.ReadDir(fsys, path.Join(dir, sub))
		if err != nil {
			return false, false
		}
		n := 0
		for _, f := range files {
			if !f.Type().IsRegular() || !isCatalogFileName(f.Name()) {
				continue
			}
			if n++; n > 4 {
				break
			}
			head, err := readHead(fsys, path.Join(dir, sub, f.Name()), scanHead)
			if err == nil && fileKind(head) == "catalog" {
				return true, declaresName(head, sub)
			}
		}
		return false, false
	}
	found := false
	for i, sub := range subs {
		if i == 16 {
			break
		}
		if _, ok := qualifies(sub); ok {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	var pkgs []string
	for _, sub := range subs {
		files, err := fs.ReadDir(fsys, path.Join(dir, sub))
		if err != nil {
			continue
		}
		for _, f := range files {
			if f.Type().IsRegular() && isCatalogFileName(f.Name()) {
				pkgs = append(pkgs, sub)
				break
			}
		}
	}
	return pkgs
}

// packagesOf reads the olm.package names of one catalog file (bounded by the loader's file limit).
func packagesOf(fsys fs.FS, name string) []string {
	data, err := readHead(fsys, name, catalog.DefaultLimits().MaxFileSize)
	if err != nil {
		return nil
	}
	docs, _ := catalog.ParseDocuments(name, data, catalog.Limits{})
	var out []string
	for _, d := range docs {
		if s := d.Value.Get("schema"); s != nil && s.Str() == "olm.package" {
			if n := d.Value.Get("name"); n != nil && n.Str() != "" {
				out = append(out, n.Str())
			}
		}
	}
	return out
}

func (s *repoScan) scanBundleRoots(fsys fs.FS, bundleDirs, ciFolders []string) {
	roots := map[string]*bundleRootScan{}
	pkgs := map[string]map[string]bool{}
	outer := map[string]bool{}
	for _, b := range bundleDirs {
		outer[path.Dir(path.Dir(b))] = true
	}
	for _, f := range ciFolders {
		root := path.Dir(f)
		if !outer[root] {
			outer[root] = true
			roots[root] = &bundleRootScan{path: root}
			pkgs[root] = map[string]bool{}
		}
	}
	for _, b := range bundleDirs {
		// <root>/<package>/<version>: the root is two levels up (the repository root at least); a bundle
		// directory deeper in a package folder belongs to the root above it.
		root := path.Dir(path.Dir(b))
		for d := path.Dir(root); d != "." && d != "/"; d = path.Dir(d) {
			if outer[d] {
				root = d
			}
		}
		if root != "." && outer["."] {
			root = "."
		}
		r := roots[root]
		if r == nil {
			r = &bundleRootScan{path: root}
			roots[root] = r
			pkgs[root] = map[string]bool{}
		}
		r.bundles++
		rel := strings.TrimPrefix(b, root+"/")
		if root == "." {
			rel = b
		}
		pkg, _, _ := strings.Cut(rel, "/")
		pkgs[root][pkg] = true
	}
	for root, r := range roots {
		r.pkgs = len(pkgs[root])
		entries, _ := fs.ReadDir(fsys, root)
		for _, pkg := range subdirs(entries) {
			data, err := readHead(fsys, path.Join(root, pkg, "ci.yaml"), maxCIYaml)
			if err != nil {
				continue
			}
			r.ciFiles++
			docs, _ := catalog.ParseDocuments("ci.yaml", data, catalog.Limits{})
			if len(docs) == 0 {
				continue
			}
			if rv := docs[0].Value.Get("reviewers"); rv != nil && len(rv.Items()) > 0 {
				r.ciReviewers++
			}
			if fbc := docs[0].Value.Get("fbc"); fbc != nil && fbc.Get("catalog_mapping") != nil {
				r.ciMapping++
			}
		}
		for p := range pkgs[root] {
			s.packages[p] = true
		}
		s.bundleRoots = append(s.bundleRoots, *r)
	}
	sort.Slice(s.bundleRoots, func(i, j int) bool { return s.bundleRoots[i].path < s.bundleRoots[j].path })
}

// scanTemplates keeps the templates no ci.yaml mapping covers, each with the catalog files of its package.
func (s *repoScan) scanTemplates(fsys fs.FS) {
	var out []templateScan
	for _, t := range s.templates {
		covered := false
		for _, r := range s.bundleRoots {
			if r.ciMapping > 0 && strings.HasPrefix(t.path, r.path+"/") && strings.Contains(t.path, "/catalog-templates/") {
				covered = true
			}
		}
		if covered {
			continue
		}
		data, err := readHead(fsys, t.path, maxTemplateFile)
		if err != nil {
			continue
		}
		tmpl, _ := template.Parse(t.path, data, catalog.Limits{})
		if tmpl == nil {
			continue
		}
		t.schema = tmpl.Schema
		for _, e := range tmpl.Entries {
			if e.Schema == "olm.package" {
				t.pkg = e.Name
				break
			}
		}
		if t.pkg == "" {
			// A semver template names no package: take the folder or file name that is one.
			for _, part := range strings.Split(strings.TrimSuffix(t.path, path.Ext(t.path)), "/") {
				if s.packages[part] {
					t.pkg = part
				}
			}
		}
		for _, root := range s.catalogRoots {
			for _, f := range []string{"catalog.yaml", "catalog.json", "index.yaml", "index.json"} {
				p := path.Join(root, t.pkg, f)
				if st, err := fs.Stat(fsys, p); t.pkg != "" && err == nil && st.Mode().IsRegular() {
					t.catalogs = append(t.catalogs, p)
				}
			}
		}
		out = append(out, t)
	}
	s.templates = out
}

// scanMaintainers reads the maintainers of the community pipeline's config.yaml, else the owners of the
// "*" rule of CODEOWNERS, and the bundle registries config.yaml allows.
func (s *repoScan) scanMaintainers(fsys fs.FS) {
	if data, err := readHead(fsys, "config.yaml", maxCIYaml); err == nil {
		docs, _ := catalog.ParseDocuments("config.yaml", data, catalog.Limits{})
		if len(docs) > 0 {
			if m := docs[0].Value.Get("maintainers"); m != nil {
				for _, it := range m.Items() {
					if p, err := policy.ParsePrincipal(it.Str()); err == nil {
						s.maintainers = append(s.maintainers, p.String())
					}
				}
				if len(s.maintainers) > 0 {
					s.maintainersFrom = "the maintainers of config.yaml"
				}
			}
			if r := docs[0].Value.Get("allowed_bundle_registries"); r != nil {
				for _, it := range r.Items() {
					if it.Str() != "" {
						s.allowedRegistries = append(s.allowedRegistries, it.Str())
					}
				}
			}
		}
	}
	if len(s.maintainers) > 0 {
		return
	}
	for _, name := range []string{".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"} {
		data, err := readHead(fsys, name, maxCIYaml)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 || f[0] != "*" {
				continue
			}
			s.maintainers = nil
			for _, o := range f[1:] {
				if p, err := policy.ParsePrincipal(o); err == nil {
					s.maintainers = append(s.maintainers, p.String())
				}
			}
			s.maintainersFrom = "the * rule of " + name
		}
		if len(s.maintainers) > 0 {
			return
		}
	}
}

// rootPatterns groups catalog roots that are siblings into one pattern (catalogs/v4.12 … v4.22 become
// catalogs/v4.*) when the pattern matches exactly those directories; others stay as they are.
func rootPatterns(fsys fs.FS, roots []string) []string {
	byParent := map[string][]string{}
	var parents []string
	for _, r := range roots {
		p := path.Dir(r)
		if _, ok := byParent[p]; !ok {
			parents = append(parents, p)
		}
		byParent[p] = append(byParent[p], path.Base(r))
	}
	var out []string
	for _, p := range parents {
		names := byParent[p]
		if len(names) < 2 || p == "." && names[0] == "." {
			for _, n := range names {
				out = append(out, path.Join(p, n))
			}
			continue
		}
		prefix := names[0]
		for _, n := range names[1:] {
			for !strings.HasPrefix(n, prefix) {
				prefix = prefix[:len(prefix)-1]
			}
		}
		prefix = strings.TrimRightFunc(prefix, func(r rune) bool { return r >= '0' && r <= '9' })
		pattern := path.Join(p, prefix+"*")
		entries, _ := fs.ReadDir(fsys, p)
		matched := 0
		for _, sub := range subdirs(entries) {
			if ok, _ := path.Match(prefix+"*", sub); ok {
				matched++
			}
		}
		if prefix == "" || strings.ContainsAny(prefix, "*?[") || matched != len(names) {
			for _, n := range names {
				out = append(out, path.Join(p, n))
			}
			continue
		}
		out = append(out, pattern)
	}
	sort.Strings(out)
	return out
}

var errNoMaintainers = errors.New("no maintainer found: give them with --maintainer (a login or @org/team, repeatable); " +
	"init reads them from config.yaml (maintainers:) or from the * rule of CODEOWNERS when there is one")

// policyText writes the .catalogbot.yaml for what the scan found, each part with where it comes from.
func (s *repoScan) policyText(fsys fs.FS, where string) (string, error) {
	if len(s.catalogRoots) == 0 {
		return "", errors.New("no file-based catalog found (a directory of package folders, or files with an olm.package blob): " +
			"a .catalogbot.yaml needs at least one catalog root")
	}
	if len(s.maintainers) == 0 {
		return "", errNoMaintainers
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# .catalogbot.yaml written by catalog-check init from %s: review it, then commit it to the default\n", where)
	b.WriteString("# branch (catalogbot reads it from the base branch of every pull request). Every key: docs/policy.md.\n")
	b.WriteString("version: 1\n\n")
	fmt.Fprintf(&b, "# %s found.\ncatalogs:\n", plural(len(s.catalogRoots), "file-based catalog"))
	for _, r := range rootPatterns(fsys, s.catalogRoots) {
		fmt.Fprintf(&b, "  - path: %q\n", r)
	}
	fmt.Fprintf(&b, "\n# From %s.\nmaintainers:\n", s.maintainersFrom)
	for _, m := range s.maintainers {
		fmt.Fprintf(&b, "  - %q\n", m)
	}
	if len(s.bundleRoots) > 0 {
		b.WriteString("\nbundles:\n")
		for _, r := range s.bundleRoots {
			if r.bundles > 0 {
				fmt.Fprintf(&b, "  # %d bundle directories in %s", r.bundles, plural(r.pkgs, "package"))
			} else {
				b.WriteString("  # package folders (no bundle directory yet)")
			}
			if r.ciFiles > 0 {
				fmt.Fprintf(&b, "; %s: %d with reviewers, %d with fbc.catalog_mapping", plural(r.ciFiles, "ci.yaml"), r.ciReviewers, r.ciMapping)
			}
			fmt.Fprintf(&b, "\n  - path: %q\n", r.path)
			if r.ciReviewers > 0 {
				b.WriteString("    ownersFromCIYaml: true      # the reviewers of <package>/ci.yaml own the package\n")
			}
			if r.ciMapping > 0 {
				b.WriteString("    templatesFromCIYaml: true   # templates and their catalogs from fbc.catalog_mapping\n")
			}
		}
	}
	var tmpls []templateScan
	for _, t := range s.templates {
		if len(t.catalogs) > 0 {
			tmpls = append(tmpls, t)
		}
	}
	if len(tmpls) > 0 {
		b.WriteString("\n# Templates and the catalog files of their package (check which ones each renders into, and their\n# migrateLevel: bundle-object-to-csv-metadata where the catalog has olm.csv.metadata).\ntemplates:\n")
		for _, t := range tmpls {
			fmt.Fprintf(&b, "  - path: %q   # %s of %s\n    catalogs:\n", t.path, t.schema, t.pkg)
			for _, c := range t.catalogs {
				fmt.Fprintf(&b, "      - %q\n", c)
			}
		}
	}
	for _, t := range s.templates {
		if len(t.catalogs) == 0 {
			fmt.Fprintf(&b, "# %s: a template whose catalogs were not found; add it under templates: by hand.\n", t.path)
		}
	}
	if len(s.allowedRegistries) > 0 {
		b.WriteString("\n# From allowed_bundle_registries of config.yaml.\nimages:\n  allowedRegistries:\n")
		for _, r := range s.allowedRegistries {
			fmt.Fprintf(&b, "    - %q\n", r)
		}
	}
	return b.String(), nil
}

// joinRepo names a repository path for a person: under the directory given, or as is for a git revision.
func joinRepo(dir, rev, p string) string {
	if rev != "" {
		return p
	}
	return filepath.Join(dir, filepath.FromSlash(p))
}

// The rules of `catalog-check policy lint`.
const (
	rulePolicyInvalid       = "policy.invalid"
	rulePolicyRootMissing   = "policy.root-missing"
	rulePolicyRootEmpty     = "policy.root-empty"
	rulePolicyBundleMissing = "policy.bundle-root-missing"
	rulePolicyBundleEmpty   = "policy.bundle-root-empty"
	rulePolicyTemplateGone  = "policy.template-missing"
	rulePolicyNoOwner       = "policy.package-no-owner"
	rulePolicyUnknownUser   = "policy.unknown-user"
)

// policyLintRules are the rules of policy lint, for the rules reference.
func policyLintRules() []catalog.Rule {
	e, w := catalog.SeverityError, catalog.SeverityWarning
	const src = "catalog-check policy lint"
	return []catalog.Rule{
		{ID: rulePolicyInvalid, Severity: e, Source: src, Summary: "the policy file does not parse, or a key or value is not valid", Hint: "fix it on the line given; docs/policy.md describes every key"},
		{ID: rulePolicyRootMissing, Severity: e, Source: src, Summary: "a catalog root is not a directory of the repository, or a catalog pattern matches none", Hint: "correct the path or the pattern, or remove the entry"},
		{ID: rulePolicyRootEmpty, Severity: w, Source: src, Summary: "a catalog root holds no package (no package folder, no file with an olm.package blob)", Hint: "point the entry at the catalog's root directory, the one opm validate is given"},
		{ID: rulePolicyBundleMissing, Severity: e, Source: src, Summary: "a bundle root is not a directory of the repository", Hint: "correct the path, or remove the entry"},
		{ID: rulePolicyBundleEmpty, Severity: w, Source: src, Summary: "a bundle root holds no bundle directory (<package>/<version>/ with manifests/ and metadata/)", Hint: "point the entry at the directory that holds the package folders (operators, in the community layout)"},
		{ID: rulePolicyTemplateGone, Severity: e, Source: src, Summary: "a template, or a catalog file a template renders into, does not exist", Hint: "correct the path, or render the template into the file (catalog-check template render)"},
		{ID: rulePolicyNoOwner, Severity: w, Source: src, Summary: "a package of the repository has no owner: neither the policy's packages nor its ci.yaml reviewers name one, so only maintainers may change it", Hint: "list it under packages with its owners, or add reviewers to its ci.yaml (with ownersFromCIYaml)"},
		{ID: rulePolicyUnknownUser, Severity: e, Source: src, Summary: "a reviewer of a ci.yaml is not a GitHub login, or a login or team is not among those given as known (--known-users, --team-members)", Hint: "write the GitHub login (not an e-mail address or a name), or correct it"},
	}
}

// lintOptions are the known users and teams policy lint checks names against; nil when not given.
type lintOptions struct {
	knownUsers map[string]bool
	teams      *policy.TeamsFile
	// userExists, when set, asks GitHub whether a login exists (--github-users); its errors make the
	// lint "could not verify".
	userExists func(ctx context.Context, login string) (bool, error)
}

// unknownLogin says whether login is known not to exist: absent from --known-users, or a user GitHub does
// not have. A lookup that fails is kept in *failed, and the login is not reported.
func (o lintOptions) unknownLogin(ctx context.Context, login string, cache map[string]bool, failed *[]error) bool {
	l := strings.ToLower(login)
	if o.knownUsers != nil && !o.knownUsers[l] {
		return true
	}
	if o.userExists == nil {
		return false
	}
	if exists, ok := cache[l]; ok {
		return !exists
	}
	if len(cache) >= maxUserLookups {
		return false
	}
	exists, err := o.userExists(ctx, login)
	if err != nil {
		*failed = append(*failed, err)
		return false
	}
	cache[l] = exists
	return !exists
}

// maxUserLookups bounds the GitHub lookups of one lint.
const maxUserLookups = 5000

// lintPolicy checks a parsed policy against the repository fsys it governs. unverified are the user lookups
// that failed (--github-users): neither a pass nor a finding.
func lintPolicy(ctx context.Context, fsys fs.FS, pol *policy.Policy, opt lintOptions) (_ []catalog.Finding, unverified []error, _ error) {
	var out []catalog.Finding
	looked := map[string]bool{}
	file := pol.File
	add := func(rule string, sev catalog.Severity, pos catalog.Position, hint, format string, a ...any) {
		out = append(out, catalog.Finding{Rule: rule, Severity: sev, Position: pos, Message: fmt.Sprintf(format, a...), Hint: hint})
	}
	at := func(p policy.Position) catalog.Position {
		return catalog.Position{File: file, Line: p.Line, Column: p.Column}
	}
	rules := map[string]catalog.Rule{}
	for _, r := range policyLintRules() {
		rules[r.ID] = r
	}
	flag := func(rule string, pos catalog.Position, format string, a ...any) {
		add(rule, rules[rule].Severity, pos, rules[rule].Hint, format, a...)
	}

	// Catalog roots: patterns resolved on this revision, listed paths that must be directories.
	resolved, err := pol.ResolveCatalogs(fsys)
	var pe *policy.ParseError
	switch {
	case errors.As(err, &pe):
		for _, p := range pe.Problems {
			flag(rulePolicyRootMissing, catalog.Position{File: file, Line: p.Line, Column: p.Column}, "%s", p.Message)
		}
		resolved = pol
	case err != nil:
		return nil, nil, err
	}
	packages := map[string]string{} // package → where it was seen
	for _, c := range resolved.Catalogs {
		if policy.IsPattern(c.Path) {
			continue
		}
		st, err := fs.Stat(fsys, c.Path)
		if err != nil || !st.IsDir() {
			flag(rulePolicyRootMissing, at(c.Pos), "catalog root %s is not a directory of the repository", c.Path)
			continue
		}
		entries, err := fs.ReadDir(fsys, c.Path)
		if err != nil {
			return nil, nil, err
		}
		pkgs := packageFolders(fsys, c.Path, entries)
		for _, e := range entries {
			if e.Type().IsRegular() && isCatalogFileName(e.Name()) {
				pkgs = append(pkgs, packagesOf(fsys, path.Join(c.Path, e.Name()))...)
			}
		}
		if len(pkgs) == 0 {
			flag(rulePolicyRootEmpty, at(c.Pos), "catalog root %s holds no package", c.Path)
		}
		for _, p := range pkgs {
			if _, ok := packages[p]; !ok {
				packages[p] = path.Join(c.Path, p)
			}
		}
	}
	// Bundle roots, and the reviewers of their ci.yaml files.
	ciOwned := map[string]bool{}
	for _, b := range pol.Bundles {
		st, err := fs.Stat(fsys, b.Path)
		if err != nil || !st.IsDir() {
			flag(rulePolicyBundleMissing, at(b.Pos), "bundle root %s is not a directory of the repository", b.Path)
			continue
		}
		entries, err := fs.ReadDir(fsys, b.Path)
		if err != nil {
			return nil, nil, err
		}
		bundles := 0
		for _, pkg := range subdirs(entries) {
			versions, _ := fs.ReadDir(fsys, path.Join(b.Path, pkg))
			has := false
			for _, v := range subdirs(versions) {
				if isBundleDir(fsys, path.Join(b.Path, pkg, v)) {
					bundles++
					has = true
				}
			}
			if has {
				if _, ok := packages[pkg]; !ok {
					packages[pkg] = path.Join(b.Path, pkg)
				}
			}
			ci := path.Join(b.Path, pkg, "ci.yaml")
			data, err := readHead(fsys, ci, maxCIYaml)
			if err != nil || !b.CIYamlOwners {
				continue
			}
			docs, _ := catalog.ParseDocuments(ci, data, catalog.Limits{})
			if len(docs) == 0 {
				continue
			}
			rv := docs[0].Value.Get("reviewers")
			if rv == nil {
				continue
			}
			for _, it := range rv.Items() {
				login := it.Str()
				switch {
				case it.Kind != catalog.KindString || !policy.ValidLogin(login):
					flag(rulePolicyUnknownUser, it.Pos(ci), "reviewer %s of package %s is not a GitHub login as catalogbot reads them (letters, digits and hyphens, not starting with one, at most 39), so it owns nothing", it.String(), pkg)
				case opt.unknownLogin(ctx, login, looked, &unverified):
					flag(rulePolicyUnknownUser, it.Pos(ci), "reviewer %q of package %s is not a known GitHub user", login, pkg)
				default:
					ciOwned[pkg] = true
				}
			}
		}
		if bundles == 0 {
			flag(rulePolicyBundleEmpty, at(b.Pos), "bundle root %s holds no bundle directory", b.Path)
		}
	}
	// Templates and the catalog files they render into.
	for _, t := range pol.Templates {
		if st, err := fs.Stat(fsys, t.Path); err != nil || !st.Mode().IsRegular() {
			flag(rulePolicyTemplateGone, at(t.Pos), "template %s is not a file of the repository", t.Path)
		}
		for _, c := range t.Catalogs {
			if st, err := fs.Stat(fsys, c.Path); err != nil || !st.Mode().IsRegular() {
				flag(rulePolicyTemplateGone, at(t.Pos), "catalog file %s, which template %s renders into, is not a file of the repository", c.Path, t.Path)
			}
		}
	}
	// The policy's own logins and teams, against those given as known.
	principals := func(list []policy.Principal, pos catalog.Position, what string) {
		for _, p := range list {
			switch {
			case p.IsTeam() && opt.teams != nil:
				if _, err := opt.teams.TeamMembers(ctx, p.Org, p.Team); err != nil {
					flag(rulePolicyUnknownUser, pos, "%s %s is not among the teams of --team-members", what, p)
				}
			case !p.IsTeam() && opt.unknownLogin(ctx, p.Login, looked, &unverified):
				flag(rulePolicyUnknownUser, pos, "%s %s is not a known GitHub user", what, p)
			}
		}
	}
	principals(pol.Maintainers, catalog.Position{File: file, Line: 1}, "maintainer")
	names := make([]string, 0, len(pol.Packages))
	for n := range pol.Packages {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		principals(pol.Packages[n].Owners, at(pol.Packages[n].Pos), "owner of "+n+",")
	}
	// Packages nobody owns.
	var pkgs []string
	for p := range packages {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		if owners, ok := pol.Owners(p); ok && len(owners) > 0 || ciOwned[p] {
			continue
		}
		flag(rulePolicyNoOwner, catalog.Position{File: packages[p]}, "package %s has no owner: only maintainers may change it", p)
	}
	catalog.SortFindings(out)
	return out, unverified, nil
}
