package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
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
// the loader reads (catalog.ListFiles: what validation saw, no more) and the
// .indexignore files that chose them, with their directories. Entries are
// sorted by path, directories 0755 and files 0644, owned by uid/gid 0, all
// with the same fixed time, so the same catalog always gives the same layer
// digest. A link or special file the loader would report is refused; one an
// .indexignore hides is left out, as the loader leaves it.
func ConfigsLayer(catalogFS fs.FS, lim Limits) (v1.Layer, error) {
	entries, err := layerEntries(catalogFS, lim)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		name := path.Join(ConfigsDir[1:], e.name)
		h := &tar.Header{Name: name, ModTime: epoch, Uid: 0, Gid: 0, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		data, err := fs.ReadFile(catalogFS, e.name)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", e.name, err)
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	// The uncompressed tar gives the diff ID by hashing alone; the
	// compressed bytes are made once, for the digest, and kept for every
	// upload (without the caching, go-containerregistry compresses again
	// each time they are read).
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithCompressedCaching)
}

type entry struct {
	name string
	dir  bool
}

// layerEntries lists what goes into the layer, sorted by path: the catalog's
// file set with the directories that hold it.
func layerEntries(catalogFS fs.FS, lim Limits) ([]entry, error) {
	lim = lim.withDefaults()
	set, err := catalog.ListFiles(context.Background(), catalogFS, catalog.Limits{MaxFiles: lim.MaxFiles, MaxTotalSize: lim.MaxTotalBytes})
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
