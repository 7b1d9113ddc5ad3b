package image

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// LayerCache keeps the catalog layers of recent builds by their content
// (the names and content keys of the catalog's files), so that a catalog
// built again unchanged (a push that touched other files, a re-run, a retry)
// gets its layer back without being read or compressed: pushing it again
// costs the registry's "already there" answers only. The compressed bytes
// stay in their unlinked temporary files, at most maxBytes of them; the
// least recently used layer goes first. Safe for concurrent use.
type LayerCache struct {
	mu       sync.Mutex
	maxBytes int64
	used     int64
	lru      *list.List // of *cachedLayer, most recent first
	byKey    map[string]*list.Element

	hits, misses atomic.Int64
}

type cachedLayer struct {
	key   string
	layer *fileLayer
}

// DefaultLayerCacheBytes is the compressed bytes a LayerCache keeps when
// given 0: about the layers of four 600 MB catalogs (a compressed layer is
// 15–25% of the catalog's size).
const DefaultLayerCacheBytes = 512 << 20

// NewLayerCache returns a cache of at most maxBytes of compressed layers
// (DefaultLayerCacheBytes when 0 or less). A layer larger than that is not
// kept.
func NewLayerCache(maxBytes int64) *LayerCache {
	if maxBytes <= 0 {
		maxBytes = DefaultLayerCacheBytes
	}
	return &LayerCache{maxBytes: maxBytes, lru: list.New(), byKey: map[string]*list.Element{}}
}

// Stats are the lookups answered from the cache and those that built.
func (c *LayerCache) Stats() (hits, misses int64) {
	return c.hits.Load(), c.misses.Load()
}

func (c *LayerCache) get(key string) (*fileLayer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	c.lru.MoveToFront(e)
	return e.Value.(*cachedLayer).layer, true
}

// put keeps l under key. An evicted layer's file is not closed here: a build
// may still be uploading it; it is closed with the last reference.
func (c *LayerCache) put(key string, l *fileLayer) {
	if l.size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.lru.PushFront(&cachedLayer{key: key, layer: l})
	c.used += l.size
	for c.used > c.maxBytes {
		last := c.lru.Back()
		old := last.Value.(*cachedLayer)
		c.lru.Remove(last)
		delete(c.byKey, old.key)
		c.used -= old.layer.size
	}
}
