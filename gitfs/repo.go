package gitfs

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Hash names a git object (a commit, for this package's callers).
type Hash = plumbing.Hash

const (
	// objectCacheSize bounds go-git's cache of decoded objects per Repo.
	objectCacheSize = 64 * cache.MiByte
	// maxCachedTrees bounds the decoded directory listings kept per Repo.
	maxCachedTrees = 100_000
	// maxRevLength bounds a revision string.
	maxRevLength = 1024
)

// Repo is an open local repository. It is safe for concurrent use: loose and
// packed objects are read concurrently (loose.go, pack.go); what goes through
// go-git (revisions, history, tree diffs, objects in alternates) is
// serialised, because go-git's file storage is not safe for concurrent use.
type Repo struct {
	path string
	dot  billy.Filesystem // the git directory
	// objDirs are where objects are read from: the repository's own object directory, then those its
	// objects/info/alternates names (clones made with --reference, shared object stores), in git's order.
	objDirs []objectDir

	mu sync.Mutex // guards st: go-git's file storage
	st *alternateStorage

	packsOnce sync.Once
	packs     *packReader // opened on first use

	// objects keeps decoded trees and blob sizes; shared with other Repos
	// of the same cache when opened with OpenShared.
	objects *ObjectCache
	// key names the repository in objects.
	key string
}

// ObjectCache keeps what a repository's objects say that never changes for
// a hash: the entries of trees and the sizes of blobs. A Repo has its own
// unless opened with OpenShared: the App opens a Repo for every check of the
// same repository, and a shared cache saves each check re-reading the
// thousands of trees and blob headers of a large catalog that did not
// change. Entries are kept per repository (by git directory), never
// reused across repositories. It is safe for concurrent use and bounded.
type ObjectCache struct {
	mu          sync.Mutex
	trees       map[objectKey][]entry // entries are never modified
	treeEntries int
	sizes       map[objectKey]int64
}

type objectKey struct {
	repo string
	h    Hash
}

const (
	// maxCachedTreeEntries bounds the entries of the trees an ObjectCache
	// keeps (about 80 bytes each); maxCachedSizes the blob sizes.
	maxCachedTreeEntries = 2_000_000
	maxCachedSizes       = 2_000_000
)

// NewObjectCache returns an empty cache for OpenShared.
func NewObjectCache() *ObjectCache {
	return &ObjectCache{trees: map[objectKey][]entry{}, sizes: map[objectKey]int64{}}
}

func (c *ObjectCache) tree(k objectKey) ([]entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	es, ok := c.trees[k]
	return es, ok
}

func (c *ObjectCache) putTree(k objectKey, es []entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.trees) >= maxCachedTrees || c.treeEntries+len(es) > maxCachedTreeEntries {
		clear(c.trees) // simple and bounded; a PR's base and head share most trees anyway
		c.treeEntries = 0
	}
	if _, ok := c.trees[k]; !ok {
		c.trees[k] = es
		c.treeEntries += len(es)
	}
}

func (c *ObjectCache) size(k objectKey) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.sizes[k]
	return n, ok
}

func (c *ObjectCache) putSize(k objectKey, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sizes) >= maxCachedSizes {
		clear(c.sizes)
	}
	c.sizes[k] = n
}

// Open opens the repository at path: a work tree holding .git (a directory,
// or a file pointing at one as in linked work trees), or a bare repository.
func Open(path string) (*Repo, error) {
	return OpenShared(path, nil)
}

// OpenShared is Open with decoded trees and blob sizes kept in objects
// (a Repo's own cache when nil), for callers that open the same
// repository again and again.
func OpenShared(path string, objects *ObjectCache) (*Repo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening git repository %s: %w", path, err)
	}
	gitDir, err := findGitDir(abs)
	if err != nil {
		return nil, fmt.Errorf("opening git repository %s: %w", path, err)
	}
	var dot billy.Filesystem = osfs.New(gitDir)
	// A linked work tree's git directory names, in commondir, the directory that holds the objects.
	objectsDir := filepath.Join(gitDir, "objects")
	if common, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		dir := strings.TrimSpace(string(common))
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(gitDir, dir)
		}
		dot = dotgit.NewRepositoryFilesystem(dot, osfs.New(dir))
		objectsDir = filepath.Join(dir, "objects")
	}
	// No LargeObjectThreshold: with one, go-git streams big packed objects
	// through a delta reader that copies its input over and over (a 20 MB
	// catalog took 3.4 s of CPU instead of 0.3 s). Sizes are still known
	// before reading: packed objects carry them in their headers, and loose
	// objects are read by openLoose.
	st := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRU(objectCacheSize), filesystem.Options{})
	dirs := []objectDir{{fs: dot, prefix: "objects"}}
	alts, err := alternates(objectsDir)
	if err != nil {
		return nil, fmt.Errorf("opening git repository %s: %w", path, err)
	}
	for _, a := range alts {
		dirs = append(dirs, objectDir{fs: osfs.New(a), prefix: "."})
	}
	r := &Repo{path: path, dot: dot, objDirs: dirs, objects: objects, key: gitDir}
	// go-git does not follow alternates outside the repository's own directory: what it asks for and does not
	// find is read here from the alternates.
	r.st = &alternateStorage{Storage: st, r: r}
	if _, err := r.st.Reference(plumbing.HEAD); err != nil {
		return nil, fmt.Errorf("opening git repository %s: no HEAD: %w", path, err)
	}
	if r.objects == nil {
		r.objects = NewObjectCache()
	}
	return r, nil
}

func findGitDir(dir string) (string, error) {
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotGit)
	switch {
	case err == nil && fi.IsDir():
		return dotGit, nil
	case err == nil:
		b, err := os.ReadFile(dotGit)
		if err != nil {
			return "", err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
		if !ok {
			return "", fmt.Errorf("%s is a file without a gitdir: line", dotGit)
		}
		target = strings.TrimSpace(target)
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		return target, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	// A bare repository holds HEAD and objects/ itself.
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		if fi, err := os.Stat(filepath.Join(dir, "objects")); err == nil && fi.IsDir() {
			return dir, nil
		}
	}
	return "", errors.New("not a git repository (no .git, and not a bare repository)")
}

// Resolve turns a revision into a commit hash. It accepts a full or
// abbreviated commit hash, a branch, a tag (annotated tags are peeled), HEAD,
// a full reference name such as refs/pull/7/head, and ~N / ^N suffixes.
// Revision forms that search history (^{/text}, @{...}) and path forms
// (rev:path) are refused.
//
// The revision is read here rather than by go-git's Repository.ResolveRevision:
// that was all gitfs used of go-git's top-level package, which links its
// transports (HTTP, SSH, the git protocol) and OpenPGP into every program
// using gitfs and costs each of them start-up time and memory.
func (r *Repo) Resolve(rev string) (Hash, error) {
	if err := checkRev(rev); err != nil {
		return Hash{}, err
	}
	base, suffix := rev, ""
	if i := strings.IndexAny(rev, "~^"); i >= 0 {
		base, suffix = rev[:i], rev[i:]
	}
	if base == "" {
		return Hash{}, fmt.Errorf("resolving revision %q: nothing before %q", rev, suffix[:1])
	}
	h, err := r.resolveBase(base)
	if err != nil {
		return Hash{}, fmt.Errorf("resolving revision %q: %w", rev, err)
	}
	for suffix != "" {
		op := suffix[0]
		suffix = suffix[1:]
		n, digits := 1, 0
		for digits < len(suffix) && '0' <= suffix[digits] && suffix[digits] <= '9' {
			digits++
		}
		if digits > 0 {
			if n, err = strconv.Atoi(suffix[:digits]); err != nil {
				return Hash{}, fmt.Errorf("resolving revision %q: %q is not a number", rev, suffix[:digits])
			}
		}
		suffix = suffix[digits:]
		if suffix != "" && suffix[0] != '~' && suffix[0] != '^' {
			return Hash{}, fmt.Errorf("resolving revision %q: unexpected %q after %c", rev, suffix, op)
		}
		if h, err = r.walkParents(h, op, n); err != nil {
			return Hash{}, fmt.Errorf("resolving revision %q: %w", rev, err)
		}
	}
	return h, nil
}

// walkParents applies one suffix: ~n is the n-th first-parent ancestor, ^n the n-th parent (^0 the commit
// itself).
func (r *Repo) walkParents(h Hash, op byte, n int) (Hash, error) {
	if op == '^' {
		if n == 0 {
			return h, nil
		}
		ps, err := r.parents(h)
		if err != nil {
			return Hash{}, err
		}
		if n > len(ps) {
			return Hash{}, fmt.Errorf("commit %s has %d parents, not %d", h, len(ps), n)
		}
		return ps[n-1], nil
	}
	for i := 0; i < n; i++ {
		ps, err := r.parents(h)
		if err != nil {
			return Hash{}, err
		}
		if len(ps) == 0 {
			return Hash{}, fmt.Errorf("commit %s has no parent (%d generations back)", h, i)
		}
		h = ps[0]
	}
	return h, nil
}

// parents reads a commit's parents, in order.
func (r *Repo) parents(h Hash) ([]Hash, error) {
	typ, data, err := r.readAny(h)
	if err != nil {
		return nil, err
	}
	if typ != plumbing.CommitObject {
		return nil, fmt.Errorf("%s is a %s, not a commit", h, typ)
	}
	ci, err := decodeCommit(data)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", h, err)
	}
	return ci.parents, nil
}

// refRules are the places a short name is looked for, in git's order (git rev-parse, "SPECIFYING
// REVISIONS").
var refRules = [...]string{"%s", "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD"}

// resolveBase resolves a revision without suffixes to a commit: a full hash, a reference (which git prefers to
// an abbreviated hash of the same spelling), an abbreviated hash.
func (r *Repo) resolveBase(base string) (Hash, error) {
	if len(base) == 40 && isHex(base) {
		return r.peel(plumbing.NewHash(base))
	}
	for _, rule := range refRules {
		if h, ok := r.reference(fmt.Sprintf(rule, base)); ok {
			return r.peel(h)
		}
	}
	if len(base) >= 4 && isHex(base) {
		// An abbreviated hash: refuse an ambiguous one, as git does.
		h, ok, err := r.shortHash(base)
		if err != nil || ok {
			return h, err
		}
	}
	return Hash{}, fmt.Errorf("no reference or commit named %q", base)
}

// reference resolves a reference name (through symbolic references) to the hash it names.
func (r *Repo) reference(name string) (Hash, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref, err := storer.ResolveReference(r.st, plumbing.ReferenceName(name))
	if err != nil {
		return Hash{}, false
	}
	return ref.Hash(), true
}

// shortHash resolves an abbreviated hash to the one commit whose hash starts with it (through annotated tags).
// ok is false when nothing matches.
func (r *Repo) shortHash(rev string) (Hash, bool, error) {
	even, err := hex.DecodeString(rev[:len(rev)&^1])
	if err != nil {
		return Hash{}, false, nil
	}
	r.mu.Lock()
	cands, err := r.st.HashesWithPrefix(even)
	r.mu.Unlock()
	if err != nil {
		return Hash{}, false, fmt.Errorf("resolving %s: %w", rev, err)
	}
	var found []Hash
	for _, c := range cands {
		if !strings.HasPrefix(c.String(), strings.ToLower(rev)) {
			continue
		}
		if commit, err := r.peel(c); err == nil && !slices.Contains(found, commit) {
			found = append(found, commit)
		}
	}
	switch len(found) {
	case 0:
		return Hash{}, false, nil
	case 1:
		return found[0], true, nil
	}
	return Hash{}, false, fmt.Errorf("resolving %s: the abbreviated hash is ambiguous (%d commits match): give more digits", rev, len(found))
}

// peel returns the commit h names, through annotated tags.
func (r *Repo) peel(h Hash) (Hash, error) {
	for range 10 {
		typ, data, err := r.readAny(h)
		if err != nil {
			return Hash{}, fmt.Errorf("%s is not a commit or a tag in %s: %w", h, r.path, err)
		}
		switch typ {
		case plumbing.CommitObject:
			return h, nil
		case plumbing.TagObject:
			target, err := tagTarget(data)
			if err != nil {
				return Hash{}, fmt.Errorf("tag %s: %w", h, err)
			}
			h = target
		default:
			return Hash{}, fmt.Errorf("%s is a %s, not a commit or a tag", h, typ)
		}
	}
	return Hash{}, fmt.Errorf("%s: tag chain too long", h)
}

// tagTarget reads the object an annotated tag names from its first header, "object <hash>".
func tagTarget(data []byte) (Hash, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	val, ok := bytes.CutPrefix(line, []byte("object "))
	if !ok || len(val) != 40 || !isHex(string(val)) {
		return Hash{}, fmt.Errorf("malformed object line %q", line)
	}
	return plumbing.NewHash(string(val)), nil
}

// readAny reads a commit or tag sized object of any type: through this package's readers, else through
// go-git's storage (packs they leave to it).
func (r *Repo) readAny(h Hash) (plumbing.ObjectType, []byte, error) {
	typ, data, err := r.readNative(h, plumbing.AnyObject)
	if err == nil || (!errors.Is(err, errFallback) && !errors.Is(err, errNotLoose)) {
		return typ, data, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	obj, err := r.st.Storage.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return 0, nil, missing(err)
	}
	if obj.Size() > maxAlternateObject {
		return 0, nil, fmt.Errorf("object %s is %d bytes, over %d: %w", h, obj.Size(), maxAlternateObject, ErrTooLarge)
	}
	rd, err := obj.Reader()
	if err != nil {
		return 0, nil, err
	}
	defer rd.Close()
	data, err = io.ReadAll(io.LimitReader(rd, maxAlternateObject+1))
	return obj.Type(), data, err
}

func checkRev(rev string) error {
	switch {
	case rev == "":
		return errors.New("empty revision")
	case len(rev) > maxRevLength:
		return fmt.Errorf("revision is %d bytes long, over %d", len(rev), maxRevLength)
	case strings.HasPrefix(rev, "-"):
		return fmt.Errorf("revision %q starts with -", rev)
	case strings.Contains(rev, "^{"), strings.Contains(rev, "@{"), strings.Contains(rev, ":"):
		return fmt.Errorf("revision %q uses a form gitfs does not support: give a hash, a branch, a tag or a ref, optionally with ~N or ^N", rev)
	}
	for i := 0; i < len(rev); i++ {
		if rev[i] < 0x20 || rev[i] == 0x7f || rev[i] == ' ' {
			return fmt.Errorf("revision %q contains a space or a control character", rev)
		}
	}
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// entry is one item of a decoded tree.
type entry struct {
	name string
	mode filemode.FileMode
	hash Hash
}

// tree returns the entries of a tree object sorted by name (the order io/fs
// wants, which differs from git's), decoding it at most once per ObjectCache. Trees
// larger than maxTreeSize bytes are refused before they are read.
func (r *Repo) tree(h Hash) ([]entry, error) {
	if es, ok := r.objects.tree(objectKey{r.key, h}); ok {
		return es, nil
	}
	data, err := r.readObject(h, plumbing.TreeObject, func(size int64) error {
		if size > maxTreeSize {
			return fmt.Errorf("tree %s is %d bytes, over %d: %w", h, size, maxTreeSize, ErrTooLarge)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	es, err := decodeTree(data)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	es = sortEntries(es)

	r.objects.putTree(objectKey{r.key, h}, es)
	return es, nil
}

// packReader opens the repository's packs on first use. Packs written later
// (a fetch into an open Repo) are read through go-git.
func (r *Repo) packReader() *packReader {
	r.packsOnce.Do(func() { r.packs = openPacks(r.objDirs) })
	return r.packs
}

// Close releases the pack files the Repo holds open. (They are also closed
// when the Repo is garbage collected.) Reads of packed objects after Close
// fail.
func (r *Repo) Close() error {
	r.packsOnce.Do(func() { r.packs = newPackReader(nil, 0) })
	return r.packs.close()
}

// blobSize returns the size of a blob from its object header.
// Packs are looked at before loose objects: a lookup in an index costs no
// system call, a missing loose object one failed open.
func (r *Repo) blobSize(h Hash) (int64, error) {
	if n, ok := r.objects.size(objectKey{r.key, h}); ok {
		return n, nil
	}
	switch typ, size, err := r.packReader().info(h); {
	case err == nil && typ != plumbing.BlobObject:
		return 0, fmt.Errorf("object %s is a %s, not a blob", h, typ)
	case err == nil:
		r.objects.putSize(objectKey{r.key, h}, size)
		return size, nil
	case !errors.Is(err, errFallback):
		return 0, fmt.Errorf("blob %s: %w", h, err)
	}
	if o, err := openLoose(r.objDirs, h); err == nil {
		defer o.Close()
		if o.typ != "blob" {
			return 0, fmt.Errorf("object %s is a %s, not a blob", h, o.typ)
		}
		return o.size, nil
	} else if !errors.Is(err, errNotLoose) {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	obj, err := r.st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return 0, fmt.Errorf("blob %s: %w", h, missing(err))
	}
	return obj.Size(), nil
}

// readBlob reads a blob. check gets the size from the object header before
// any content is read; its error stops the read.
func (r *Repo) readBlob(h Hash, check func(size int64) error) ([]byte, error) {
	return r.readObject(h, plumbing.BlobObject, check)
}

// readObject reads an object of type typ. check gets the size from the
// object header before any content is read; its error stops the read (and is
// returned as is). Packed objects are read by pack.go, loose ones by
// loose.go; what those leave (objects in alternates, packs they do not read)
// goes through go-git.
func (r *Repo) readObject(h Hash, typ plumbing.ObjectType, check func(size int64) error) ([]byte, error) {
	// errFallback comes before check runs, so check never runs twice.
	var checkErr error
	b, err := r.packReader().read(h, typ, func(size int64) error {
		checkErr = check(size)
		return checkErr
	})
	switch {
	case err == nil:
		return b, nil
	case checkErr != nil:
		return nil, checkErr
	case !errors.Is(err, errFallback):
		return nil, fmt.Errorf("%s %s: %w", typ, h, err)
	}
	if o, err := openLoose(r.objDirs, h); err == nil {
		defer o.Close()
		if o.typ != typ.String() {
			return nil, fmt.Errorf("object %s is a %s, not a %s", h, o.typ, typ)
		}
		if err := check(o.size); err != nil {
			return nil, err
		}
		b, err := o.read()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", typ, h, err)
		}
		return b, nil
	} else if !errors.Is(err, errNotLoose) {
		return nil, err
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	obj, err := r.st.EncodedObject(typ, h)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", typ, h, missing(err))
	}
	size := obj.Size()
	if err := check(size); err != nil {
		return nil, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", typ, h, err)
	}
	defer rd.Close()
	buf := make([]byte, size)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, fmt.Errorf("%s %s: %w", typ, h, err)
	}
	return buf, nil
}

// decodeTree parses a tree object: entries of "<octal mode> <name>\0<20-byte hash>".
func decodeTree(data []byte) ([]entry, error) {
	var es []entry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			return nil, errors.New("malformed entry mode")
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("malformed entry mode %q", data[:sp])
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+20 {
			return nil, errors.New("truncated entry")
		}
		var h Hash
		copy(h[:], data[nul+1:nul+21])
		es = append(es, entry{name: string(data[:nul]), mode: filemode.FileMode(mode), hash: h})
		data = data[nul+21:]
	}
	return es, nil
}

// commitInfo is what TreeFS needs from a commit.
type commitInfo struct {
	tree    Hash
	when    time.Time
	parents []Hash
}

// maxCommitSize bounds a commit object read by TreeFS.
const maxCommitSize = 1 << 20

// decodeCommit reads the tree and the committer time from a commit object's headers.
func decodeCommit(data []byte) (commitInfo, error) {
	var ci commitInfo
	var haveTree bool
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 {
			break // end of headers
		}
		key, val, _ := bytes.Cut(line, []byte(" "))
		switch string(key) {
		case "tree":
			if len(val) != 40 || !isHex(string(val)) {
				return ci, fmt.Errorf("malformed tree line %q", line)
			}
			ci.tree, haveTree = plumbing.NewHash(string(val)), true
		case "parent":
			if len(val) != 40 || !isHex(string(val)) {
				return ci, fmt.Errorf("malformed parent line %q", line)
			}
			ci.parents = append(ci.parents, plumbing.NewHash(string(val)))
		case "committer":
			// "Name <email> 1700000000 +0100": the time is the second-last field.
			fields := bytes.Fields(val[bytes.LastIndexByte(val, '>')+1:])
			if len(fields) >= 1 {
				if sec, err := strconv.ParseInt(string(fields[0]), 10, 64); err == nil {
					ci.when = time.Unix(sec, 0).UTC()
				}
			}
		}
	}
	if !haveTree {
		return ci, errors.New("commit has no tree")
	}
	return ci, nil
}

// commitInfo reads the tree and committer time of a commit, bounded.
func (r *Repo) commitInfo(ctx context.Context, commit Hash) (commitInfo, error) {
	if err := ctx.Err(); err != nil {
		return commitInfo{}, err
	}
	data, err := r.readObject(commit, plumbing.CommitObject, func(size int64) error {
		if size > maxCommitSize {
			return fmt.Errorf("commit %s is %d bytes, over %d: %w", commit, size, maxCommitSize, ErrTooLarge)
		}
		return nil
	})
	if err != nil {
		return commitInfo{}, err
	}
	ci, err := decodeCommit(data)
	if err != nil {
		return commitInfo{}, fmt.Errorf("commit %s: %w", commit, err)
	}
	return ci, nil
}

// sortEntries orders entries by name and drops names io/fs cannot show
// (empty, ".", "..", or holding "/" or NUL: only a crafted tree has them) and
// repeated names (the first is kept).
func sortEntries(es []entry) []entry {
	out := es[:0]
	for _, e := range es {
		if e.name == "" || e.name == "." || e.name == ".." || strings.ContainsAny(e.name, "/\x00") {
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	dedup := out[:0]
	for _, e := range out {
		if len(dedup) > 0 && dedup[len(dedup)-1].name == e.name {
			continue
		}
		dedup = append(dedup, e)
	}
	return dedup
}

// Parents are a commit's parents, the first parent first.
func (r *Repo) Parents(ctx context.Context, commit Hash) ([]Hash, error) {
	ci, err := r.commitInfo(ctx, commit)
	if err != nil {
		return nil, err
	}
	return ci.parents, nil
}

// TreeHash is the hash of a commit's root tree.
func (r *Repo) TreeHash(ctx context.Context, commit Hash) (Hash, error) {
	ci, err := r.commitInfo(ctx, commit)
	if err != nil {
		return Hash{}, err
	}
	return ci.tree, nil
}
