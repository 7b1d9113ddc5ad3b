package template

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/catalog/load"
)

// ResolverFunc adapts a function to a Resolver.
type ResolverFunc func(ctx context.Context, image string) (*Resolved, error)

// Resolve implements Resolver.
func (f ResolverFunc) Resolve(ctx context.Context, image string) (*Resolved, error) {
	return f(ctx, image)
}

// CatalogResolver resolves images whose olm.bundle blob a catalog already holds. By default only
// digest-pinned references are taken from it: a digest names the image's content, so its blob is what
// rendering the image gives. ByTag is a view that takes references by tag too, verbatim: the blob is what
// the catalog published for that reference, though the tag may have moved since (the Resolved says so, and
// rendering warns, template.tag-reference).
type CatalogResolver struct {
	level string
	byTag bool
	// idx is shared by the resolvers AtLevel and ByTag make: the catalogs are read once for every view.
	idx *catalogIndex
}

type catalogIndex struct {
	mu       sync.Mutex
	blobs    map[string]catalogBlob
	packages map[[2]string]*PackageMeta // (file, package) -> its olm.package blob's icon and description
	files    []string                   // the catalog files added, for messages
}

type catalogBlob struct {
	value *catalog.Value
	pos   catalog.Position
}

// NewCatalogResolver makes a resolver answering at migrate level level ("", "none" or
// "bundle-object-to-csv-metadata").
func NewCatalogResolver(level string) (*CatalogResolver, error) {
	switch level {
	case "", "none", "bundle-object-to-csv-metadata":
	default:
		return nil, fmt.Errorf("unknown migrate level %q (known: none, bundle-object-to-csv-metadata)", level)
	}
	return &CatalogResolver{level: level, idx: &catalogIndex{blobs: map[string]catalogBlob{}, packages: map[[2]string]*PackageMeta{}}}, nil
}

// AtLevel is a resolver over the same blobs answering at another migrate level.
func (c *CatalogResolver) AtLevel(level string) (*CatalogResolver, error) {
	n, err := NewCatalogResolver(level)
	if err != nil {
		return nil, err
	}
	n.idx, n.byTag = c.idx, c.byTag
	return n, nil
}

// ByTag is a resolver over the same blobs that also takes references by tag, verbatim (and only those: the
// digest-pinned ones are c's).
func (c *CatalogResolver) ByTag() *CatalogResolver {
	return &CatalogResolver{level: c.level, byTag: true, idx: c.idx}
}

// Add indexes the olm.bundle blobs of parsed catalog documents. Of several blobs of one image, one that
// needs no migration is preferred (an olm.bundle.object blob serves both levels).
func (c *CatalogResolver) Add(docs []catalog.Doc) {
	x := c.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range docs {
		d := &docs[i]
		if n := len(x.files); n == 0 || x.files[n-1] != d.Pos.File {
			x.files = append(x.files, d.Pos.File)
		}
		if d.Schema == "olm.package" {
			pm := &PackageMeta{Description: str(&d.Value, "description"), From: d.Pos.String()}
			if icon := field(&d.Value, "icon", false); icon != nil && icon.Kind == catalog.KindObject {
				pm.Icon = icon.AppendJSON(nil)
			}
			x.packages[[2]string{d.Pos.File, str(&d.Value, "name")}] = pm
			continue
		}
		if d.Schema != "olm.bundle" {
			continue
		}
		img := field(&d.Value, "image", false)
		if img == nil || img.Kind != catalog.KindString || img.Str() == "" {
			continue
		}
		prev, ok := x.blobs[img.Str()]
		if ok && !hasProperty(prev.value, "olm.csv.metadata") {
			continue
		}
		x.blobs[img.Str()] = catalogBlob{value: &d.Value, pos: d.Pos}
	}
}

// AddFS indexes every catalog file under the given directories of fsys (all of it for ".").
func (c *CatalogResolver) AddFS(ctx context.Context, fsys fs.FS, lim catalog.Limits, dirs ...string) error {
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	for _, dir := range dirs {
		sub, err := fs.Sub(fsys, dir)
		if err != nil {
			return err
		}
		set, err := load.ListFiles(ctx, sub, lim)
		if err != nil {
			return err
		}
		for _, f := range set.Files {
			data, err := fs.ReadFile(sub, f.Path)
			if err != nil {
				return err
			}
			docs, _ := catalog.ParseFile(path.Join(dir, f.Path), data, lim)
			c.Add(docs)
		}
	}
	return nil
}

// Len is the number of images indexed.
func (c *CatalogResolver) Len() int {
	c.idx.mu.Lock()
	defer c.idx.mu.Unlock()
	return len(c.idx.blobs)
}

// Searched says which catalog files were searched, for messages: "the 3 catalog files a, b, c".
func (c *CatalogResolver) Searched() string {
	c.idx.mu.Lock()
	defer c.idx.mu.Unlock()
	return searchedFiles(c.idx.files)
}

func searchedFiles(files []string) string {
	const shown = 4
	switch n := len(files); {
	case n == 0:
		return "no catalog file"
	case n == 1:
		return "the catalog file " + files[0]
	case n <= shown:
		return fmt.Sprintf("the %d catalog files %s", n, strings.Join(files, ", "))
	default:
		return fmt.Sprintf("the %d catalog files %s and %d more", n, strings.Join(files[:shown], ", "), n-shown)
	}
}

func hasProperty(v *catalog.Value, typ string) bool {
	props := field(v, "properties", false)
	if props == nil {
		return false
	}
	for _, p := range props.Items() {
		if t := field(&p, "type", false); t != nil && t.Str() == typ {
			return true
		}
	}
	return false
}

// Resolve implements Resolver.
func (c *CatalogResolver) Resolve(_ context.Context, img string) (*Resolved, error) {
	byDigest := strings.Contains(img, "@sha256:")
	c.idx.mu.Lock()
	cb, ok := c.idx.blobs[img]
	files := c.idx.files
	c.idx.mu.Unlock()
	switch {
	case byDigest == c.byTag:
		// The other view answers for this reference (and says what it searched).
		return nil, ErrNotFound
	case !ok:
		return nil, fmt.Errorf("the image of no olm.bundle blob in %s: %w", searchedFiles(files), ErrNotFound)
	}
	v := cb.value
	r := &bundle.Rendered{Schema: "olm.bundle", Image: img}
	if s := field(v, "name", false); s != nil {
		r.Name = s.Str()
	}
	if s := field(v, "package", false); s != nil {
		r.Package = s.Str()
	}
	var csv *catalog.Value
	migrated := false
	if props := field(v, "properties", false); props != nil {
		for _, p := range props.Items() {
			typ := field(&p, "type", false)
			val := field(&p, "value", false)
			if typ == nil || val == nil {
				continue
			}
			switch typ.Str() {
			case "olm.csv.metadata":
				migrated = true
			case "olm.bundle.object":
				if csv == nil {
					csv = decodeCSV(val)
				}
			}
			r.Properties = append(r.Properties, bundle.Property{Type: typ.Str(), Value: json.RawMessage(val.AppendJSON(nil))})
		}
	}
	if ris := field(v, "relatedImages", false); ris != nil {
		for _, ri := range ris.Items() {
			ri := ri
			var name, ref string
			if s := field(&ri, "name", false); s != nil {
				name = s.Str()
			}
			if s := field(&ri, "image", false); s != nil {
				ref = s.Str()
			}
			r.RelatedImages = append(r.RelatedImages, bundle.RelatedImage{Name: name, Image: ref})
		}
	}
	from := cb.pos.String()
	switch c.level {
	case "", "none":
		if migrated {
			return nil, fmt.Errorf("%s: the blob at %s holds olm.csv.metadata, which cannot be turned back into olm.bundle.object "+
				"(that catalog was rendered with --migrate-level bundle-object-to-csv-metadata: give it here too, or let the image be pulled): %w", img, from, ErrNotFound)
		}
	default:
		if !migrated {
			if csv == nil {
				return nil, fmt.Errorf("%s: the blob at %s has neither olm.csv.metadata nor the CSV to make it: %w", img, from, ErrNotFound)
			}
			b := &bundle.Bundle{CSV: &bundle.Manifest{File: from, Kind: "ClusterServiceVersion", Value: *csv}}
			if err := bundle.Migrate(r, b, c.level); err != nil {
				return nil, err
			}
		}
	}
	res := &Resolved{Bundle: r, CSV: csv, From: from, ByTag: !byDigest}
	if csv == nil {
		c.idx.mu.Lock()
		res.Package = c.idx.packages[[2]string{cb.pos.File, r.Package}]
		c.idx.mu.Unlock()
	}
	return res, nil
}

// decodeCSV reads the manifest of an olm.bundle.object value, if it is the CSV.
func decodeCSV(val *catalog.Value) *catalog.Value {
	data := field(val, "data", false)
	if data == nil || data.Kind != catalog.KindString {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(data.Str())
	if err != nil {
		return nil
	}
	docs, findings := catalog.ParseDocuments("olm.bundle.object", raw, catalog.Limits{})
	if len(findings) > 0 || len(docs) != 1 {
		return nil
	}
	if k := field(&docs[0].Value, "kind", false); k == nil || k.Str() != "ClusterServiceVersion" {
		return nil
	}
	return &docs[0].Value
}

// DirResolver resolves images built from bundle directories of the repository. A directory is named by
// the reference its bundle root's image pattern gives for its package and version (for example
// "quay.io/acme/{package}-bundle:v{version}", the target the App pushes merged bundles to, gives
// quay.io/acme/etcd-bundle:v1.0.0), and by that repository with the digest of the directory's deterministic
// bundle image (catalog/image.BundleImage): quay.io/acme/etcd-bundle@sha256:<digest of its build>. A digest
// alone names nothing: any.host/any/repo@sha256:<the same digest> is not that directory, whatever it holds.
// Without a pattern no reference names a directory, unless AnyRepository says the caller vouches for the
// references (a local render of directories the user named).
type DirResolver struct {
	level string
	idx   *dirIndex
}

// dirIndex is what DirResolvers of several migrate levels share: the directories read and the
// references that name them. It keeps what it learns of each directory (DirFacts), not the bundles: a
// directory is loaded again only when a reference resolves to it, and a directory whose content key the
// facts cache knows is not read at all.
type dirIndex struct {
	fsys    fs.FS
	dirs    []string
	pattern string
	anyRepo bool
	// facts keeps what indexing learns by content key; shared with other resolvers when given (WithFacts).
	facts *DirFactsCache
	// renders, when set, shares what directories render to with other resolvers (WithRenders).
	renders *DirRenders

	mu          sync.Mutex
	indexed     bool
	wantDigests bool // build the images while indexing (the first lookup was by digest)
	digested    bool
	order       []string          // the directories that name an image, in order
	failed      map[string]error  // directories that could not be read, and why
	byRef       map[string]string // a pattern reference, or <repository>@sha256:... -> directory
	// byDigest maps a build's digest to its directory, to say why a reference by that digest in another
	// repository is not taken (and, with anyRepo, to take it).
	byDigest map[string]string
	// expect is the repository each directory's image lives in ("" without a pattern).
	expect map[string]string
	// keys are the directories' content keys ("" for one without), info what is known of each.
	keys map[string]string
	info map[string]DirFacts
	// rendered keeps each (reference, level) rendered once: rendering is deterministic.
	rendered map[[2]string]*Resolved
}

// NewDirResolver makes a resolver over the bundle directories dirs of fsys, named by pattern (a bundle
// root's image, with {package} and {version}; "" names none). The directories are read, and their images
// built to learn the digests, on the first Resolve.
func NewDirResolver(fsys fs.FS, dirs []string, pattern, level string) *DirResolver {
	return &DirResolver{level: level, idx: &dirIndex{fsys: fsys, dirs: dirs, pattern: pattern, facts: NewDirFactsCache(0),
		byRef: map[string]string{}, byDigest: map[string]string{}, expect: map[string]string{}, keys: map[string]string{},
		info: map[string]DirFacts{}, failed: map[string]error{}}}
}

// WithFacts makes d keep what it learns of its directories in facts, and take from it what another resolver
// (of this pull request, or of an earlier one) learnt of the same content. Call it before the first Resolve.
func (d *DirResolver) WithFacts(facts *DirFactsCache) *DirResolver {
	if d != nil && facts != nil {
		d.idx.facts = facts
	}
	return d
}

// WithRenders makes d share what its directories render to with the other resolvers given renders (by the
// directories' content). Call it before the first Resolve.
func (d *DirResolver) WithRenders(renders *DirRenders) *DirResolver {
	if d != nil && renders != nil {
		d.idx.renders = renders
	}
	return d
}

// AnyRepository makes d take a reference by digest in any repository as the directory whose build has
// that digest. Only for directories and references the user vouches for (catalog-check template render
// --bundles without --bundle-image); never for a pull request's content. Call it before the first Resolve.
func (d *DirResolver) AnyRepository() *DirResolver {
	d.idx.anyRepo = true
	return d
}

// AtLevel is a resolver over the same directories (and the same index) at another migrate level.
func (d *DirResolver) AtLevel(level string) *DirResolver {
	return &DirResolver{level: level, idx: d.idx}
}

// Repository is the repository an image reference names, normalised (registry lower-cased, Docker Hub's
// aliases as index.docker.io, a tag or digest dropped); "" when ref does not parse.
func Repository(ref string) string {
	var repo name.Repository
	if strings.Contains(ref, "@") {
		dg, err := name.NewDigest(ref)
		if err != nil {
			return ""
		}
		repo = dg.Repository
	} else {
		r, err := name.ParseReference(ref)
		if err != nil {
			return ""
		}
		repo = r.Context()
	}
	return strings.ToLower(repo.RegistryStr()) + "/" + repo.RepositoryStr()
}

// digestOf is the sha256:... of a reference by digest, "" otherwise.
func digestOf(ref string) string {
	at := strings.LastIndex(ref, "@")
	if at < 0 || !strings.HasPrefix(ref[at+1:], "sha256:") {
		return ""
	}
	return ref[at+1:]
}

// ErrIncomplete is what a DirResolver returns for a reference that may name a bundle directory it could not
// read (a read budget exhausted, a context done, an I/O error): the image is neither found nor known to be
// absent, so a caller reports it as not verified.
var ErrIncomplete = errors.New("some bundle directories could not be read")

// index learns every directory once: from the facts cache when it knows the directory's content, else by
// loading the bundle and, when digests are wanted (the first lookup was by digest), building its image from
// the same reads. Directories that cannot be read are remembered with why. No bundle is kept.
func (d *dirIndex) index(ctx context.Context) {
	if d.indexed {
		return
	}
	d.indexed = true
	for _, dir := range d.dirs {
		key, _ := DirKey(d.fsys, dir)
		d.keys[dir] = key
		f, ok := d.facts.get(key)
		if !ok || (d.wantDigests && !f.built()) {
			var err error
			f, err = d.read(ctx, dir, d.wantDigests)
			if err != nil && !f.Bundle {
				d.failed[dir] = err
				continue
			}
			if err != nil {
				d.failed[dir] = err // the bundle loaded, its image could not be built: no digest
			} else {
				d.facts.put(key, f)
			}
		}
		d.note(dir, f)
	}
	if d.wantDigests {
		d.digested = true
	}
}

// read loads the bundle of dir and, when build is set, builds its image, returning what they tell. An error
// is about reading; with Bundle set it is the build's, the rest of the facts stand.
func (d *dirIndex) read(ctx context.Context, dir string, build bool) (DirFacts, error) {
	sub, err := fs.Sub(d.fsys, dir)
	if err != nil {
		return DirFacts{}, err
	}
	memo := newMemoFS(sub)
	b, found, err := bundle.Load(ctx, memo, renderOnly())
	if err != nil {
		return DirFacts{}, err
	}
	if b == nil || b.CSV == nil || bundle.Unreadable(found) != nil {
		return DirFacts{}, nil // a directory with a link, or beyond the bounds, names no image: it is never rendered
	}
	f := DirFacts{Bundle: true, Package: b.Package, Version: str(field(&b.CSV.Value, "spec", false), "version")}
	if build {
		dg, err := bundleDigest(ctx, memo, b)
		switch {
		case err == nil:
			f.Digest = dg
		case ctx.Err() != nil || !isContentError(err):
			return f, err
		default:
			f.NoImage = true
		}
	}
	return f, nil
}

// note records what f says of dir: the references that name it.
func (d *dirIndex) note(dir string, f DirFacts) {
	if !f.Bundle {
		return
	}
	if _, seen := d.info[dir]; !seen {
		d.order = append(d.order, dir)
	}
	d.info[dir] = f
	if d.pattern != "" && f.Version != "" && f.Package != "" {
		ref := strings.NewReplacer("{package}", f.Package, "{version}", f.Version).Replace(d.pattern)
		d.byRef[ref] = dir
		d.expect[dir] = Repository(ref)
	}
	if f.Digest != "" {
		d.byDigest[f.Digest] = dir
		if repo := d.expect[dir]; repo != "" {
			d.byRef[repo+"@"+f.Digest] = dir
		}
	}
}

// digests builds the images of the directories indexed without them (a lookup by digest after lookups by
// tag), unless the facts cache has them by now.
func (d *dirIndex) digests(ctx context.Context) {
	if d.digested {
		return
	}
	d.digested = true
	for _, dir := range d.order {
		if d.info[dir].built() {
			continue
		}
		key := d.keys[dir]
		if f, ok := d.facts.get(key); ok && f.built() {
			d.note(dir, f)
			continue
		}
		f, err := d.read(ctx, dir, true)
		if err != nil {
			d.failed[dir] = err
			continue
		}
		d.facts.put(key, f)
		d.note(dir, f)
	}
}

// bundleOf loads the bundle of dir. It is not kept: what is rendered of it is (rendered), and a second
// migrate level, which alone would read it again, is rare.
func (d *dirIndex) bundleOf(ctx context.Context, dir string) (*bundle.Bundle, error) {
	sub, err := fs.Sub(d.fsys, dir)
	if err != nil {
		return nil, err
	}
	b, found, err := bundle.Load(ctx, sub, renderOnly())
	switch {
	case err != nil:
		return nil, err
	case b == nil || b.CSV == nil || bundle.Unreadable(found) != nil:
		return nil, errors.New("the directory no longer holds a bundle with its CSV")
	}
	return b, nil
}

// isContentError: the directory's content is what stops the image build (a link, a file over the bounds),
// not the reading of it.
func isContentError(err error) bool {
	var pe *fs.PathError
	return !errors.As(err, &pe)
}

func str(v *catalog.Value, key string) string {
	if f := field(v, key, false); f != nil {
		return f.Str()
	}
	return ""
}

// Resolve implements Resolver.
func (d *DirResolver) Resolve(ctx context.Context, img string) (*Resolved, error) {
	dir, ok := d.DirOf(ctx, img)
	x := d.idx
	if !ok {
		if err := d.incomplete(img); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", d.notFound(img), ErrNotFound)
	}
	x.mu.Lock()
	cached := x.rendered[[2]string{img, d.level}]
	key := x.keys[dir]
	x.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	res, err := x.renders.do(ctx, key, img, d.level, dir, func() (*Resolved, error) {
		b, err := x.bundleOf(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("%s names bundle directory %s, which could not be read again (%v): %w", img, dir, err, ErrIncomplete)
		}
		res, err := resolvedOf(b, img, d.level, dir)
		if err != nil {
			return nil, fmt.Errorf("%s (bundle directory %s): %w", img, dir, err)
		}
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	if x.rendered == nil {
		x.rendered = map[[2]string]*Resolved{}
	}
	x.rendered[[2]string{img, d.level}] = res
	x.mu.Unlock()
	return res, nil
}

// incomplete is the error for img when a directory it might name could not be read: img is in the
// pattern's repository (or any repository may name a directory), and some directory failed.
func (d *DirResolver) incomplete(img string) error {
	x := d.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.failed) == 0 {
		return nil
	}
	if !x.anyRepo {
		if x.pattern == "" {
			return nil
		}
		repo := Repository(img)
		named := false
		for _, r := range x.expect {
			named = named || r == repo
		}
		if !named && !patternRepoMatches(x.pattern, repo) {
			return nil
		}
	}
	dirs := slices.Sorted(maps.Keys(x.failed))
	return fmt.Errorf("%s could not be read (%v), so whether %s names one is not known: %w", searchedDirs(dirs), x.failed[dirs[0]], img, ErrIncomplete)
}

// patternRepoMatches: repo could be the repository pattern gives for some package.
func patternRepoMatches(pattern, repo string) bool {
	const mark = "zz0package0zz"
	p := Repository(strings.NewReplacer("{package}", mark, "{version}", "0.0.0").Replace(pattern))
	if p == "" {
		return false
	}
	before, after, ok := strings.Cut(p, mark)
	if !ok {
		return p == repo
	}
	return strings.HasPrefix(repo, before) && strings.HasSuffix(repo, after) && len(repo) > len(before)+len(after)
}

func searchedDirs(dirs []string) string {
	if len(dirs) == 1 {
		return "bundle directory " + dirs[0]
	}
	const shown = 3
	if len(dirs) <= shown {
		return fmt.Sprintf("%d bundle directories (%s)", len(dirs), strings.Join(dirs, ", "))
	}
	return fmt.Sprintf("%d bundle directories (%s and %d more)", len(dirs), strings.Join(dirs[:shown], ", "), len(dirs)-shown)
}

// notFound says why img names no directory: in particular when its digest is a directory's build but its
// repository is not that directory's.
func (d *DirResolver) notFound(img string) string {
	x := d.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	dg := digestOf(img)
	dir, ok := x.byDigest[dg]
	if dg == "" || !ok {
		return x.noneNames()
	}
	if want := x.expect[dir]; want != "" {
		return fmt.Sprintf("%s is the digest of bundle directory %s's build, but that directory's image is in %s, not %s (a digest names a directory only in its bundle root's image repository)", dg, dir, want, Repository(img))
	}
	return fmt.Sprintf("%s is the digest of bundle directory %s's build, but its bundle root declares no image pattern, so no reference names the directory (set bundles[].image)", dg, dir)
}

// noneNames says which directories were searched.
func (x *dirIndex) noneNames() string {
	if len(x.dirs) == 0 {
		return "no bundle directory to search"
	}
	where := path.Dir(x.dirs[0])
	for _, d := range x.dirs[1:] {
		if path.Dir(d) != where {
			where = "the repository"
			break
		}
	}
	n := "the bundle directory"
	if len(x.dirs) > 1 {
		n = fmt.Sprintf("none of the %d bundle directories", len(x.dirs))
	}
	switch {
	case x.pattern != "":
		return fmt.Sprintf("%s of %s is named by it (their image: %s, by that tag or in that repository by the digest of a directory's build)", n, where, x.pattern)
	case x.anyRepo:
		return fmt.Sprintf("%s of %s builds an image with its digest", n, where)
	}
	return fmt.Sprintf("%s of %s is named by it: their bundle root declares no image (bundles[].image)", n, where)
}

// DirOf is the bundle directory img names (the pattern's reference, or the pattern's repository with the
// digest of the directory's build), if any.
func (d *DirResolver) DirOf(ctx context.Context, img string) (string, bool) {
	x := d.idx
	x.mu.Lock()
	defer x.mu.Unlock()
	dg := digestOf(img)
	if !x.indexed && dg != "" {
		x.wantDigests = true
	}
	x.index(ctx)
	if dir, ok := x.byRef[img]; ok {
		return dir, true
	}
	if dg == "" {
		return "", false
	}
	x.digests(ctx)
	if repo := Repository(img); repo != "" {
		if dir, ok := x.byRef[repo+"@"+dg]; ok {
			return dir, true
		}
	}
	if x.anyRepo {
		dir, ok := x.byDigest[dg]
		return dir, ok
	}
	return "", false
}

// resolvedOf renders a loaded bundle under image at migrate level.
func resolvedOf(b *bundle.Bundle, image, level, from string) (*Resolved, error) {
	r, err := bundle.Render(b, image)
	if err != nil {
		return nil, err
	}
	if err := bundle.Migrate(r, b, level); err != nil {
		return nil, err
	}
	return &Resolved{Bundle: r, CSV: &b.CSV.Value, From: from}, nil
}

// FetchResolver resolves images by fetching their content with fetch (a registry client's bundle pull) and
// rendering it at migrate level, as opm renders a bundle image: a bundle that loads with its CSV renders,
// whatever the validators would say of it.
func FetchResolver(fetch func(ctx context.Context, ref string) (fs.FS, error), level string) Resolver {
	return ResolverFunc(func(ctx context.Context, ref string) (*Resolved, error) {
		fsys, err := fetch(ctx, ref)
		if err != nil {
			return nil, err
		}
		b, findings, err := bundle.Load(ctx, fsys, renderOnly())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		if b == nil || b.CSV == nil {
			first := "no ClusterServiceVersion"
			if len(findings) > 0 {
				first = findings[0].Message
			}
			return nil, fmt.Errorf("%s is not a bundle opm can render: %s", ref, first)
		}
		res, err := resolvedOf(b, ref, level, ref)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		return res, nil
	})
}

// FetchDirResolver resolves the references dirOf maps to a bundle directory of fsys by reading that
// directory, as opm renders a bundle image built from it (FetchResolver), sharing what each directory renders
// to through renders (nil: nothing shared). dirOf's error is returned as it is.
func FetchDirResolver(fsys fs.FS, dirOf func(ref string) (string, error), level string, renders *DirRenders) Resolver {
	return ResolverFunc(func(ctx context.Context, ref string) (*Resolved, error) {
		dir, err := dirOf(ref)
		if err != nil {
			return nil, err
		}
		key, _ := DirKey(fsys, dir)
		return renders.do(ctx, key, ref, level, ref, func() (*Resolved, error) {
			return FetchResolver(func(context.Context, string) (fs.FS, error) { return fs.Sub(fsys, dir) }, level).Resolve(ctx, ref)
		})
	})
}

// BundleImageDigest is the digest of the image built from the bundle directory fsys (catalog/image.BundleImage:
// the same directory always gives the same digest); a template naming the directory's image by digest names it.
func BundleImageDigest(ctx context.Context, fsys fs.FS) (string, error) {
	b, _, err := bundle.Load(ctx, fsys, renderOnly())
	if err != nil {
		return "", err
	}
	return bundleDigest(ctx, fsys, b)
}

// BundleImageDigestOf is BundleImageDigest of directory dir of fsys, taken from facts when they know the
// directory's content (DirKey), and kept there when it is built.
func BundleImageDigestOf(ctx context.Context, fsys fs.FS, dir string, facts *DirFactsCache) (string, error) {
	key, _ := DirKey(fsys, dir)
	if f, ok := facts.get(key); ok && f.Digest != "" {
		return f.Digest, nil
	}
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return "", err
	}
	memo := newMemoFS(sub)
	b, found, err := bundle.Load(ctx, memo, renderOnly())
	if err != nil {
		return "", err
	}
	dg, err := bundleDigest(ctx, memo, b)
	if err != nil {
		return "", err
	}
	if b != nil && b.CSV != nil && bundle.Unreadable(found) == nil {
		facts.put(key, DirFacts{Bundle: true, Package: b.Package, Version: str(field(&b.CSV.Value, "spec", false), "version"), Digest: dg})
	}
	return dg, nil
}

func bundleDigest(ctx context.Context, fsys fs.FS, b *bundle.Bundle) (string, error) {
	if b == nil {
		return "", errors.New("the directory holds no bundle")
	}
	img, err := image.BundleImage(ctx, fsys, b.Annotations, image.Limits{})
	if err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// renderOnly loads bundle directories to render them or to build their images: the compressed-size rule,
// whose findings no resolver reports, is left out (it gzips every file).
func renderOnly() bundle.Limits { return bundle.Limits{RenderOnly: true} }
