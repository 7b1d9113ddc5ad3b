package change

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/load"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
)

// DocKey identifies a catalog blob by content, not by path: its schema and the
// package and name it declares.
type DocKey struct {
	Schema  string `json:"schema"`
	Package string `json:"package,omitempty"`
	Name    string `json:"name,omitempty"`
}

func (k DocKey) String() string {
	switch {
	case k.Schema == catalog.SchemaPackage:
		return fmt.Sprintf("package %q", k.Package)
	case k.Schema == catalog.SchemaDeprecation:
		return fmt.Sprintf("deprecations of package %q", k.Package)
	case k.Name == "":
		return fmt.Sprintf("%s blob of package %q", k.Schema, k.Package)
	}
	kind := strings.TrimPrefix(k.Schema, "olm.")
	return fmt.Sprintf("%s %q of package %q", kind, k.Name, k.Package)
}

// keyOf gives a blob its identity. olm.package blobs are keyed by the package
// they declare; deprecations by their package (there is one per package).
func keyOf(d *catalog.Doc) DocKey {
	switch d.Schema {
	case catalog.SchemaPackage:
		return DocKey{Schema: d.Schema, Package: d.Name, Name: d.Name}
	case catalog.SchemaDeprecation:
		return DocKey{Schema: d.Schema, Package: d.Package}
	}
	return DocKey{Schema: d.Schema, Package: d.Package, Name: d.Name}
}

// packageOf is the package a blob belongs to ("" when it names none).
func packageOf(d *catalog.Doc) string { return keyOf(d).Package }

// ChangeKind says what happened to a blob between base and head.
type ChangeKind string

const (
	Added    ChangeKind = "added"
	Removed  ChangeKind = "removed"
	Modified ChangeKind = "modified"
)

// DocChange is one blob that differs between base and head. Base is nil for an
// added blob, Head for a removed one. Positions in Base are in the base
// revision, in Head in the head revision; both relative to the catalog root.
type DocChange struct {
	Key  DocKey
	Kind ChangeKind
	Base *catalog.Doc
	Head *catalog.Doc
}

// Touch is one place where a pull request touches a package: the start of a
// blob in a changed file (in the head revision, or in the base revision when
// the blob was removed).
type Touch struct {
	Pos catalog.Position
	// InBase is set when Pos is in the base revision (the file or blob is gone in head).
	InBase bool
}

// CatalogChange is what a pull request changes in one catalog root.
type CatalogChange struct {
	// Root is the catalog's directory, relative to the repository root.
	Root string
	// Head is the head revision's catalog as far as judging the touched
	// packages needs (catalog.LoadPartial): every blob of the touched
	// packages, of the packages their bundles require, of packages declared
	// twice, of no package, and every file the pull request changed. Its
	// positions are relative to Root: use RepoPath to turn them into
	// repository paths. HeldBefore answers for any package.
	Head *catalog.Catalog
	// Docs are the blobs added, removed or modified, ordered by key.
	Docs []DocChange
	// Touched maps every package the pull request touches to where: any blob
	// of it in a changed file, in base or head. A blob that names no package
	// is listed under "".
	Touched map[string][]Touch
	// NewPackages are touched packages that no blob of the base revision names.
	NewPackages map[string]bool
	// Files are the changed files of this root.
	Files []FileChange
	// Refused are findings about changed files that were not read at all (over the policy's
	// limits.maxFileBytes); the validation check reports them.
	Refused []catalog.Finding
	// Causes explains files whose content appears in or disappears from the loaded catalog although the
	// files themselves did not change (an .indexignore was added, edited or removed, say), by root-relative
	// path. Checks put their findings about such content on the cause's changed line.
	Causes map[string]Cause

	// lines are the changed lines of each changed head file (root-relative), for anchoring findings.
	lines map[string]fileLines
	// spans are the first lines of the head blobs of each file, sorted; made when first needed.
	spans map[string][]int
	// headPackages are the packages any blob of the head catalog belongs to, from the file summaries;
	// basePackages likewise for the base catalog.
	headPackages, basePackages map[string]bool
	// Absent are the root-relative files whose blobs the repository lacks (a partial clone), unchanged by the
	// pull request and left out of Head.
	Absent []string
	// absentPackages are, for absent files whose blob the file summary index knows, the packages they hold.
	absentPackages map[string][]string
}

// hideAbsent leaves out of fsys the files whose blobs the repository lacks, recording them in cc.Absent;
// one that the pull request changed is an error naming it (the change cannot be judged without it).
func hideAbsent(ctx context.Context, cc *CatalogChange, fsys fs.FS, changed map[string]bool, side string, index *load.SummaryIndex) (fs.FS, error) {
	hidden := map[string]bool{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if _, err := d.Info(); err != nil && errors.Is(err, gitfs.ErrObjectMissing) {
			if changed[p] {
				return fmt.Errorf("could not verify %s of the %s revision: %w", cc.RepoPath(p), side, err)
			}
			hidden[p] = true
			if !slices.Contains(cc.Absent, p) {
				cc.Absent = append(cc.Absent, p)
			}
			// The summary index may know what the blob holds (it is keyed by content, not by path).
			if key, ok := contentKey(fsys, p); ok && index != nil {
				if sum, ok := index.Get(key); ok {
					if cc.absentPackages == nil {
						cc.absentPackages = map[string][]string{}
					}
					cc.absentPackages[p] = sum.Packages
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(hidden) == 0 {
		return fsys, nil
	}
	sort.Strings(cc.Absent)
	return exceptFiles(fsys, hidden), nil
}

// neededAbsent is an error when a file left out as absent may hold a package the pull request touches in this
// root: the file summary index says so when it knows the blob; else, by the community layout, a directory of
// its path is named after the package. Other absent files cannot concern the change (their content is the same
// on both sides).
func (c *CatalogChange) neededAbsent() error {
	for _, p := range c.Absent {
		if pkgs, ok := c.absentPackages[p]; ok {
			for _, pkg := range pkgs {
				if _, touched := c.Touched[pkg]; touched && pkg != "" {
					return fmt.Errorf("could not verify package %q: %s holds blobs of it and is left out: %w", pkg, c.RepoPath(p), gitfs.ErrObjectMissing)
				}
			}
			continue
		}
		for _, seg := range strings.Split(path.Dir(p), "/") {
			if _, ok := c.Touched[seg]; ok && seg != "" {
				return fmt.Errorf("could not verify package %q: %s, which may hold blobs of it, is left out: %w", seg, c.RepoPath(p), gitfs.ErrObjectMissing)
			}
		}
	}
	return nil
}

// mayHoldAbsent reports whether a file left out as absent may hold package pkg (the summary index says so, or,
// when it does not know the blob, a directory of its path is named after it).
func (c *CatalogChange) mayHoldAbsent(pkg string) bool {
	for _, p := range c.Absent {
		if pkgs, ok := c.absentPackages[p]; ok {
			if slices.Contains(pkgs, pkg) {
				return true
			}
			continue
		}
		if slices.Contains(strings.Split(path.Dir(p), "/"), pkg) {
			return true
		}
	}
	return false
}

// Cause is the changed file that makes an unchanged file start or stop being loaded.
type Cause struct {
	// File is the repository path of the changed file ("" when no single file explains it).
	File string
	// Line is the first line of File the pull request changed in head; 0 when File is gone from head.
	Line int
	// Appeared is true when the content is loaded in head and was not in base.
	Appeared bool
}

// Position is where a finding about content moved in or out of the loaded catalog goes.
func (c Cause) Position() catalog.Position { return catalog.Position{File: c.File, Line: c.Line} }

// Describe says, for a message, what the cause did to file (a repository path).
func (c Cause) Describe(file string) string {
	verb := "stops being loaded"
	if c.Appeared {
		verb = "starts being loaded"
	}
	if c.File == "" {
		return fmt.Sprintf("%s %s by opm", file, verb)
	}
	return fmt.Sprintf("this change to %s means %s %s by opm", c.File, file, verb)
}

// RepoPath turns a path relative to the catalog root into a repository path.
func (c *CatalogChange) RepoPath(p string) string { return path.Join(c.Root, p) }

// TouchedPackages returns the touched package names, sorted ("" first when present).
func (c *CatalogChange) TouchedPackages() []string {
	out := make([]string, 0, len(c.Touched))
	for p := range c.Touched {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// AddedToChannels returns the bundles that the pull request adds to a channel:
// new bundle blobs, and existing bundles given a new channel entry. Each is a
// version users will upgrade to, so its CRDs are compared with every bundle it
// upgrades from.
func (c *CatalogChange) AddedToChannels() []BundleRef {
	seen := map[BundleRef]bool{}
	var out []BundleRef
	add := func(r BundleRef) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, d := range c.Docs {
		switch {
		case d.Key.Schema == catalog.SchemaBundle && d.Kind == Added:
			add(BundleRef{Package: d.Key.Package, Bundle: d.Key.Name})
		case d.Key.Schema == catalog.SchemaChannel && d.Head != nil:
			old := map[string]bool{}
			if d.Base != nil {
				for _, n := range EntryNames(&d.Base.Value) {
					old[n] = true
				}
			}
			for _, n := range EntryNames(&d.Head.Value) {
				if !old[n] {
					add(BundleRef{Package: d.Key.Package, Bundle: n})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		return out[i].Bundle < out[j].Bundle
	})
	return out
}

// BundleRef names a bundle of a package.
type BundleRef struct{ Package, Bundle string }

// EntryNames reads the entry names of an olm.channel blob, skipping entries
// whose name is not a string (validation reports those).
func EntryNames(ch *catalog.Value) []string {
	entries := ch.Get("entries")
	if entries == nil || entries.Kind != catalog.KindArray {
		return nil
	}
	items := entries.Items()
	names := make([]string, 0, len(items))
	for i := range items {
		if n := items[i].Get("name"); n != nil && n.Kind == catalog.KindString {
			names = append(names, n.Str())
		}
	}
	return names
}

// ChangeSet is everything a pull request changes, by content.
type ChangeSet struct {
	Catalogs []*CatalogChange
	// OtherFiles changed outside every catalog root and bundle root.
	OtherFiles []FileChange
	// Bundles are the bundle directories changed under the policy's bundle roots; PackageFiles the other
	// changed files of their package folders.
	Bundles      []*BundleChange
	PackageFiles []PackageFileChange
	ciOwners     bundleOwners
	// templatePackages are, for each changed template file of the policy's templates, the packages it
	// renders on either side (sorted; empty when none).
	templatePackages map[string][]string
	// memos are answers computed once for every check that asks (the derivation, the preview), kept here by
	// the packages that compute them (see Memo).
	memoMu sync.Mutex
	memos  map[string]*Memo
	// bundleDirs is what the checks learn of bundle directories (pr.BundleDirs, else one for this run).
	bundleDirs *template.DirFactsCache
	// baseDocs are the base's catalog files the templates check and the preview parsed, shared.
	baseDocs *BaseDocs
	// dirRenders are what bundle directories rendered to, shared by the templates check and the preview.
	dirRenders *template.DirRenders
}

// BundleDirFacts is what the checks of pr learn of bundle directories, shared between them.
func BundleDirFacts(pr *PullRequest) *template.DirFactsCache {
	if pr.Changes != nil {
		return pr.Changes.bundleDirs
	}
	return pr.BundleDirs
}

// BundleDirRenders is what bundle directories rendered to in the checks of pr, shared between them (nil
// before Prepare: nothing shared).
func BundleDirRenders(pr *PullRequest) *template.DirRenders {
	if pr.Changes != nil {
		return pr.Changes.dirRenders
	}
	return nil
}

// Prepare computes pr.Changes once, before the checks run. The runner calls it;
// a caller running a check on its own calls it first.
func Prepare(ctx context.Context, pr *PullRequest) error {
	if pr.Changes != nil {
		return nil
	}
	if pr.Policy == nil {
		return errors.New("no policy: the base revision's policy (or the default) must be given")
	}
	cs := &ChangeSet{bundleDirs: pr.BundleDirs, baseDocs: newBaseDocs(), dirRenders: template.NewDirRenders().WithStore(pr.BundleRenders)}
	if cs.bundleDirs == nil {
		cs.bundleDirs = template.NewDirFactsCache(0)
	}
	roots := make([]string, 0, len(pr.Policy.Catalogs))
	for _, c := range pr.Policy.Catalogs {
		roots = append(roots, c.Path)
	}
	byRoot := map[string][]FileChange{}
	files, err := prepareBundles(ctx, pr, cs, pr.Files)
	if err != nil {
		return err
	}
	for _, f := range files {
		root, ok := rootOf(roots, f.Path)
		if !ok && f.OldPath != "" {
			root, ok = rootOf(roots, f.OldPath)
		}
		if !ok {
			cs.OtherFiles = append(cs.OtherFiles, f)
			continue
		}
		byRoot[root] = append(byRoot[root], f)
		// A rename across roots changes both.
		if f.OldPath != "" {
			if old, ok := rootOf(roots, f.OldPath); ok && old != root {
				byRoot[old] = append(byRoot[old], f)
			}
		}
	}
	// The packages of changed bundle directories are judged in every catalog too: crd-safety compares a new
	// bundle directory with the catalog bundles it upgrades from.
	var bundlePackages []string
	for _, b := range cs.Bundles {
		if b.Package != "" {
			bundlePackages = append(bundlePackages, b.Package)
		}
	}
	for _, root := range roots {
		cc, err := diffRoot(ctx, pr, root, byRoot[root], bundlePackages)
		if err != nil {
			return fmt.Errorf("catalog %s: %w", root, err)
		}
		cs.Catalogs = append(cs.Catalogs, cc)
	}
	// Owners from ci.yaml, for every package the pull request touches: bundle directories, package folders
	// and catalog blobs alike.
	cs.templatePackages = changedTemplatePackages(ctx, pr, cs.OtherFiles)
	touched := cs.touchedPackages()
	if cs.ciOwners, err = readCIOwners(pr, touched); err != nil {
		return err
	}
	if err := addFolderOwners(ctx, pr, cs.ciOwners, touched, cs.touchedFolders()); err != nil {
		return err
	}
	pr.Changes = cs
	return nil
}

// touchedFolders lists the package folder names the changes concern, sorted: those of changed bundle
// directories and package folders, and the folder under its catalog root of every changed catalog file
// (catalogs/v4.20/konflux/catalog.yaml is in folder konflux).
func (cs *ChangeSet) touchedFolders() []string {
	set := map[string]bool{}
	for _, b := range cs.Bundles {
		set[b.Folder] = true
	}
	for _, f := range cs.PackageFiles {
		set[f.Package] = true
	}
	for _, cc := range cs.Catalogs {
		for _, f := range cc.Files {
			for _, p := range f.Paths() {
				rel := strings.TrimPrefix(p, cc.Root+"/")
				if folder, _, ok := strings.Cut(rel, "/"); ok && rel != p {
					set[folder] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		if f != "" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// touchedPackages lists every package the changes concern, sorted: those of changed bundle directories and
// package folders, and those whose catalog blobs changed.
func (cs *ChangeSet) touchedPackages() []string {
	set := map[string]bool{}
	for _, p := range cs.bundlePackages() {
		set[p] = true
	}
	for _, cc := range cs.Catalogs {
		for p := range cc.Touched {
			if p != "" {
				set[p] = true
			}
		}
	}
	for _, pkgs := range cs.templatePackages {
		for _, p := range pkgs {
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// rootOf returns the catalog root that holds p, the deepest when roots nest.
func rootOf(roots []string, p string) (string, bool) {
	best, found := "", false
	for _, r := range roots {
		if r == "." || p == r || strings.HasPrefix(p, r+"/") {
			if !found || len(r) > len(best) {
				best, found = r, true
			}
		}
	}
	return best, found
}

// relTo returns p relative to root, and whether p lies inside root.
func relTo(root, p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if root == "." {
		return p, true
	}
	if strings.HasPrefix(p, root+"/") {
		return p[len(root)+1:], true
	}
	return "", false
}

// subFS is fs.Sub that keeps the tree's content keys (git blob hashes), so
// the catalog loader can reuse parses across revisions and pull requests.
func subFS(fsys fs.FS, root string) (fs.FS, error) {
	if root == "." {
		return fsys, nil
	}
	sub, err := fs.Sub(fsys, root)
	if err != nil {
		return nil, err
	}
	if k, ok := fsys.(load.ContentKeyer); ok {
		return keyedSub{FS: sub, keys: k, root: root}, nil
	}
	return sub, nil
}

// rootFS is the catalog root of a revision: an empty catalog when the revision has no directory there (git
// keeps no empty folder, so a pull request that removes every file of a root removes the root).
func rootFS(fsys fs.FS, root string) (fs.FS, error) {
	if root != "." {
		st, err := fs.Stat(fsys, root)
		if errors.Is(err, fs.ErrNotExist) {
			return emptyFS{}, nil
		}
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", root)
		}
	}
	return subFS(fsys, root)
}

// emptyFS is a directory with nothing in it.
type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return emptyDir{}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

type emptyDir struct{}

func (emptyDir) Stat() (fs.FileInfo, error) { return emptyDirInfo{}, nil }
func (emptyDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: fs.ErrInvalid}
}
func (emptyDir) Close() error { return nil }
func (emptyDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n > 0 {
		return nil, io.EOF
	}
	return nil, nil
}

type emptyDirInfo struct{}

func (emptyDirInfo) Name() string       { return "." }
func (emptyDirInfo) Size() int64        { return 0 }
func (emptyDirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (emptyDirInfo) ModTime() time.Time { return time.Time{} }
func (emptyDirInfo) IsDir() bool        { return true }
func (emptyDirInfo) Sys() any           { return nil }

type keyedSub struct {
	fs.FS
	keys load.ContentKeyer
	root string
}

func (s keyedSub) ContentKey(name string) (string, bool) {
	return s.keys.ContentKey(path.Join(s.root, name))
}

func (s keyedSub) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(s.FS, name) }
func (s keyedSub) ReadFile(name string) ([]byte, error)       { return fs.ReadFile(s.FS, name) }
func (s keyedSub) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(s.FS, name) }

// diffRoot reads, from the head revision, what judging the touched packages
// needs (catalog.LoadPartial: their blobs, the catalog-wide ones, and from the
// file summaries of the index which package every other file holds) and,
// from the base revision, only the files the pull request changed: blobs in
// unchanged files are the same on both sides, so comparing the blobs of the
// changed files is the exact content diff. Its cost follows the change, not
// the catalog.
func diffRoot(ctx context.Context, pr *PullRequest, root string, files []FileChange, alsoJudged []string) (*CatalogChange, error) {
	cc := &CatalogChange{Root: root, Files: files, Touched: map[string][]Touch{}, NewPackages: map[string]bool{}, Causes: map[string]Cause{}}
	headFS, err := rootFS(pr.Head.FS, root)
	if err != nil {
		return nil, err
	}
	if headFS, err = refuseOversized(cc, headFS, pr.Policy.Limits.MaxFileBytes); err != nil {
		return nil, err
	}

	changedHead := map[string]bool{} // root-relative paths changed in head
	changedBase := map[string]bool{} // root-relative paths changed in base
	for _, f := range files {
		if f.Status != FileDeleted {
			if rel, ok := relTo(root, f.Path); ok {
				changedHead[rel] = true
			}
		}
		if f.Status != FileAdded {
			old := f.Path
			if f.OldPath != "" {
				old = f.OldPath
			}
			if rel, ok := relTo(root, old); ok {
				changedBase[rel] = true
			}
		}
	}
	baseFS, err := rootFS(pr.Base.FS, root)
	if err != nil {
		return nil, err
	}
	// A partial clone lacks blobs nobody asked for. Those of files the pull request did not change are the same
	// on both sides: they are left out (and named in Absent); a changed one cannot be judged without.
	if headFS, err = hideAbsent(ctx, cc, headFS, changedHead, "head", pr.Limits.Index); err != nil {
		return nil, err
	}
	if baseFS, err = hideAbsent(ctx, cc, baseFS, changedBase, "base", pr.Limits.Index); err != nil {
		return nil, err
	}

	headSet, err := load.ListFiles(ctx, headFS, pr.Limits)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && len(files) == 0 {
			cc.Head = catalog.NewCatalog(nil, nil)
			return cc, nil
		}
		return nil, fmt.Errorf("loading head catalog: %w", err)
	}
	// What opm loads is decided by more than the changed paths: an .indexignore anywhere, a rename into or out
	// of an ignored folder. Compare the loaded file sets of both sides, so that every file whose content enters
	// or leaves the loaded catalog counts as changed, whatever rule put it there.
	if err := loadedDifferences(ctx, pr, cc, baseFS, headFS, headSet, changedBase, changedHead); err != nil {
		return nil, err
	}
	computeChangedLines(ctx, cc, baseFS, headFS, pr.Lines)

	var baseDocs []catalog.Doc
	if len(changedBase) > 0 {
		baseDocs, _, err = load.ReadFS(ctx, onlyFiles(baseFS, changedBase), pr.Limits)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading changed files of the base revision: %w", err)
		}
	}
	baseChanged := make([]*catalog.Doc, len(baseDocs))
	basePackages := map[string]bool{}
	// The packages of the changed base blobs and those asked for; the packages of the changed head files are
	// added by LoadPartial.
	judged := append([]string(nil), alsoJudged...)
	for i := range baseDocs {
		baseChanged[i] = &baseDocs[i]
		p := packageOf(&baseDocs[i])
		if !basePackages[p] {
			basePackages[p] = true
			judged = append(judged, p)
		}
	}

	var outline *load.Outline
	cc.Head, outline, err = catalog.LoadPartial(ctx, headFS, headSet, catalog.PartialOptions{Packages: judged, Files: changedHead, PackagesOfFiles: true}, pr.Limits)
	if err != nil {
		return nil, fmt.Errorf("loading head catalog: %w", err)
	}
	cc.headPackages = map[string]bool{}
	for i, f := range outline.Files {
		for _, p := range outline.Summaries[i].Packages {
			cc.headPackages[p] = true
			if !changedHead[f.Path] {
				basePackages[p] = true // an unchanged file is the same in base
			}
		}
	}
	var headChanged []*catalog.Doc
	headDocs := cc.Head.Docs()
	for i := range headDocs {
		if d := &headDocs[i]; changedHead[d.Pos.File] {
			headChanged = append(headChanged, d)
		}
	}

	for _, d := range headChanged {
		p := packageOf(d)
		cc.Touched[p] = append(cc.Touched[p], Touch{Pos: d.Pos})
	}
	for _, d := range baseChanged {
		p := packageOf(d)
		cc.Touched[p] = append(cc.Touched[p], Touch{Pos: d.Pos, InBase: true})
	}
	// A changed file without blobs (emptied, comments only, unparsable)
	// still touches the packages its other side held; a file with no blob on
	// either side touches no package and is reported by the checks through Files.
	for p := range cc.Touched {
		if p != "" && !basePackages[p] {
			cc.NewPackages[p] = true
		}
	}
	delete(basePackages, "")
	cc.basePackages = basePackages
	if err := cc.neededAbsent(); err != nil {
		return nil, err
	}
	cc.Docs = pairDocs(baseChanged, headChanged)
	return cc, nil
}

// HeldInBase reports whether the base revision's catalog holds a blob of pkg.
func (c *CatalogChange) HeldInBase(pkg string) bool { return c.basePackages[pkg] }

// NewToRepository reports whether the base revision has never held package pkg: no catalog of any root holds a
// blob of it and no bundle root has a folder of that name (where its ci.yaml and bundle directories live). A
// package missing from one catalog only (promoted to a new release's catalog, or given its first catalog) is
// not new.
func NewToRepository(pr *PullRequest, pkg string) bool {
	if pr.Changes != nil {
		for _, cc := range pr.Changes.Catalogs {
			if cc.HeldInBase(pkg) || cc.mayHoldAbsent(pkg) {
				return false
			}
		}
	}
	if !pkgtemplate.ValidFolder(pkg) {
		return true
	}
	for _, r := range pr.Policy.Bundles {
		if dirExists(pr.Base.FS, path.Join(r.Path, pkg)) {
			return false
		}
	}
	return true
}

// HeldBefore reports whether the head catalog holds a blob of pkg that the
// base revision already held: the package is in head and not new.
func (c *CatalogChange) HeldBefore(pkg string) bool {
	return c.headPackages[pkg] && !c.NewPackages[pkg]
}

// pairDocs pairs the blobs of the changed files by key, in load order when a
// key repeats, and keeps the pairs that differ.
func pairDocs(base, head []*catalog.Doc) []DocChange {
	baseBy := map[DocKey][]*catalog.Doc{}
	var keys []DocKey
	for _, d := range base {
		k := keyOf(d)
		if _, ok := baseBy[k]; !ok {
			keys = append(keys, k)
		}
		baseBy[k] = append(baseBy[k], d)
	}
	headBy := map[DocKey][]*catalog.Doc{}
	for _, d := range head {
		k := keyOf(d)
		if _, ok := baseBy[k]; !ok {
			if _, ok := headBy[k]; !ok {
				keys = append(keys, k)
			}
		}
		headBy[k] = append(headBy[k], d)
	}
	var out []DocChange
	for _, k := range keys {
		b, h := baseBy[k], headBy[k]
		n := max(len(b), len(h))
		for i := range n {
			switch {
			case i >= len(b):
				out = append(out, DocChange{Key: k, Kind: Added, Head: h[i]})
			case i >= len(h):
				out = append(out, DocChange{Key: k, Kind: Removed, Base: b[i]})
			case !SameValue(&b[i].Value, &h[i].Value):
				out = append(out, DocChange{Key: k, Kind: Modified, Base: b[i], Head: h[i]})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		if a.Schema != b.Schema {
			return a.Schema < b.Schema
		}
		return a.Name < b.Name
	})
	return out
}

// SameValue compares two values as JSON data: positions and the order of
// object keys do not matter.
func SameValue(a, b *catalog.Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case catalog.KindObject:
		af := a.Fields()
		if len(af) != b.Len() {
			return false
		}
		for i := range af {
			bv := b.Get(af[i].Key)
			if bv == nil || !SameValue(&af[i].Value, bv) {
				return false
			}
		}
		return true
	case catalog.KindArray:
		ai, bi := a.Items(), b.Items()
		if len(ai) != len(bi) {
			return false
		}
		for i := range ai {
			if !SameValue(&ai[i], &bi[i]) {
				return false
			}
		}
		return true
	}
	return a.Str() == b.Str()
}

// ruleFileTooLarge: a changed catalog file over the policy's limits.maxFileBytes.
const ruleFileTooLarge = "limits.file-too-large"

// refuseOversized keeps changed files larger than maxBytes from being read at all: each is a finding, and the
// head tree is shown without it. Unchanged files keep the loader's own bound: a pull request is judged on what it
// brings, and the base branch's files were accepted before.
func refuseOversized(cc *CatalogChange, headFS fs.FS, maxBytes int64) (fs.FS, error) {
	if maxBytes <= 0 {
		return headFS, nil
	}
	hidden := map[string]bool{}
	for _, f := range cc.Files {
		if f.Status == FileDeleted {
			continue
		}
		rel, ok := relTo(cc.Root, f.Path)
		if !ok {
			continue
		}
		info, err := fs.Stat(headFS, rel)
		if err != nil || !info.Mode().IsRegular() || info.Size() <= maxBytes {
			continue // missing, a directory or a link: the loader reports those as it always does
		}
		hidden[rel] = true
		cc.Refused = append(cc.Refused, catalog.Finding{Rule: ruleFileTooLarge, Severity: catalog.SeverityError,
			Position: catalog.Position{File: cc.RepoPath(rel)},
			Message: fmt.Sprintf("%s is %d bytes, over the %d bytes a pull request may bring in one catalog file (limits.maxFileBytes); it was not read, so nothing in it was checked",
				cc.RepoPath(rel), info.Size(), maxBytes),
			Hint: Rules()[0].Hint})
	}
	if len(hidden) == 0 {
		return headFS, nil
	}
	return exceptFiles(headFS, hidden), nil
}

// loadedDifferences adds to changedBase and changedHead every file that is loaded on one side and not on the
// other, or loaded on both with other content, and records in cc.Causes why a file that the pull request did
// not change moved in or out of the loaded catalog. Without content keys (a plain directory), files loaded on
// both sides count as changed only when their path changed.
func loadedDifferences(ctx context.Context, pr *PullRequest, cc *CatalogChange, baseFS, headFS fs.FS, headSet load.FileSet, changedBase, changedHead map[string]bool) error {
	baseSet, err := load.ListFiles(ctx, baseFS, pr.Limits)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("listing base catalog: %w", err)
	}
	// The content key of every loaded file, by path (empty when the tree names no contents).
	_, keyed := headFS.(load.ContentKeyer)
	inBase := make(map[string]string, len(baseSet.Files))
	for _, f := range baseSet.Files {
		inBase[f.Path] = keyOfFile(baseFS, f, keyed)
	}
	inHead := make(map[string]string, len(headSet.Files))
	for _, f := range headSet.Files {
		inHead[f.Path] = keyOfFile(headFS, f, keyed)
	}
	sameContent := func(p string) bool {
		bk, hk := inBase[p], inHead[p]
		return bk != "" && bk == hk
	}
	var moved []string // unchanged paths whose loaded state changed
	for _, f := range headSet.Files {
		if changedHead[f.Path] {
			continue
		}
		if _, ok := inBase[f.Path]; !ok || !sameContent(f.Path) {
			changedHead[f.Path] = true
			if !ok && !changedBase[f.Path] {
				moved = append(moved, f.Path)
			}
		}
	}
	for _, f := range baseSet.Files {
		if changedBase[f.Path] {
			continue
		}
		if _, ok := inHead[f.Path]; !ok || !sameContent(f.Path) {
			changedBase[f.Path] = true
			if !ok && !changedHead[f.Path] {
				moved = append(moved, f.Path)
			}
		}
	}
	if len(moved) == 0 {
		return nil
	}
	// The changed .indexignore files of this root, deepest first: the one nearest a file explains it.
	var ignores []string
	for _, f := range cc.Files {
		for _, p := range f.Paths() {
			if rel, ok := relTo(cc.Root, p); ok && path.Base(rel) == ".indexignore" {
				ignores = append(ignores, rel)
			}
		}
	}
	sort.Slice(ignores, func(i, j int) bool { return len(ignores[i]) > len(ignores[j]) })
	for _, p := range moved {
		_, appeared := inHead[p]
		c := Cause{Appeared: appeared}
		for _, ig := range ignores {
			if dir := path.Dir(ig); dir == "." || strings.HasPrefix(p, dir+"/") {
				c.File = cc.RepoPath(ig)
				c.Line = firstChangedLine(ctx, baseFS, headFS, ig)
				break
			}
		}
		cc.Causes[p] = c
	}
	return nil
}

// keyOfFile is the content key of a listed file, "" when the tree names no contents.
func keyOfFile(fsys fs.FS, f load.CatalogFile, keyed bool) string {
	if !keyed {
		return ""
	}
	if f.Key != "" {
		return f.Key
	}
	k, _ := contentKey(fsys, f.Path)
	return k
}

// contentKey is the content key of name in fsys, when fsys names contents.
func contentKey(fsys fs.FS, name string) (string, bool) {
	k, ok := fsys.(load.ContentKeyer)
	if !ok {
		return "", false
	}
	return k.ContentKey(name)
}

// maxIgnoreCompare bounds the .indexignore files compared for their changed line.
const maxIgnoreCompare = 1 << 20

// firstChangedLine is the first line of name in head the pull request changed (1-based), the line next to
// where lines were removed when it only removed some, and 0 when name is gone from head.
func firstChangedLine(ctx context.Context, baseFS, headFS fs.FS, name string) int {
	head, ok := ReadCapped(headFS, name, maxIgnoreCompare)
	if !ok || ctx.Err() != nil {
		return 0
	}
	base, _ := ReadCapped(baseFS, name, maxIgnoreCompare)
	fl := changedLinesOf(base, head)
	switch {
	case len(fl.changed) > 0:
		return fl.changed[0]
	case len(fl.deletedAt) > 0:
		return max(1, min(fl.deletedAt[0], fl.lines))
	}
	return 1
}

// changedTemplatePackages finds, among files changed outside the catalogs and bundle roots, the templates of
// the policy, and names the packages each renders: for a basic template the packages its entries declare, for
// a semver template (which names none) the packages of the catalog files it renders into; both sides count, so
// a template cannot be moved from one package to another by its owner alone.
func changedTemplatePackages(ctx context.Context, pr *PullRequest, files []FileChange) map[string][]string {
	out := map[string][]string{}
	for _, f := range files {
		for _, p := range f.Paths() {
			for _, tm := range pr.Policy.Templates {
				if tm.Path != p {
					continue
				}
				set := map[string]bool{}
				for _, rev := range []Revision{pr.Base, pr.Head} {
					for _, pkg := range templateRevPackages(ctx, pr, rev.FS, tm) {
						set[pkg] = true
					}
				}
				pkgs := make([]string, 0, len(set))
				for pkg := range set {
					pkgs = append(pkgs, pkg)
				}
				sort.Strings(pkgs)
				out[p] = pkgs
			}
		}
	}
	return out
}

// templateRevPackages names the packages a policy template renders in one revision.
func templateRevPackages(ctx context.Context, pr *PullRequest, fsys fs.FS, tm policy.Template) []string {
	maxFile := pkgtemplate.MaxFileOf(pr.Limits)
	var out []string
	data, err := pkgtemplate.ReadFileCapped(fsys, tm.Path, maxFile)
	if err == nil && data != nil {
		if t, _ := template.Parse(tm.Path, data, pr.Limits); t != nil {
			for _, e := range t.Entries {
				switch {
				case e.Schema == catalog.SchemaPackage && e.Name != "":
					out = append(out, e.Name)
				case e.Package != "":
					out = append(out, e.Package)
				}
			}
		}
	}
	// A semver template names no package: the catalogs it renders into say which.
	for _, c := range tm.Catalogs {
		if ctx.Err() != nil {
			break
		}
		data, err := pkgtemplate.ReadFileCapped(fsys, c.Path, maxFile)
		if err != nil || data == nil {
			continue
		}
		docs, _ := catalog.ParseFile(c.Path, data, pr.Limits)
		for i := range docs {
			if p := packageOf(&docs[i]); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func dirExists(fsys fs.FS, name string) bool {
	info, err := fs.Stat(fsys, name)
	return err == nil && info.IsDir()
}

// Memo is one answer about a change set computed once for every check that asks: the packages above this one
// keep what they derive from the change set (the derivation, the preview) here, so that it lives exactly as
// long as the change set.
type Memo struct {
	once    sync.Once
	started atomic.Bool
	v       any
}

// Memo is the change set's memo of that key, made on first use.
func (cs *ChangeSet) Memo(key string) *Memo {
	cs.memoMu.Lock()
	defer cs.memoMu.Unlock()
	if cs.memos == nil {
		cs.memos = map[string]*Memo{}
	}
	m := cs.memos[key]
	if m == nil {
		m = &Memo{}
		cs.memos[key] = m
	}
	return m
}

// Do returns the memo's value, computing it with f on the first call.
func (m *Memo) Do(f func() any) any {
	m.started.Store(true)
	m.once.Do(func() { m.v = f() })
	return m.v
}

// Started reports whether Do was called (the value may still be being computed).
func (m *Memo) Started() bool { return m.started.Load() }

// Rules lists the rule ids this package emits itself: a catalog file too large to read.
func Rules() []catalog.Rule {
	return []catalog.Rule{{ID: ruleFileTooLarge, Severity: catalog.SeverityError, Source: "policy limits.maxFileBytes",
		Summary: "a catalog file the pull request adds or changes is larger than the policy allows; it is not read",
		Hint:    "split the package's content into several files (opm reads every file of the catalog), or ask a maintainer to raise limits.maxFileBytes in the base branch's .catalogbot.yaml"}}
}

// TemplatePackages are the packages a changed template file of the policy renders on either side (sorted;
// empty when none); false when file is no changed template of the policy.
func (cs *ChangeSet) TemplatePackages(file string) ([]string, bool) {
	pkgs, ok := cs.templatePackages[file]
	return pkgs, ok
}

// TemplatePackagesOf is TemplatePackages without telling a template that renders nothing from no template.
func (cs *ChangeSet) TemplatePackagesOf(file string) []string { return cs.templatePackages[file] }
