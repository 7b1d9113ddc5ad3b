package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"

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

// ConfigsLayer makes the layer holding every regular file of catalog under
// /configs: entries sorted by path, directories 0755 and files 0644, owned by
// uid/gid 0, all with the same fixed time, so the same catalog always gives
// the same layer digest. Links and other special files are refused.
func ConfigsLayer(catalog fs.FS, lim Limits) (v1.Layer, error) {
	lim = lim.withDefaults()
	type entry struct {
		name string
		dir  bool
	}
	var entries []entry
	var total int64
	err := fs.WalkDir(catalog, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case d.IsDir():
			entries = append(entries, entry{name: p, dir: true})
			return nil
		case t&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %w", p, ErrLink)
		case !t.IsRegular():
			return fmt.Errorf("%s: not a regular file; only files and directories go into the catalog image", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		if total > lim.MaxTotalBytes {
			return fmt.Errorf("the catalog is over %d bytes", lim.MaxTotalBytes)
		}
		entries = append(entries, entry{name: p})
		if len(entries) > lim.MaxFiles {
			return fmt.Errorf("the catalog has over %d files", lim.MaxFiles)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the catalog: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

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
		data, err := fs.ReadFile(catalog, e.name)
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
