package registry

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// errBadName: a kept entry's name is not UTF-8, so no fs.FS can name it.
var errBadName = errors.New("a file name under manifests/ or metadata/ is not valid UTF-8")

// node is one entry of the file tree the layers of an image leave.
type node struct {
	kind nodeKind
	data []byte // regular files only
	link string // symlinks and hard links: the target as written
}

type nodeKind uint8

const (
	nodeDir nodeKind = iota
	nodeFile
	nodeSymlink
	nodeHardlink
	nodeOther // devices, FIFOs and the like
)

// tree is the union of an image's layers restricted to some top-level directories (a registry+v1 bundle
// image: manifests/ and metadata/), keyed by clean slash paths without a leading slash ("manifests",
// "manifests/csv.yaml"). Entries outside the roots are read past and never kept.
type tree struct {
	roots    []string
	nodes    map[string]*node
	maxFiles int

	layerFiles int // files of the layer being read
}

func newTree(maxFiles int, roots ...string) *tree {
	return &tree{roots: roots, nodes: map[string]*node{}, maxFiles: maxFiles}
}

// kept reports whether p is one of the roots or lies under one.
func (t *tree) kept(p string) bool {
	for _, r := range t.roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// removeAll deletes p and everything under it.
func (t *tree) removeAll(p string) {
	delete(t.nodes, p)
	prefix := p + "/"
	for k := range t.nodes {
		if strings.HasPrefix(k, prefix) {
			delete(t.nodes, k)
		}
	}
}

// clearUnder deletes everything under dir, keeping dir itself ("" clears the whole tree).
func (t *tree) clearUnder(dir string) {
	if dir == "" {
		clear(t.nodes)
		return
	}
	prefix := dir + "/"
	for k := range t.nodes {
		if strings.HasPrefix(k, prefix) {
			delete(t.nodes, k)
		}
	}
}

// layerEntry is one kept entry of a layer, applied once the whole layer is read.
type layerEntry struct {
	path string
	n    *node
}

// apply reads one layer's tar stream and lays it over the tree as an OCI image layer is: its whiteouts and
// opaque markers act on the layers below, then its entries replace what they shadow (a non-directory
// replaces a whole subtree; a directory over a directory merges). Parents an entry implies become
// directories. Regular file contents are read within r's byte budget.
func (t *tree) apply(r *boundedReader) error {
	tr := tar.NewReader(r)
	var opaque, whiteouts []string
	var entries []layerEntry
	t.layerFiles = 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		p := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if p == "" || p == "." {
			continue
		}
		dir, base := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case base == ".wh..wh..opq":
			if dir == "" || t.kept(dir) {
				opaque = append(opaque, dir)
			}
			if err := t.count(len(opaque) + len(whiteouts) + len(entries)); err != nil {
				return err
			}
			continue
		case strings.HasPrefix(base, ".wh."):
			if target := path.Join(dir, strings.TrimPrefix(base, ".wh.")); t.kept(target) {
				whiteouts = append(whiteouts, target)
			}
			if err := t.count(len(opaque) + len(whiteouts) + len(entries)); err != nil {
				return err
			}
			continue
		case !t.kept(p):
			continue
		case !utf8.ValidString(p):
			return fmt.Errorf("%w: %q", errBadName, p)
		}
		n := &node{}
		switch hdr.Typeflag {
		case tar.TypeDir:
			n.kind = nodeDir
		case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives still write TypeRegA
			if hdr.Size > r.left {
				return fmt.Errorf("%w: file %s is %d bytes, more than remain allowed", ErrLimit, p, hdr.Size)
			}
			data := make([]byte, hdr.Size)
			if _, err := io.ReadFull(tr, data); err != nil {
				return err
			}
			n.kind, n.data = nodeFile, data
		case tar.TypeSymlink:
			n.kind, n.link = nodeSymlink, hdr.Linkname
		case tar.TypeLink:
			n.kind, n.link = nodeHardlink, hdr.Linkname
		default:
			n.kind = nodeOther
		}
		entries = append(entries, layerEntry{p, n})
		if n.kind != nodeDir {
			t.layerFiles++
		}
		if t.layerFiles > t.maxFiles {
			return t.tooMany()
		}
		if err := t.count(len(opaque) + len(whiteouts) + len(entries)); err != nil {
			return err
		}
	}
	for _, d := range opaque {
		t.clearUnder(d)
	}
	for _, w := range whiteouts {
		t.removeAll(w)
	}
	for _, e := range entries {
		t.put(e.path, e.n)
	}
	files := 0
	for _, n := range t.nodes {
		if n.kind != nodeDir {
			files++
		}
	}
	if files > t.maxFiles {
		return t.tooMany()
	}
	return t.count(len(t.nodes))
}

// count bounds the entries of one layer (whiteouts and directories included) and of the tree: twice the
// files allowed.
func (t *tree) count(n int) error {
	if n > 2*t.maxFiles {
		return fmt.Errorf("%w: more than %d entries (files, directories and whiteouts) under %s", ErrLimit, 2*t.maxFiles, t.rootList())
	}
	return nil
}

func (t *tree) tooMany() error {
	return fmt.Errorf("%w: more than %d files under %s", ErrLimit, t.maxFiles, t.rootList())
}

func (t *tree) rootList() string { return strings.Join(t.roots, "/ and ") + "/" }

// put sets p to n, making its parents directories (a parent that is something else goes, with what it held).
func (t *tree) put(p string, n *node) {
	// From the top down, so that replacing a parent does not take away the directories just made below it.
	for i := strings.IndexByte(p, '/'); i >= 0; i = next(p, i) {
		parent := p[:i]
		if cur, ok := t.nodes[parent]; !ok || cur.kind != nodeDir {
			if ok {
				t.removeAll(parent)
			}
			t.nodes[parent] = &node{kind: nodeDir}
		}
	}
	if cur, ok := t.nodes[p]; ok {
		if cur.kind == nodeDir && n.kind == nodeDir {
			return // directories merge
		}
		t.removeAll(p)
	}
	t.nodes[p] = n
}

// next is the index of the slash after the one at i in p, or -1.
func next(p string, i int) int {
	if j := strings.IndexByte(p[i+1:], '/'); j >= 0 {
		return i + 1 + j
	}
	return -1
}

// filesIn returns the regular files directly in dir, by base name.
func (t *tree) filesIn(dir string) map[string][]byte {
	out := map[string][]byte{}
	if d, ok := t.nodes[dir]; !ok || d.kind != nodeDir {
		return out
	}
	for p, n := range t.nodes {
		if n.kind == nodeFile && path.Dir(p) == dir {
			out[path.Base(p)] = n.data
		}
	}
	return out
}

// paths lists the tree's paths, sorted.
func (t *tree) paths() []string {
	out := make([]string, 0, len(t.nodes))
	for p := range t.nodes {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
