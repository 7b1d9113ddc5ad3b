package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/catalogbot/catalogbot/catalog"
)

// DiskCache keeps built catalog layers on disk between processes, with the findings of the validation that
// let them be built, keyed by the catalog directory's file metadata (DirKey). `catalogbot build` of a catalog
// that has not changed since a build on this machine reads none of its files: it lists and stats them, takes
// the layer and the findings from here, and pushing costs the registry's "already there" answers. Entries are
// written whole (a temporary file renamed into place) and read defensively: a damaged entry is a miss, and a
// layer whose bytes no longer match its digest is refused by the registry on upload (uploads are verified
// by digest), never pushed under another name.
type DiskCache struct {
	dir      string
	maxBytes int64
	now      func() time.Time
}

// DefaultDiskCacheBytes bounds a DiskCache's layers when 0 is given.
const DefaultDiskCacheBytes = 2 << 30

// diskCacheFormat names the layout and the layer format; a change of either makes every older entry a miss.
const diskCacheFormat = "catalogbot-layers-v1"

// maxDiskMeta bounds one entry's description (its findings included) when read back.
const maxDiskMeta = 16 << 20

// racyWindow: a file changed this recently may change again within the same time stamp, so its metadata does
// not yet name its content (git calls such index entries racy).
const racyWindow = 2 * time.Second

// OpenDiskCache opens (creating it) the layer cache under dir, bounded to maxBytes of layers
// (DefaultDiskCacheBytes when 0 or less).
func OpenDiskCache(dir string, maxBytes int64) (*DiskCache, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultDiskCacheBytes
	}
	d := filepath.Join(dir, diskCacheFormat)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, fmt.Errorf("the layer cache %s: %w", d, err)
	}
	return &DiskCache{dir: d, maxBytes: maxBytes, now: time.Now}, nil
}

// diskMeta describes one cached layer.
type diskMeta struct {
	Format   string            `json:"format"`
	Digest   string            `json:"digest"`
	DiffID   string            `json:"diff_id"`
	Size     int64             `json:"size"`
	Findings []catalog.Finding `json:"findings"`
}

// DirKey names the layer ConfigsLayer would make of the catalog directory dir, and the validation of it,
// from the metadata of the files that go into it — path, mode, size, modification and change times, device
// and inode — without reading a file. A change of content changes the change time, which no one can set back
// (unlike the modification time). ok is false when the metadata cannot be trusted to name the content: a
// platform without change times or inodes, or a file changed within the last two seconds. The error is the
// listing's (a link, a file over the limits): the build reports it as it would without the cache.
func (c *DiskCache) DirKey(ctx context.Context, dir string, lim Limits) (key string, ok bool, err error) {
	entries, err := layerEntries(ctx, os.DirFS(dir), lim.withDefaults())
	if err != nil {
		return "", false, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", diskCacheFormat)
	recent := c.now().Add(-racyWindow)
	for _, e := range entries {
		if e.dir {
			fmt.Fprintf(h, "d %q\n", e.name)
			continue
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.name)))
		if err != nil {
			return "", false, err
		}
		st, known := statOf(fi)
		if !known || fi.ModTime().After(recent) || st.ctime.After(recent) {
			return "", false, nil
		}
		fmt.Fprintf(h, "f %q %o %d %d %d %d %d\n", e.name, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), st.ctime.UnixNano(), st.dev, st.ino)
	}
	return hex.EncodeToString(h.Sum(nil)), true, nil
}

// fileStat is what DirKey needs beyond fs.FileInfo.
type fileStat struct {
	ctime    time.Time
	dev, ino uint64
}

// Load returns the layer and the validation findings kept under key.
func (c *DiskCache) Load(key string) (v1.Layer, []catalog.Finding, bool) {
	if !validKey(key) {
		return nil, nil, false
	}
	meta, err := c.readMeta(key)
	if err != nil {
		return nil, nil, false
	}
	digest, err1 := v1.NewHash(meta.Digest)
	diffID, err2 := v1.NewHash(meta.DiffID)
	if err1 != nil || err2 != nil {
		return nil, nil, false
	}
	f, err := os.Open(filepath.Join(c.dir, key+".layer"))
	if err != nil {
		return nil, nil, false
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != meta.Size {
		f.Close()
		return nil, nil, false
	}
	// Recently used: eviction takes the entries used longest ago.
	now := c.now()
	_ = os.Chtimes(filepath.Join(c.dir, key+".json"), now, now)
	return &fileLayer{f: f, size: meta.Size, digest: digest, diffID: diffID}, meta.Findings, true
}

func (c *DiskCache) readMeta(key string) (*diskMeta, error) {
	f, err := os.Open(filepath.Join(c.dir, key+".json"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDiskMeta+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxDiskMeta {
		return nil, errors.New("entry too large")
	}
	var m diskMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m.Format != diskCacheFormat || m.Size <= 0 {
		return nil, errors.New("entry of another format")
	}
	return &m, nil
}

// Save keeps layer (made by ConfigsLayer) and the findings of the validation under key, then evicts the
// entries used longest ago past the cache's bound. A layer larger than the whole bound is not kept.
func (c *DiskCache) Save(key string, layer v1.Layer, findings []catalog.Finding) error {
	if !validKey(key) {
		return errors.New("not a layer cache key")
	}
	size, err := layer.Size()
	if err != nil {
		return err
	}
	if size > c.maxBytes {
		return nil
	}
	digest, err := layer.Digest()
	if err != nil {
		return err
	}
	diffID, err := layer.DiffID()
	if err != nil {
		return err
	}
	rc, err := layer.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := c.writeFile(key+".layer", func(w io.Writer) error {
		n, err := io.Copy(w, rc)
		if err == nil && n != size {
			err = fmt.Errorf("the layer has %d bytes, not %d", n, size)
		}
		return err
	}); err != nil {
		return err
	}
	if findings == nil {
		findings = []catalog.Finding{}
	}
	meta := diskMeta{Format: diskCacheFormat, Digest: digest.String(), DiffID: diffID.String(), Size: size, Findings: findings}
	if err := c.writeFile(key+".json", func(w io.Writer) error { return json.NewEncoder(w).Encode(meta) }); err != nil {
		os.Remove(filepath.Join(c.dir, key+".layer"))
		return err
	}
	return c.evict()
}

// writeFile writes name whole or not at all.
func (c *DiskCache) writeFile(name string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(c.dir, name))
}

// evict removes the entries used longest ago until the layers fit the bound, and leftovers of interrupted
// writes.
func (c *DiskCache) evict() error {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	type ent struct {
		key  string
		used time.Time
		size int64
	}
	var ents []ent
	var total int64
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".tmp-") {
			if fi, err := de.Info(); err == nil && c.now().Sub(fi.ModTime()) > time.Hour {
				os.Remove(filepath.Join(c.dir, name))
			}
			continue
		}
		key, ok := strings.CutSuffix(name, ".json")
		if !ok {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		lfi, err := os.Stat(filepath.Join(c.dir, key+".layer"))
		if err != nil {
			os.Remove(filepath.Join(c.dir, name))
			continue
		}
		ents = append(ents, ent{key: key, used: fi.ModTime(), size: lfi.Size()})
		total += lfi.Size()
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].used.Before(ents[j].used) })
	for _, e := range ents {
		if total <= c.maxBytes {
			break
		}
		os.Remove(filepath.Join(c.dir, e.key+".json"))
		os.Remove(filepath.Join(c.dir, e.key+".layer"))
		total -= e.size
	}
	return nil
}

// validKey: a key is 64 lower-case hex digits, so it can never name a path outside the cache.
func validKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	_, err := hex.DecodeString(key)
	return err == nil && strings.ToLower(key) == key
}
