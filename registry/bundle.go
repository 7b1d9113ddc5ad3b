package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// Labels of a bundle image's config that tell what the image is. opm renders an image as a bundle when its
// config has the package label, as a file-based catalog when it has the configs label, and as a sqlite index
// when it has the database label.
const (
	LabelBundlePackage = "operators.operatorframework.io.bundle.package.v1"
	LabelIndexConfigs  = "operators.operatorframework.io.index.configs.v1"
	LabelIndexDatabase = "operators.operatorframework.io.index.database.v1"
)

// ErrNotBundleImage is wrapped by Bundle's error when the image is not a registry+v1 bundle image.
var ErrNotBundleImage = errors.New("not a registry+v1 bundle image")

// BundleImage is a registry+v1 bundle image as Bundle read it.
type BundleImage struct {
	Ref    string            // the reference as given
	Digest string            // the manifest's digest, "sha256:…"
	Labels map[string]string // the labels of the image config
	// FS holds manifests/ and metadata/ as the image's layers leave them (whiteouts applied), nothing else.
	// Symbolic links, hard links and special files are there as entries that are not regular files (mode
	// ModeSymlink or ModeIrregular), empty when read, never followed.
	FS fs.FS
}

// Bundle pulls the bundle image ref through the client (its address guard, credentials, retries and budget),
// within lim: the manifest, the config (for its labels) and every layer, keeping what lies under manifests/ and
// metadata/. The image is a bundle image when its config has the package label, as opm decides; otherwise the
// error wraps ErrNotBundleImage and says what the image looks like. As for Manifests, a registry that does not
// provide the image gives an *Error, an image beyond lim an error wrapping ErrLimit.
func (c *Client) Bundle(ctx context.Context, ref string, lim Limits) (*BundleImage, error) {
	p, err := c.pull(ctx, ref, lim, true, "manifests", "metadata")
	if err != nil {
		return nil, err
	}
	if _, ok := p.labels[LabelBundlePackage]; !ok {
		return nil, fmt.Errorf("%s: %w: %s", ref, ErrNotBundleImage, describeLabels(p.labels))
	}
	if len(p.tree.nodes) == 0 {
		return nil, fmt.Errorf("%s: %w: it has the bundle labels but its layers hold neither manifests/ nor metadata/", ref, ErrNotBundleImage)
	}
	return &BundleImage{Ref: ref, Digest: p.digest, Labels: p.labels, FS: newMemFS(p.tree, time.Time{})}, nil
}

// describeLabels says why labels do not make a bundle image.
func describeLabels(labels map[string]string) string {
	switch {
	case labels[LabelIndexConfigs] != "":
		return fmt.Sprintf("it is a file-based catalog image (label %s=%s), not a bundle", LabelIndexConfigs, labels[LabelIndexConfigs])
	case labels[LabelIndexDatabase] != "":
		return fmt.Sprintf("it is a sqlite index image (label %s=%s), not a bundle", LabelIndexDatabase, labels[LabelIndexDatabase])
	case len(labels) == 0:
		return "its config has no labels; a bundle image has the " + LabelBundlePackage + " label"
	}
	keys := slices.Sorted(maps.Keys(labels))
	const shown = 10
	var list []string
	for i, k := range keys {
		if i == shown {
			list = append(list, fmt.Sprintf("and %d more", len(keys)-shown))
			break
		}
		v := labels[k]
		if len(v) > 80 {
			v = v[:80] + "…"
		}
		list = append(list, fmt.Sprintf("%q=%q", k, v))
	}
	return "its config has no " + LabelBundlePackage + " label; its labels are " + strings.Join(list, ", ")
}

// memFS is a read-only fs.FS over a tree, with every directory's entries sorted by name.
type memFS struct {
	nodes    map[string]*node
	children map[string][]string // directory ("." for the root) → base names, sorted
	modTime  time.Time
}

func newMemFS(t *tree, modTime time.Time) *memFS {
	m := &memFS{nodes: t.nodes, children: map[string][]string{}, modTime: modTime}
	for _, p := range t.paths() {
		m.children[path.Dir(p)] = append(m.children[path.Dir(p)], path.Base(p))
	}
	return m
}

var (
	_ fs.ReadDirFS  = (*memFS)(nil)
	_ fs.StatFS     = (*memFS)(nil)
	_ fs.ReadFileFS = (*memFS)(nil)
)

func (m *memFS) lookup(op, name string) (*node, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return &node{kind: nodeDir}, nil
	}
	n, ok := m.nodes[name]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

func (m *memFS) info(name string, n *node) *memInfo {
	return &memInfo{name: path.Base(name), n: n, modTime: m.modTime}
}

func (m *memFS) Open(name string) (fs.File, error) {
	n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	f := &memFile{fsys: m, name: name, n: n}
	if n.kind == nodeFile {
		f.r = bytes.NewReader(n.data)
	}
	return f, nil
}

func (m *memFS) Stat(name string) (fs.FileInfo, error) {
	n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	return m.info(name, n), nil
}

func (m *memFS) ReadFile(name string) ([]byte, error) {
	n, err := m.lookup("readfile", name)
	if err != nil {
		return nil, err
	}
	if n.kind == nodeDir {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: errors.New("is a directory")}
	}
	return slices.Clone(n.data), nil // empty for a link or special file
}

func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := m.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if n.kind != nodeDir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	var out []fs.DirEntry
	for _, base := range m.children[name] {
		p := base
		if name != "." {
			p = name + "/" + base
		}
		out = append(out, fs.FileInfoToDirEntry(m.info(p, m.nodes[p])))
	}
	return out, nil
}

var (
	errNotDir = errors.New("not a directory")
)

type memInfo struct {
	name    string
	n       *node
	modTime time.Time
}

func (i *memInfo) Name() string { return i.name }
func (i *memInfo) Size() int64  { return int64(len(i.n.data)) }
func (i *memInfo) Mode() fs.FileMode {
	switch i.n.kind {
	case nodeDir:
		return fs.ModeDir | 0o555
	case nodeFile:
		return 0o444
	case nodeSymlink:
		return fs.ModeSymlink | 0o777
	}
	return fs.ModeIrregular | 0o444
}
func (i *memInfo) ModTime() time.Time { return i.modTime }
func (i *memInfo) IsDir() bool        { return i.n.kind == nodeDir }
func (i *memInfo) Sys() any           { return nil }

type memFile struct {
	fsys   *memFS
	name   string
	n      *node
	r      *bytes.Reader
	listed int // entries ReadDir has returned
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.fsys.info(f.name, f.n), nil }
func (f *memFile) Close() error               { return nil }

func (f *memFile) Read(p []byte) (int, error) {
	switch {
	case f.n.kind == nodeDir:
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: errors.New("is a directory")}
	case f.r == nil:
		// A link or special file of the image: no content (its mode says what it is; it is never followed).
		return 0, io.EOF
	}
	return f.r.Read(p)
}

// ReadDir makes directories opened with Open listable (fs.ReadDirFile).
func (f *memFile) ReadDir(n int) ([]fs.DirEntry, error) {
	all, err := f.fsys.ReadDir(f.name)
	if err != nil {
		return nil, err
	}
	rest := all[f.listed:]
	if n > 0 {
		if len(rest) == 0 {
			return nil, io.EOF
		}
		rest = rest[:min(n, len(rest))]
	}
	f.listed += len(rest)
	return rest, nil
}
