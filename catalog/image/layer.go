package image

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"sort"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/load"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/pgzip"
)

// ConfigsDir is where the catalog lives in the image, and the value of the
// label operators.operatorframework.io.index.configs.v1.
const ConfigsDir = "/configs"

// epoch is the modification time of every entry of the layer: fixed, so the
// layer's digest depends on the catalog's content only.
var epoch = time.Unix(0, 0).UTC()

// Limits bound what goes into the layer.
type Limits struct {
	MaxFiles      int   // default 200,000
	MaxTotalBytes int64 // default 4 GiB
	// Cache, when set and the catalog's file system names contents
	// (load.ContentKeyer, as a git tree does), gives an unchanged
	// catalog the layer it had, without reading or compressing it again.
	// It is not a bound: it is here because Limits travels with every build.
	Cache *LayerCache
	// TempDir holds the compressed layer while it is used (default
	// os.TempDir()). The file is unlinked at once: its space is freed when
	// the layer is no longer referenced.
	TempDir string
}

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = 200_000
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = 4 << 30
	}
	return l
}

// ErrLink: the catalog holds a symbolic link, which never goes into an image
// (it could point anywhere on the machine that builds it).
var ErrLink = errors.New("symbolic links are not copied into the catalog image")

// ConfigsLayer makes the layer holding the catalog under /configs: the files
// the loader reads (load.ListFiles: what validation saw, no more) and the
// .indexignore files that chose them, with their directories. Entries are
// sorted by path, directories 0755 and files 0644, owned by uid/gid 0, all
// with the same fixed time, so the same catalog always gives the same layer
// digest. A link or special file the loader would report is refused; one an
// .indexignore hides is left out, as the loader leaves it.
//
// The layer is made in one pass, file by file: the tar is hashed for the diff
// ID and compressed on every core (pgzip, fixed 1 MiB blocks, so the bytes do
// not depend on the number of cores), and the compressed bytes are hashed and
// written to an unlinked temporary file that uploads read. Memory stays a few
// MiB whatever the catalog's size.
func ConfigsLayer(ctx context.Context, catalogFS fs.FS, lim Limits) (v1.Layer, error) {
	lim = lim.withDefaults()
	entries, err := layerEntries(ctx, catalogFS, lim)
	if err != nil {
		return nil, err
	}
	key := contentKey(catalogFS, entries)
	if key != "" && lim.Cache != nil {
		if l, ok := lim.Cache.get(key); ok {
			return l, nil
		}
	}
	l, err := writeLayer(ctx, catalogFS, entries, ConfigsDir[1:], lim.TempDir)
	if err != nil {
		return nil, err
	}
	if key != "" && lim.Cache != nil {
		lim.Cache.put(key, l)
	}
	return l, nil
}

// ContentKey names the content of the layer ConfigsLayer would make of catalogFS (the names of the catalog's
// files and their content keys, as a git tree names them by blob id) without reading a file: two catalogs with
// the same key give the same layer. "" when the file system cannot name contents. The error is the listing's.
func ContentKey(ctx context.Context, catalogFS fs.FS, lim Limits) (string, error) {
	if _, ok := catalogFS.(load.ContentKeyer); !ok {
		return "", nil
	}
	entries, err := layerEntries(ctx, catalogFS, lim.withDefaults())
	if err != nil {
		return "", err
	}
	return contentKey(catalogFS, entries), nil
}

type entry struct {
	name string
	dir  bool
}

// layerEntries lists what goes into the layer, sorted by path: the catalog's
// file set with the directories that hold it.
func layerEntries(ctx context.Context, catalogFS fs.FS, lim Limits) ([]entry, error) {
	set, err := load.ListFiles(ctx, catalogFS, catalog.Limits{MaxFiles: lim.MaxFiles, MaxTotalSize: lim.MaxTotalBytes})
	if err != nil {
		return nil, fmt.Errorf("reading the catalog: %w", err)
	}
	for _, f := range set.Findings {
		if f.Rule == "load.symlink" {
			return nil, fmt.Errorf("%s: %w", f.File, ErrLink)
		}
		return nil, fmt.Errorf("%s: %s", f.File, f.Message)
	}
	names := make([]string, 0, len(set.Files)+len(set.IndexIgnores))
	for _, f := range set.Files {
		names = append(names, f.Path)
	}
	names = append(names, set.IndexIgnores...)
	dirs := map[string]bool{".": true}
	entries := []entry{{name: ".", dir: true}}
	for _, n := range names {
		entries = append(entries, entry{name: n})
		for d := path.Dir(n); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			entries = append(entries, entry{name: d, dir: true})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, nil
}

// contentKey names the layer's content without reading it, from the names
// of the entries and the content keys of the files; "" when the file system
// cannot name contents.
func contentKey(catalogFS fs.FS, entries []entry) string {
	keys, ok := catalogFS.(load.ContentKeyer)
	if !ok {
		return ""
	}
	h := sha256.New()
	for _, e := range entries {
		if e.dir {
			fmt.Fprintf(h, "d %q\n", e.name)
			continue
		}
		k, ok := keys.ContentKey(e.name)
		if !ok {
			return ""
		}
		fmt.Fprintf(h, "f %q %q\n", e.name, k)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// compressBlock is pgzip's block: fixed, so that the compressed bytes are
// the same on any number of cores.
const compressBlock = 1 << 20

// writeLayer writes the tar of entries, compressed, to an unlinked
// temporary file, hashing both forms on the way.
func writeLayer(ctx context.Context, catalogFS fs.FS, entries []entry, prefix, tempDir string) (_ *fileLayer, err error) {
	f, err := os.CreateTemp(tempDir, "catalogbot-layer-*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("the catalog layer's temporary file: %w", err)
	}
	// Unlinked at once: nothing is left behind if the process dies, and
	// the space is freed with the last reference to the layer.
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("the catalog layer's temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	compressed := &hashingWriter{w: f, h: sha256.New()}
	gz, err := pgzip.NewWriterLevel(compressed, pgzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := gz.SetConcurrency(compressBlock, 2*runtime.GOMAXPROCS(0)); err != nil {
		return nil, err
	}
	gz.ModTime = epoch
	uncompressed := &hashingWriter{w: gz, h: sha256.New()}
	if err := writeTar(ctx, uncompressed, catalogFS, entries, prefix); err != nil {
		gz.Close()
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("compressing the catalog layer: %w", err)
	}
	return &fileLayer{
		f:      f,
		size:   compressed.n,
		digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(compressed.h.Sum(nil))},
		diffID: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(uncompressed.h.Sum(nil))},
	}, nil
}

// writeTar writes entries to w as the layer's tar, under prefix ("" for the
// image's root), streaming each file.
func writeTar(ctx context.Context, w io.Writer, catalogFS fs.FS, entries []entry, prefix string) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := path.Join(prefix, e.name)
		if name == "." {
			continue // the image's root is not an entry of its own
		}
		h := &tar.Header{Name: name, ModTime: epoch, Uid: 0, Gid: 0, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		if err := writeTarFile(tw, h, catalogFS, e.name); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeTarFile(tw *tar.Writer, h *tar.Header, catalogFS fs.FS, name string) error {
	f, err := catalogFS.Open(name)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, info.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if n != h.Size {
		return fmt.Errorf("reading %s: %d bytes read, %d expected: the file changed while the layer was written", name, n, h.Size)
	}
	return nil
}

// hashingWriter hashes and counts what it passes on.
type hashingWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (w *hashingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// fileLayer is a layer whose compressed bytes are in an unlinked file.
type fileLayer struct {
	f              *os.File
	size           int64
	digest, diffID v1.Hash
}

var _ v1.Layer = (*fileLayer)(nil)

func (l *fileLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error) { return types.DockerLayer, nil }

// Compressed reads the file from the start; readers do not share an offset,
// so concurrent uploads (one per platform) are safe.
func (l *fileLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(l.f, 0, l.size)), nil
}

// Uncompressed inflates the file; nothing of the build calls it, since the
// diff ID is known.
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) {
	return pgzip.NewReader(io.NewSectionReader(l.f, 0, l.size))
}
