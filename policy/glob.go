package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// A path pattern is slash-separated and matched against a path relative to the
// repository root. Within a segment, *, ? and [...] work as in path.Match; a
// segment that is exactly ** matches any number of segments, none included.
// A pattern that matches a directory also matches everything below it, so
// ".github" protects ".github/workflows/ci.yaml" just as ".github/**" does.

// maxPatternSegments bounds the work one match can take.
const maxPatternSegments = 64

// checkPattern says what is wrong with a pattern, or returns nil.
func checkPattern(p string) error {
	switch {
	case p == "":
		return errors.New("empty pattern")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("pattern %q starts with /: patterns are relative to the repository root, write %q", p, strings.TrimLeft(p, "/"))
	case strings.Contains(p, `\`):
		return fmt.Errorf("pattern %q contains a backslash: use / between directories (escaping is not supported)", p)
	}
	segs := strings.Split(strings.TrimSuffix(p, "/"), "/")
	if len(segs) > maxPatternSegments {
		return fmt.Errorf("pattern %q has more than %d segments", p, maxPatternSegments)
	}
	for _, s := range segs {
		switch s {
		case "":
			return fmt.Errorf("pattern %q has an empty segment (//)", p)
		case ".", "..":
			return fmt.Errorf("pattern %q has a %q segment: write the path from the repository root without . or ..", p, s)
		case "**":
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return fmt.Errorf("pattern %q: segment %q is malformed (unclosed [ or similar)", p, s)
		}
	}
	return nil
}

// matchPath reports whether the repository path name is matched by pattern,
// directly or through one of its parent directories. pattern must have passed
// checkPattern; a malformed one matches nothing.
func matchPath(pattern, name string) bool {
	pat := strings.Split(strings.TrimSuffix(pattern, "/"), "/")
	if pat[len(pat)-1] != "**" {
		pat = append(pat, "**") // a matched directory covers its contents
	}
	segs := strings.Split(name, "/")
	if len(pat) > maxPatternSegments+1 {
		return false
	}
	// memo[i*(len(segs)+1)+j]: 0 unknown, 1 no, 2 yes, for pat[i:] against segs[j:].
	memo := make([]byte, (len(pat)+1)*(len(segs)+1))
	var match func(i, j int) bool
	match = func(i, j int) bool {
		k := i*(len(segs)+1) + j
		if memo[k] != 0 {
			return memo[k] == 2
		}
		var ok bool
		switch {
		case i == len(pat):
			ok = j == len(segs)
		case pat[i] == "**":
			ok = match(i+1, j) || j < len(segs) && match(i, j+1)
		case j < len(segs):
			m, err := path.Match(pat[i], segs[j])
			ok = err == nil && m && match(i+1, j+1)
		}
		memo[k] = 1
		if ok {
			memo[k] = 2
		}
		return ok
	}
	return match(0, 0)
}
