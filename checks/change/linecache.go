package change

import (
	"container/list"
	"sync"
)

// LineDiffCache keeps the changed lines of (base content, head content) pairs, least recently used first out,
// within a budget of remembered line numbers. The App checks the same pull request again and again (a base that
// moved, /retest, the resync) while the changed files' contents stay the same; comparing them line by line
// again read and inflated both blobs on every check, most of a warm check's CPU. The pairs are named by content
// keys (git blob ids), so a hit is exact whatever the path. Safe for concurrent use.
type LineDiffCache struct {
	mu      sync.Mutex
	max     int // line numbers kept, all entries together
	used    int
	entries map[lineDiffKey]*list.Element
	order   *list.List // front: most recently used
	hits    int64
	misses  int64
}

type lineDiffKey struct{ base, head string }

type lineDiffEntry struct {
	key   lineDiffKey
	lines fileLines
	cost  int
}

// DefaultLineDiffBudget is the budget NewLineDiffCache(0) uses: 4 Mi line numbers, 32 MiB at most.
const DefaultLineDiffBudget = 4 << 20

// NewLineDiffCache returns a cache that keeps at most max line numbers (0: DefaultLineDiffBudget).
func NewLineDiffCache(max int) *LineDiffCache {
	if max <= 0 {
		max = DefaultLineDiffBudget
	}
	return &LineDiffCache{max: max, entries: map[lineDiffKey]*list.Element{}, order: list.New()}
}

// get returns the changed lines of the pair, when known. What it returns is shared and must not be modified.
func (c *LineDiffCache) get(base, head string) (fileLines, bool) {
	if c == nil || head == "" {
		return fileLines{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[lineDiffKey{base, head}]
	if !ok {
		c.misses++
		return fileLines{}, false
	}
	c.hits++
	c.order.MoveToFront(e)
	return e.Value.(*lineDiffEntry).lines, true
}

// put keeps the changed lines of the pair; a pair larger than the whole budget is not kept.
func (c *LineDiffCache) put(base, head string, fl fileLines) {
	if c == nil || head == "" {
		return
	}
	cost := 1 + len(fl.changed) + len(fl.deletedAt)
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := lineDiffKey{base, head}
	if _, ok := c.entries[k]; ok {
		return
	}
	for c.used+cost > c.max {
		last := c.order.Back()
		old := c.order.Remove(last).(*lineDiffEntry)
		delete(c.entries, old.key)
		c.used -= old.cost
	}
	c.entries[k] = c.order.PushFront(&lineDiffEntry{key: k, lines: fl, cost: cost})
	c.used += cost
}

// Stats reports the hits and misses so far, and the entries kept.
func (c *LineDiffCache) Stats() (hits, misses int64, entries int) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, len(c.entries)
}
