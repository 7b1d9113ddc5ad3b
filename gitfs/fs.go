package gitfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Errors returned (wrapped in *fs.PathError) by FS.
var (
	// ErrSymlink: the path is, or goes through, a symbolic link. Links are
	// never followed: their target is data from the commit's author.
	ErrSymlink = errors.New("is a symbolic link (gitfs never follows links)")
	// ErrSubmodule: the path is a submodule (gitlink), whose content is not in
	// this repository.
	ErrSubmodule = errors.New("is a submodule, whose content is not in this repository")
	// ErrTooLarge: a blob is over Limits.MaxFileSize (or a tree over 16 MiB).
	ErrTooLarge = errors.New("is over the size limit")
	// ErrBudget: reading the file would exceed Limits.MaxTotalBytes for this FS.
	ErrBudget = errors.New("would exceed the total bytes budget of this file system")
)

// Limits bound what an FS reads. A zero or negative field takes its default.
type Limits struct {
	// MaxFileSize is the largest blob read, checked from the object header
	// before reading. Default 64 MiB. (Tree objects have a fixed bound of
	// 16 MiB, some 300,000 entries.)
	MaxFileSize int64
	// MaxTotalBytes is the total of blob bytes one FS may read. Default 1 GiB.
	MaxTotalBytes int64
}

const (
	defaultMaxFileSize   = 64 << 20
	defaultMaxTotalBytes = 1 << 30
	maxLinkSize          = 4096
	maxTreeSize          = 16 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = defaultMaxFileSize
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = defaultMaxTotalBytes
	}
	return l
}

// FS is the tree of one commit as a read-only file system. It implements
// fs.ReadDirFS, fs.ReadFileFS, fs.StatFS and fs.ReadLinkFS, and is safe for
// concurrent use.
//
// What differs from a checkout: a symbolic link is listed with fs.ModeSymlink,
// and Open, Stat, ReadFile and ReadDir of it, or of a path through it, fail
// with ErrSymlink (ReadLink and Lstat work). A submodule is listed with
// fs.ModeIrregular and opening it fails with ErrSubmodule. A name that is not
// valid UTF-8 is listed but cannot be opened (io/fs paths are UTF-8, so
// fs.ErrInvalid): a loader reports it rather than missing it. Every file and
// directory has the commit's committer time as its modification time;
// executable files have mode 0755, others 0644. Every call fails once the
// context given to TreeFS is done.
type FS struct {
	// ctx is kept because io/fs methods take no context; it bounds the FS's life.
	ctx    context.Context
	repo   *Repo
	commit Hash
	root   Hash
	mtime  time.Time
	lim    Limits
	spent  atomic.Int64 // blob bytes read so far
}

// TreeFS returns the tree of commit as a file system. Reads are bounded by
// lim and stop when ctx is done.
func (r *Repo) TreeFS(ctx context.Context, commit Hash, lim Limits) (*FS, error) {
	c, err := r.commitInfo(ctx, commit)
	if err != nil {
		return nil, err
	}
	return &FS{ctx: ctx, repo: r, commit: commit, root: c.tree, mtime: c.when, lim: lim.withDefaults()}, nil
}

// Commit is the commit the FS shows.
func (f *FS) Commit() Hash { return f.commit }

// ReadFile reads one file of a commit, at most max bytes (0: the default
// limit). A missing file gives an error for which errors.Is(err,
// fs.ErrNotExist) holds.
func (r *Repo) ReadFile(ctx context.Context, commit Hash, name string, max int64) ([]byte, error) {
	f, err := r.TreeFS(ctx, commit, Limits{MaxFileSize: max, MaxTotalBytes: max})
	if err != nil {
		return nil, err
	}
	return f.ReadFile(name)
}

// node is a resolved path.
type node struct {
	name string // base name, "." for the root
	mode filemode.FileMode
	hash Hash
}

func (n node) isDir() bool { return n.mode == filemode.Dir }

// lookup resolves name without following links. A link or submodule in the
// middle of the path is an error; at the end it is returned.
func (f *FS) lookup(op, name string) (node, error) {
	if err := f.ctx.Err(); err != nil {
		return node{}, &fs.PathError{Op: op, Path: name, Err: err}
	}
	if !fs.ValidPath(name) {
		return node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	n := node{name: ".", mode: filemode.Dir, hash: f.root}
	if name == "." {
		return n, nil
	}
	rest := name
	walked := "" // the path resolved so far, for errors
	for rest != "" {
		var elem string
		walked = name[:len(name)-len(rest)]
		walked = strings.TrimSuffix(walked, "/")
		elem, rest, _ = strings.Cut(rest, "/")
		switch {
		case n.mode == filemode.Symlink:
			return node{}, &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%s %w", walked, ErrSymlink)}
		case n.mode == filemode.Submodule:
			return node{}, &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%s %w", walked, ErrSubmodule)}
		case !n.isDir():
			return node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		es, err := f.repo.tree(n.hash)
		if err != nil {
			return node{}, &fs.PathError{Op: op, Path: name, Err: err}
		}
		i := sort.Search(len(es), func(i int) bool { return es[i].name >= elem })
		if i == len(es) || es[i].name != elem {
			return node{}, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		n = node{name: elem, mode: es[i].mode, hash: es[i].hash}
	}
	return n, nil
}

// checkFollowable refuses links and submodules where the caller wants content.
func checkFollowable(op, name string, n node) error {
	switch {
	case n.mode == filemode.Symlink:
		return &fs.PathError{Op: op, Path: name, Err: ErrSymlink}
	case n.mode == filemode.Submodule:
		return &fs.PathError{Op: op, Path: name, Err: ErrSubmodule}
	case !n.isDir() && !isRegular(n.mode):
		return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("unknown git file mode %o", uint32(n.mode))}
	}
	return nil
}

func isRegular(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// Open opens a file or directory. Links and submodules are refused.
func (f *FS) Open(name string) (fs.File, error) {
	n, err := f.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if err := checkFollowable("open", name, n); err != nil {
		return nil, err
	}
	info, err := f.info("open", name, n)
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		es, err := f.entries("open", name, n)
		if err != nil {
			return nil, err
		}
		return &dirFile{info: info, entries: es, path: name}, nil
	}
	if info.size > f.lim.MaxFileSize {
		return nil, f.tooLarge("open", name, info.size)
	}
	return &file{fsys: f, path: name, info: info, hash: n.hash}, nil
}

// ReadFile reads a whole regular file.
func (f *FS) ReadFile(name string) ([]byte, error) {
	n, err := f.lookup("read", name)
	if err != nil {
		return nil, err
	}
	if err := checkFollowable("read", name, n); err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	return f.readBlob("read", name, n.hash, -1)
}

// readBlob reads a blob, checking its size from the object header against
// the limits and charging the budget before any content is read. want is
// the size already known (from Open), or -1.
func (f *FS) readBlob(op, name string, h Hash, want int64) ([]byte, error) {
	if err := f.ctx.Err(); err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	charged := int64(0)
	b, err := f.repo.readBlob(h, func(size int64) error {
		if want >= 0 && size != want {
			return fmt.Errorf("blob %s: size %d, expected %d", h, size, want)
		}
		if size > f.lim.MaxFileSize {
			return f.tooLarge(op, name, size)
		}
		if spent := f.spent.Add(size); spent > f.lim.MaxTotalBytes {
			f.spent.Add(-size)
			return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("%d more bytes %w (%d bytes)", size, ErrBudget, f.lim.MaxTotalBytes)}
		}
		charged = size
		return nil
	})
	if err != nil {
		f.spent.Add(-charged) // a failed read does not use the budget
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return b, nil
}

func (f *FS) tooLarge(op, name string, size int64) error {
	return &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("blob of %d bytes %w of %d bytes", size, ErrTooLarge, f.lim.MaxFileSize)}
}

// ReadDir lists a directory sorted by name. Links and submodules appear in
// the list with their own types; a link to a directory is not a directory.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := f.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if err := checkFollowable("readdir", name, n); err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	return f.entries("readdir", name, n)
}

func (f *FS) entries(op, name string, n node) ([]fs.DirEntry, error) {
	es, err := f.repo.tree(n.hash)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	out := make([]fs.DirEntry, len(es))
	for i, e := range es {
		out[i] = &dirEntry{fsys: f, dir: name, n: node{name: e.name, mode: e.mode, hash: e.hash}}
	}
	return out, nil
}

// Stat describes a file or directory. Links and submodules are refused, as
// Stat follows links and gitfs does not; use Lstat for them.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	n, err := f.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	if err := checkFollowable("stat", name, n); err != nil {
		return nil, err
	}
	return f.info("stat", name, n)
}

// Lstat describes a path without following a final link: a link is
// described as a link (its size is the length of its target), a submodule as
// an irregular file.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	n, err := f.lookup("lstat", name)
	if err != nil {
		return nil, err
	}
	return f.info("lstat", name, n)
}

// ReadLink returns the target of a link as recorded in the commit. The
// target is data, not a path to open: gitfs never follows it.
func (f *FS) ReadLink(name string) (string, error) {
	n, err := f.lookup("readlink", name)
	if err != nil {
		return "", err
	}
	if n.mode != filemode.Symlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: errors.New("not a symbolic link")}
	}
	size, err := f.repo.blobSize(n.hash)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	if size > maxLinkSize {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fmt.Errorf("link target of %d bytes %w of %d bytes", size, ErrTooLarge, maxLinkSize)}
	}
	b, err := f.readBlob("readlink", name, n.hash, -1)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (f *FS) info(op, name string, n node) (*fileInfo, error) {
	fi := &fileInfo{name: n.name, mtime: f.mtime}
	switch {
	case n.isDir():
		fi.mode = fs.ModeDir | 0o755
	case n.mode == filemode.Submodule:
		fi.mode = fs.ModeIrregular
	default:
		size, err := f.repo.blobSize(n.hash)
		if err != nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
		fi.size = size
		switch n.mode {
		case filemode.Symlink:
			fi.mode = fs.ModeSymlink | 0o777
		case filemode.Executable:
			fi.mode = 0o755
		case filemode.Regular, filemode.Deprecated:
			fi.mode = 0o644
		default:
			fi.mode = fs.ModeIrregular
		}
	}
	return fi, nil
}

type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (i *fileInfo) Name() string       { return i.name }
func (i *fileInfo) Size() int64        { return i.size }
func (i *fileInfo) Mode() fs.FileMode  { return i.mode }
func (i *fileInfo) ModTime() time.Time { return i.mtime }
func (i *fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *fileInfo) Sys() any           { return nil }

type dirEntry struct {
	fsys *FS
	dir  string
	n    node
}

func (d *dirEntry) Name() string { return d.n.name }
func (d *dirEntry) IsDir() bool  { return d.n.isDir() }
func (d *dirEntry) Type() fs.FileMode {
	switch {
	case d.n.isDir():
		return fs.ModeDir
	case d.n.mode == filemode.Symlink:
		return fs.ModeSymlink
	case isRegular(d.n.mode):
		return 0
	}
	return fs.ModeIrregular
}

// Info looks the size up lazily, so listing a directory reads no blob header.
func (d *dirEntry) Info() (fs.FileInfo, error) {
	return d.fsys.info("stat", path.Join(d.dir, d.n.name), d.n)
}

func (d *dirEntry) String() string { return fs.FormatDirEntry(d) }

// ContentKey is FS.ContentKey of the entry, without resolving its path
// again: a walk of a large tree names every file's content at no cost.
func (d *dirEntry) ContentKey() (string, bool) {
	if d.n.mode != filemode.Regular && d.n.mode != filemode.Executable {
		return "", false
	}
	return "git-blob:" + d.n.hash.String(), true
}

// file is an open regular file; its content is read on first use.
type file struct {
	fsys   *FS
	path   string
	info   *fileInfo
	hash   Hash
	r      *bytes.Reader
	closed bool
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *file) load(op string) error {
	if f.closed {
		return &fs.PathError{Op: op, Path: f.path, Err: fs.ErrClosed}
	}
	if f.r != nil {
		return nil
	}
	b, err := f.fsys.readBlob(op, f.path, f.hash, f.info.size)
	if err != nil {
		return err
	}
	f.r = bytes.NewReader(b)
	return nil
}

func (f *file) Read(p []byte) (int, error) {
	if err := f.load("read"); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if err := f.load("read"); err != nil {
		return 0, err
	}
	return f.r.ReadAt(p, off)
}

func (f *file) Seek(off int64, whence int) (int64, error) {
	if err := f.load("seek"); err != nil {
		return 0, err
	}
	return f.r.Seek(off, whence)
}

func (f *file) Close() error {
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	f.closed, f.r = true, nil
	return nil
}

// dirFile is an open directory.
type dirFile struct {
	path    string
	info    *fileInfo
	entries []fs.DirEntry
	off     int
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: errors.New("is a directory")}
}
func (d *dirFile) Close() error { return nil }

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return append([]fs.DirEntry(nil), rest...), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return append([]fs.DirEntry(nil), rest[:n]...), nil
}

// Interface checks.
var (
	_ fs.ReadDirFS   = (*FS)(nil)
	_ fs.ReadFileFS  = (*FS)(nil)
	_ fs.StatFS      = (*FS)(nil)
	_ fs.ReadLinkFS  = (*FS)(nil)
	_ io.ReaderAt    = (*file)(nil)
	_ io.Seeker      = (*file)(nil)
	_ fs.ReadDirFile = (*dirFile)(nil)
)

// ContentKey names the content of a regular file by its blob hash, so that
// parsers can reuse what they made of the same content (catalog/load.ParseCache).
// Links, submodules, directories and missing paths have no key.
func (f *FS) ContentKey(name string) (string, bool) {
	n, err := f.lookup("contentkey", name)
	if err != nil || (n.mode != filemode.Regular && n.mode != filemode.Executable) {
		return "", false
	}
	return "git-blob:" + n.hash.String(), true
}
