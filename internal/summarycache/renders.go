package summarycache

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// RendersDir is where the renders of bundle directories (template.RenderStore) are kept, one file each.
const RendersDir = "bundle-renders-v1"

// DefaultRenderBytes bounds the renders kept on disk: a few hundred renders of the largest community
// packages' bundle directories (a few MB each).
const DefaultRenderBytes = 1 << 30

// maxRenderEntry bounds one render read back or written; a larger one is rendered again each time.
const maxRenderEntry = 128 << 20

// Renders keeps what bundle directories render to, between runs, one file per render named by a digest
// of the program's stamp and the render's key: a render made by another build is never found, and is
// removed like any old entry once the store is over its bound (least recently used first). Files are
// written whole under a temporary name and renamed, so concurrent runs never read half of one; a damaged
// one is a miss (the caller checks what it decodes). Safe for concurrent use.
type Renders struct {
	dir      string
	stamp    string
	maxBytes int64

	mu    sync.Mutex
	total int64 // bytes kept, -1 until first counted
}

// OpenRenders opens (creating it) the render store under the cache directory dir, for the program named by
// stamp, bounded to maxBytes (DefaultRenderBytes when 0 or less).
func OpenRenders(dir, stamp string, maxBytes int64) (*Renders, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultRenderBytes
	}
	d := filepath.Join(dir, RendersDir)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, err
	}
	return &Renders{dir: d, stamp: stamp, maxBytes: maxBytes, total: -1}, nil
}

func (r *Renders) path(key string) string {
	h := sha256.Sum256([]byte(r.stamp + "\x00" + key))
	name := hex.EncodeToString(h[:])
	return filepath.Join(r.dir, name[:2], name+".json")
}

// GetRender implements template.RenderStore.
func (r *Renders) GetRender(key string) ([]byte, bool) {
	if r == nil {
		return nil, false
	}
	p := r.path(key)
	f, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRenderEntry+1))
	if err != nil || len(data) > maxRenderEntry {
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // used: the last to go
	return data, true
}

// PutRender implements template.RenderStore; what cannot be written is dropped (the next run renders again).
func (r *Renders) PutRender(key string, data []byte) {
	if r == nil || len(data) > maxRenderEntry {
		return
	}
	p := r.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".render-*.tmp")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return
	}
	if err := tmp.Close(); err != nil || os.Rename(tmp.Name(), p) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.total < 0 {
		r.total = r.count()
	} else {
		r.total += int64(len(data))
	}
	if r.total > r.maxBytes {
		r.total = r.evict(r.maxBytes * 3 / 4)
	}
}

type renderEntry struct {
	path string
	size int64
	used time.Time
}

func (r *Renders) entries() []renderEntry {
	var out []renderEntry
	_ = filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || filepath.Ext(p) != ".json" {
			return nil
		}
		if info, err := d.Info(); err == nil {
			out = append(out, renderEntry{p, info.Size(), info.ModTime()})
		}
		return nil
	})
	return out
}

func (r *Renders) count() int64 {
	var n int64
	for _, e := range r.entries() {
		n += e.size
	}
	return n
}

// evict removes the least recently used renders until at most keep bytes are left, and returns what is left.
func (r *Renders) evict(keep int64) int64 {
	es := r.entries()
	sort.Slice(es, func(i, j int) bool { return es[i].used.After(es[j].used) })
	var n int64
	for _, e := range es {
		if n+e.size > keep {
			_ = os.Remove(e.path)
			continue
		}
		n += e.size
	}
	return n
}
