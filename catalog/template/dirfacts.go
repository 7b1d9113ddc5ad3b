package template

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/load"
)

// DirFacts is what indexing one bundle directory learns: whether it names an image at all, the package and
// version its image pattern takes, and the digest of its image (catalog/image.BundleImage). All of it is a
// function of the directory's files, so it is kept by the directory's content key (DirKey) and a directory
// seen before is neither parsed nor built again.
type DirFacts struct {
	// Bundle: the directory loads with a CSV and nothing in it is unreadable (a link, a file over the
	// bounds); only such a directory names an image.
	Bundle  bool   `json:"bundle"`
	Package string `json:"package,omitempty"`
	Version string `json:"version,omitempty"`
	// Digest is the digest of the directory's image; "" when it was not built (no lookup by digest needed it
	// yet) or cannot be (NoImage).
	Digest string `json:"digest,omitempty"`
	// NoImage: the directory's content stops the image build (a link, a file over the image's bounds).
	NoImage bool `json:"noImage,omitempty"`
}

// built says whether the facts hold the outcome of the image build.
func (f DirFacts) built() bool { return f.Digest != "" || f.NoImage }

// DirFactsCache keeps DirFacts by content key, for every DirResolver given it (WithFacts): the checks of one
// pull request share one, and a process (the App, a CLI with a cache directory) may keep one across pull
// requests. It is bounded (the oldest entries go first) and safe for concurrent use.
type DirFactsCache struct {
	mu    sync.Mutex
	max   int
	m     map[string]DirFacts
	order []string // keys, oldest first
	added int
}

// DefaultDirFacts bounds a DirFactsCache made with 0: far more bundle directories than a repository of
// thousands of packages holds, at a few hundred bytes each.
const DefaultDirFacts = 200_000

// NewDirFactsCache makes an empty cache of at most max entries (DefaultDirFacts when 0 or less).
func NewDirFactsCache(max int) *DirFactsCache {
	if max <= 0 {
		max = DefaultDirFacts
	}
	return &DirFactsCache{max: max, m: map[string]DirFacts{}}
}

// get returns the facts kept for key.
func (c *DirFactsCache) get(key string) (DirFacts, bool) {
	if c == nil || key == "" {
		return DirFacts{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.m[key]
	return f, ok
}

// put keeps f for key; a digest already known is not forgotten by facts that lack it.
func (c *DirFactsCache) put(key string, f DirFacts) {
	if c == nil || key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.m[key]
	if had {
		if old == f || (old.built() && !f.built()) {
			return
		}
	} else {
		c.order = append(c.order, key)
	}
	c.m[key] = f
	c.added++
	for len(c.m) > c.max && len(c.order) > 0 {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

// Len is the number of directories kept.
func (c *DirFactsCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Added is the number of facts learnt or completed since the cache was made or read.
func (c *DirFactsCache) Added() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.added
}

// dirFactsLine is one line of a written cache: the stamp line first, then one entry a line.
type dirFactsLine struct {
	Stamp string    `json:"stamp,omitempty"`
	Key   string    `json:"key,omitempty"`
	Facts *DirFacts `json:"facts,omitempty"`
}

// maxDirFactsLine bounds one line of a written cache when it is read back.
const maxDirFactsLine = 64 << 10

// WriteTo writes the cache, oldest entry first, under stamp (what names the program and its image builder:
// facts written by another build are not read back).
func (c *DirFactsCache) WriteTo(w io.Writer, stamp string) error {
	c.mu.Lock()
	keys := append([]string(nil), c.order...)
	facts := make([]DirFacts, len(keys))
	for i, k := range keys {
		facts[i] = c.m[k]
	}
	c.mu.Unlock()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(dirFactsLine{Stamp: stamp}); err != nil {
		return err
	}
	for i, k := range keys {
		if err := enc.Encode(dirFactsLine{Key: k, Facts: &facts[i]}); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// errDirFactsStamp: the cache was written by another build.
var errDirFactsStamp = errors.New("the bundle directory facts were written by another build")

// ReadDirFactsCache reads what WriteTo wrote under the same stamp, into a cache of at most max entries. A
// foreign stamp or a damaged line is an error: the caller starts from an empty cache.
func ReadDirFactsCache(r io.Reader, stamp string, max int) (*DirFactsCache, error) {
	c := NewDirFactsCache(max)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxDirFactsLine)
	first := true
	for sc.Scan() {
		var l dirFactsLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("bundle directory facts: %w", err)
		}
		if first {
			if l.Stamp != stamp {
				return nil, errDirFactsStamp
			}
			first = false
			continue
		}
		if l.Key == "" || l.Facts == nil {
			return nil, errors.New("bundle directory facts: an entry without key or facts")
		}
		c.put(l.Key, *l.Facts)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bundle directory facts: %w", err)
	}
	if first {
		return nil, errDirFactsStamp
	}
	c.added = 0
	return c, nil
}

// dirKeyFormat names how DirKey names a directory and what DirFacts holds; a change of either changes it.
const dirKeyFormat = "catalogbot-bundle-dir-v1"

// maxDirKeyEntries bounds the entries DirKey lists; a larger directory has no key (it is read, not cached).
const maxDirKeyEntries = 10_000

// DirKey names the content of directory dir of fsys from the content keys its entries carry (a git tree
// names each file by its blob id), without reading a file: every path below dir, its kind, and its blob.
// Two directories with the same key hold the same files, so their bundles, versions and images are the
// same. ok is false when some entry has no key (a link, a file system that names no content, an entry that
// cannot be listed): such a directory is read every time.
func DirKey(fsys fs.FS, dir string) (key string, ok bool) {
	var lines []string
	var walk func(p string) bool
	walk = func(p string) bool {
		entries, err := fs.ReadDir(fsys, p)
		if err != nil {
			return false
		}
		for _, e := range entries {
			if len(lines) >= maxDirKeyEntries {
				return false
			}
			name := path.Join(p, e.Name())
			rel := strings.TrimPrefix(strings.TrimPrefix(name, dir), "/")
			switch {
			case e.IsDir():
				lines = append(lines, "d "+strconv.Quote(rel))
				if !walk(name) {
					return false
				}
			case e.Type().IsRegular():
				ek, isKeyer := e.(load.EntryKeyer)
				if !isKeyer {
					return false
				}
				k, ok := ek.ContentKey()
				if !ok {
					return false
				}
				lines = append(lines, "f "+strconv.Quote(rel)+" "+k)
			default:
				return false // a link or a submodule: the loader and the image builder refuse it, with why
			}
		}
		return true
	}
	if !walk(dir) {
		return "", false
	}
	sort.Strings(lines)
	h := sha256.New()
	io.WriteString(h, dirKeyFormat+"\n")
	for _, l := range lines {
		io.WriteString(h, l+"\n")
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// DirRenders keeps what bundle directories rendered to, by the directory's content key, the reference and
// the migrate level, for the resolvers of one pull request: the templates check and the catalog preview
// render the same package's directories at the same time, and each is then loaded and rendered once (a
// resolver asking for a render under way waits for it). With a RenderStore (WithStore) a render is also
// kept between processes, so a later run neither loads nor renders a directory it rendered before. Bounded;
// safe for concurrent use; what it returns is shared and must not be modified.
type DirRenders struct {
	mu    sync.Mutex
	m     map[[3]string]*dirRender
	store RenderStore
}

type dirRender struct {
	done chan struct{}
	res  *Resolved // nil when the render failed: each caller then renders for itself, with its own error
}

// RenderStore keeps encoded renders between processes (a cache directory: internal/summarycache). Keys are
// hex digests naming the content key, the reference, the migrate level and the encoding; the store is
// expected to be stamped with the program's build, since a render is only as right as the renderer that
// made it. Get returns false for anything it cannot read whole; Put may drop what it cannot keep.
type RenderStore interface {
	GetRender(key string) ([]byte, bool)
	PutRender(key string, data []byte)
}

// maxDirRenders bounds the renders kept: far more than the bundle directories of the largest package.
const maxDirRenders = 10_000

// NewDirRenders makes an empty DirRenders.
func NewDirRenders() *DirRenders { return &DirRenders{m: map[[3]string]*dirRender{}} }

// WithStore makes c consult store for renders it has not made in this process, and keep there what it
// renders. nil leaves c as it is.
func (c *DirRenders) WithStore(store RenderStore) *DirRenders {
	if c != nil && store != nil {
		c.store = store
	}
	return c
}

// do returns what the directory of content key renders to under ref at level: kept, or rendered by render
// (once, whoever asks first; errors are not kept). from is where a render read from a store says it came
// from (the directory, or the reference), as render would have said.
func (c *DirRenders) do(ctx context.Context, key, ref, level, from string, render func() (*Resolved, error)) (*Resolved, error) {
	if c == nil || key == "" {
		return render()
	}
	k := [3]string{key, ref, level}
	c.mu.Lock()
	if e, ok := c.m[k]; ok {
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.res != nil {
			return e.res, nil
		}
		return render()
	}
	if len(c.m) >= maxDirRenders {
		c.mu.Unlock()
		return c.renderStored(key, ref, level, from, render)
	}
	e := &dirRender{done: make(chan struct{})}
	c.m[k] = e
	c.mu.Unlock()
	res, err := c.renderStored(key, ref, level, from, render)
	if err != nil {
		c.mu.Lock()
		delete(c.m, k)
		c.mu.Unlock()
	}
	e.res = res
	close(e.done)
	return res, err
}

// renderStored takes the render from the store when it holds it, and otherwise renders and keeps the
// result there.
func (c *DirRenders) renderStored(key, ref, level, from string, render func() (*Resolved, error)) (*Resolved, error) {
	if c.store == nil {
		return render()
	}
	sk := renderStoreKey(key, ref, level)
	if data, ok := c.store.GetRender(sk); ok {
		if res, err := decodeStoredRender(data, from); err == nil {
			return res, nil
		}
	}
	res, err := render()
	if err != nil {
		return nil, err
	}
	if data, err := encodeStoredRender(res); err == nil {
		c.store.PutRender(sk, data)
	}
	return res, nil
}

// renderStoreFormat names the encoding of a stored render; a change makes every older entry a miss.
const renderStoreFormat = "catalogbot-dir-render-v1"

func renderStoreKey(key, ref, level string) string {
	h := sha256.New()
	for _, s := range []string{renderStoreFormat, key, ref, level} {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// storedRender is a render as a store keeps it: the blob, the CSV as compact JSON (a value read back has
// positions in this JSON, not in the bundle's file: only its content is used after a render) and ByTag.
type storedRender struct {
	Format string          `json:"format"`
	Bundle json.RawMessage `json:"bundle"`
	CSV    json.RawMessage `json:"csv,omitempty"`
	ByTag  bool            `json:"byTag,omitempty"`
}

func encodeStoredRender(res *Resolved) ([]byte, error) {
	if res == nil || res.Bundle == nil || res.Package != nil {
		return nil, errors.New("only a bundle directory's render is stored")
	}
	// Without HTML escaping: the blob's property values are kept byte for byte (encoding/json would turn
	// a '<' of a description into \u003c).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res.Bundle); err != nil {
		return nil, err
	}
	s := storedRender{Format: renderStoreFormat, Bundle: bytes.TrimSuffix(b.Bytes(), []byte("\n")), ByTag: res.ByTag}
	if res.CSV != nil {
		s.CSV = res.CSV.AppendJSON(nil)
	}
	var out bytes.Buffer
	enc = json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func decodeStoredRender(data []byte, from string) (*Resolved, error) {
	var s storedRender
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	if s.Format != renderStoreFormat || len(s.Bundle) == 0 {
		return nil, errors.New("not a stored render of this format")
	}
	res := &Resolved{From: from, ByTag: s.ByTag}
	if err := json.Unmarshal(s.Bundle, &res.Bundle); err != nil || res.Bundle == nil {
		return nil, fmt.Errorf("stored render: %v", err)
	}
	if len(s.CSV) > 0 {
		docs, findings := catalog.ParseDocuments("stored-csv.json", s.CSV, catalog.Limits{})
		if len(docs) != 1 || catalog.HasErrors(findings) {
			return nil, errors.New("stored render: its CSV does not read back")
		}
		res.CSV = &docs[0].Value
	}
	return res, nil
}
