package load

import (
	"container/list"
	"sync"
)

// ContentKeyer is implemented by file systems that can name a file's content
// without reading it — a git tree names each file by its blob hash. With a
// ParseCache in Limits, ReadFS parses a content only once: files whose key it
// has seen come back from the cache, so re-reading a catalog that changed in
// one file costs the parse of that file.
type ContentKeyer interface {
	// ContentKey returns a key that equal contents, and only they, share.
	ContentKey(name string) (key string, ok bool)
}

// EntryKeyer is implemented by the directory entries of a ContentKeyer
// whose entries know their content's key (a git tree entry holds its blob
// id): ListFiles records it in CatalogFile.Key as it walks.
type EntryKeyer interface {
	ContentKey() (key string, ok bool)
}

// ParseCache keeps the documents and findings parsed from file contents,
// least recently used first out, within a memory budget. It is safe for
// concurrent use; what it returns is shared and must not be modified.
//
// It does not thrash on a catalog larger than itself: a read of a tree
// (one ReadFS) never evicts what that same read has used. When only such
// entries are left, a new parse is not kept, so reading a catalog twice
// finds at least what fits (plain LRU would have evicted each file just
// before the second read needed it, and found nothing). Entries no read used
// since go first, least recently used first.
type ParseCache struct {
	mu      sync.Mutex
	max     int64
	used    int64
	entries map[string]*list.Element
	order   *list.List // front: most recently used
	hits    int64
	misses  int64
	reads   int64 // ReadFS calls begun; an entry's read is the last that used it
}

type parsed struct {
	key      string
	file     string // the name the content was parsed under
	docs     []Doc
	findings []Finding
	aliases  bool
	cost     int64
	read     int64 // the last read that used it
}

// beginRead numbers one read of a tree: what it uses is not evicted for it.
func (c *ParseCache) beginRead() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.reads
}

// parsedPerFileByte estimates the memory a file's parse holds per byte of
// the file: measured 1.06 (20 MB derived catalog, large bundles), 1.36 (150
// MB) and 1.65 (community v4.21, many small blobs) as heap retained after
// ReadFS; 2 leaves room for the entry's own copies of the slices.
const parsedPerFileByte = 2

// NewParseCache returns a cache that holds about maxBytes of parsed data
// (estimated as parsedPerFileByte times the size of the files).
func NewParseCache(maxBytes int64) *ParseCache {
	return &ParseCache{max: maxBytes, entries: map[string]*list.Element{}, order: list.New()}
}

// Stats returns the hits and misses so far.
func (c *ParseCache) Stats() (hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// Size returns the estimated bytes held and the budget.
func (c *ParseCache) Size() (used, max int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.max
}

// get returns the parse of key, its positions renamed to file, for read.
func (c *ParseCache) get(read int64, key, file string) (Result, bool) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		c.misses++
		c.mu.Unlock()
		return Result{}, false
	}
	c.hits++
	c.order.MoveToFront(e)
	p := e.Value.(*parsed)
	p.read = max(p.read, read)
	c.mu.Unlock()
	if p.file == file {
		return Result{Docs: append([]Doc(nil), p.docs...), Findings: append([]Finding(nil), p.findings...), Aliases: p.aliases}, true
	}
	docs := make([]Doc, len(p.docs))
	for i, d := range p.docs {
		d.Pos.File = file
		docs[i] = d
	}
	fs := make([]Finding, len(p.findings))
	for i, f := range p.findings {
		if f.File == p.file {
			f.File = file
		}
		fs[i] = f
	}
	return Result{Docs: docs, Findings: fs, Aliases: p.aliases}, true
}

// put keeps the parse of key for read, unless room can only be made by
// evicting what read itself uses.
func (c *ParseCache) put(read int64, key, file string, size int64, r Result) {
	cost := parsedPerFileByte*size + 256
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		p := e.Value.(*parsed)
		p.read = max(p.read, read)
		return
	}
	for c.used+cost > c.max {
		last := c.order.Back()
		old := last.Value.(*parsed)
		if old.read >= read {
			return // all that is left serves this read (or a later one)
		}
		c.order.Remove(last)
		delete(c.entries, old.key)
		c.used -= old.cost
	}
	p := &parsed{key: key, file: file, docs: append([]Doc(nil), r.Docs...), findings: append([]Finding(nil), r.Findings...), aliases: r.Aliases, cost: cost, read: read}
	c.entries[key] = c.order.PushFront(p)
	c.used += cost
}

// FileKey is the content key of f: the one its walk recorded, else keyer's.
func FileKey(keyer ContentKeyer, f CatalogFile) string {
	if f.Key != "" {
		return f.Key
	}
	k, _ := keyer.ContentKey(f.Path)
	return k
}
