package catalog

import (
	"bufio"
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// indexIgnoreName is the file opm reads ignore patterns from, in any directory.
const indexIgnoreName = ".indexignore"

// maxIndexIgnoreSize bounds one .indexignore file.
const maxIndexIgnoreSize = 1 << 20

// parseIndexIgnore reads the patterns of one .indexignore file found at
// filePath (slash separated, relative to the root). As opm does (through
// github.com/joelanford/ignore and go-git's gitignore), each line is trimmed,
// blank and '#' lines are skipped, and the patterns apply below the file's
// own directory.
func parseIndexIgnore(filePath string, data []byte) ([]gitignore.Pattern, *Finding) {
	var domain []string
	if dir := path.Dir(filePath); dir != "." {
		domain = strings.Split(dir, "/")
	}
	var patterns []gitignore.Pattern
	// bufio.Scanner with its default 64 KiB line limit, as opm reads it: a
	// longer line makes opm fail.
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		patterns = append(patterns, gitignore.ParsePattern(text, domain))
	}
	if err := sc.Err(); err != nil {
		f := newLoadFinding(ruleLoadIndexIgnore, filePath, fmt.Sprintf("%s cannot be read as lines of patterns (%v); opm fails on it", filePath, err))
		f.Line = line + 1
		return patterns, &f
	}
	return patterns, nil
}

// ignoreMatcher answers whether a file path is excluded. Patterns from every
// .indexignore of the tree are used together, in walk order, the last match
// winning — opm matches files only (never directories as such), which is why
// "dir/" excludes what is below dir.
type ignoreMatcher struct {
	m gitignore.Matcher
}

func newIgnoreMatcher(patterns []gitignore.Pattern) ignoreMatcher {
	if len(patterns) == 0 {
		return ignoreMatcher{}
	}
	return ignoreMatcher{m: gitignore.NewMatcher(patterns)}
}

func (m ignoreMatcher) ignored(filePath string) bool {
	return m.m != nil && m.m.Match(strings.Split(filePath, "/"), false)
}
