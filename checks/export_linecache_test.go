package checks

// PutLines and HasLines let the external tests drive the cache with n changed lines.
func PutLines(c *LineDiffCache, base, head string, n int) {
	fl := fileLines{changed: make([]int, n), lines: n}
	c.put(base, head, fl)
}

func HasLines(c *LineDiffCache, base, head string) bool {
	_, ok := c.get(base, head)
	return ok
}
