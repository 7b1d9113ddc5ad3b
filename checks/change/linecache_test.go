package change

import "testing"

// putLines and hasLines drive the cache with n changed lines.
func putLines(c *LineDiffCache, base, head string, n int) {
	fl := fileLines{changed: make([]int, n), lines: n}
	c.put(base, head, fl)
}

func hasLines(c *LineDiffCache, base, head string) bool {
	_, ok := c.get(base, head)
	return ok
}

// The cache stays within its budget of line numbers, least recently used out first.
func TestLineDiffCacheBudget(t *testing.T) {
	c := NewLineDiffCache(10)
	putLines(c, "b1", "h1", 4) // cost 5
	putLines(c, "b2", "h2", 4) // cost 5: full
	if !hasLines(c, "b1", "h1") {
		t.Fatal("b1/h1 evicted too early")
	}
	putLines(c, "b3", "h3", 4) // evicts b2/h2, the least recently used
	if hasLines(c, "b2", "h2") || !hasLines(c, "b1", "h1") || !hasLines(c, "b3", "h3") {
		t.Fatal("eviction did not take the least recently used pair")
	}
	putLines(c, "b4", "h4", 100) // larger than the budget: not kept
	if hasLines(c, "b4", "h4") {
		t.Fatal("a pair larger than the whole budget was kept")
	}
	if _, _, n := c.Stats(); n != 2 {
		t.Fatalf("entries = %d, want 2", n)
	}
}
