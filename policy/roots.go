package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
)

// Catalog roots may be patterns: catalogs/v4.* stands for every directory of
// catalogs/ whose name starts with v4., as the community repository keeps one
// catalog per OpenShift release. A pattern is resolved on a revision of the
// repository (for a pull request, always the base): ResolveCatalogs lists the
// directories it matches there. A pattern that matches nothing is an error on
// its line, never a catalog that silently holds nothing.

// MaxResolvedCatalogs bounds the catalogs a policy's patterns may resolve to.
const MaxResolvedCatalogs = 1000

// IsPattern reports whether a catalog path is a pattern: a segment holds *, ? or [.
func IsPattern(p string) bool { return strings.ContainsAny(p, "*?[") }

// checkRootPattern says what is wrong with a catalog root pattern (already cleaned), or returns nil.
func checkRootPattern(p string) error {
	segs := strings.Split(p, "/")
	if len(segs) > maxPatternSegments {
		return fmt.Errorf("pattern %q has more than %d segments", p, maxPatternSegments)
	}
	for _, s := range segs {
		if s == "**" {
			return fmt.Errorf("pattern %q has a ** segment: a catalog root pattern matches one directory per segment (write catalogs/v4.*, not catalogs/**)", p)
		}
		if _, err := path.Match(s, ""); err != nil {
			return fmt.Errorf("pattern %q: segment %q is malformed (unclosed [ or similar)", p, s)
		}
	}
	return nil
}

// ResolveCatalogs returns the policy with each catalog pattern replaced by the directories it matches in
// fsys (the revision whose policy p is: for a pull request, the base), in name order, each keeping the
// pattern's Pos and naming it in Pattern. Catalogs listed by their path are kept as they are, present in
// fsys or not. p itself is never modified: without patterns it is returned as is, else a copy.
//
// The error is a *ParseError, each problem on the line of the pattern at fault: a pattern that matches no
// directory, more than MaxResolvedCatalogs catalogs in all, or a directory that two entries name or that
// lies inside another catalog. A failure to read fsys is returned as it is.
func (p *Policy) ResolveCatalogs(fsys fs.FS) (*Policy, error) {
	if !slices.ContainsFunc(p.Catalogs, func(c Catalog) bool { return IsPattern(c.Path) }) {
		return p, nil
	}
	var out []Catalog
	var problems []Problem
	add := func(c Catalog, hint, format string, args ...any) {
		problems = append(problems, Problem{File: p.fileName(), Line: c.Pos.Line, Column: c.Pos.Column, Message: fmt.Sprintf(format, args...), Hint: hint})
	}
	for _, c := range p.Catalogs {
		if !IsPattern(c.Path) {
			out = append(out, c)
			continue
		}
		dirs, err := globDirs(fsys, c.Path, MaxResolvedCatalogs+1-len(out))
		if err != nil {
			return nil, fmt.Errorf("resolving catalog pattern %s: %w", c.Path, err)
		}
		if len(dirs) == 0 {
			add(c, "create a catalog directory it matches, or correct the pattern (it is resolved on the base branch)",
				"catalog pattern %s matches no directory of this revision", c.Path)
			continue
		}
		for _, d := range dirs {
			out = append(out, Catalog{Path: d, Pattern: c.Path, Pos: c.Pos})
		}
		if len(out) > MaxResolvedCatalogs {
			add(c, "list fewer catalogs, or narrow the pattern", "catalog pattern %s makes more than %d catalogs", c.Path, MaxResolvedCatalogs)
			out = out[:MaxResolvedCatalogs]
			break
		}
	}
	// Two entries may now name one directory, or nest: a file belongs to one catalog.
	for i, c := range out {
		for _, prev := range out[:i] {
			what := ""
			switch {
			case prev.Path == c.Path:
				what = "names the directory %s that the entry at line %d names too"
			case contains(prev.Path, c.Path) || contains(c.Path, prev.Path):
				what = "makes catalog %s, nested with the catalog of the entry at line %d"
			default:
				continue
			}
			if prev.Pos == c.Pos && prev.Pattern == c.Pattern {
				continue // the matches of one pattern are distinct directories of one depth
			}
			where := c
			if c.Pattern == "" && prev.Pattern != "" {
				where = prev
			}
			add(where, "list only separate directories: a file must belong to one catalog", "catalogs entry "+what, c.Path, prev.Pos.Line)
			break
		}
	}
	if len(problems) > 0 {
		sortProblems(problems)
		return nil, &ParseError{Problems: dedupProblems(problems)}
	}
	q := *p
	q.Catalogs = out
	return &q, nil
}

// fileName names where the catalogs came from, for problems: the policy file, or for Default (whose
// catalogs the caller gave) the roots given.
func (p *Policy) fileName() string {
	if p.File == "" {
		return "the catalog roots given"
	}
	return p.File
}

// globDirs lists the directories of fsys that pattern matches, segment by segment, sorted; at most limit.
func globDirs(fsys fs.FS, pattern string, limit int) ([]string, error) {
	cur := []string{"."}
	for _, seg := range strings.Split(pattern, "/") {
		var next []string
		for _, dir := range cur {
			if !IsPattern(seg) {
				p := path.Join(dir, seg)
				if st, err := fs.Stat(fsys, p); err == nil && st.IsDir() {
					next = append(next, p)
				} else if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) {
					return nil, err
				}
				continue
			}
			entries, err := fs.ReadDir(fsys, dir)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if !e.IsDir() { // links and submodules are never catalogs
					continue
				}
				if ok, _ := path.Match(seg, e.Name()); ok {
					next = append(next, path.Join(dir, e.Name()))
					if len(next) > limit {
						break
					}
				}
			}
		}
		cur = next
		if len(cur) == 0 {
			return nil, nil
		}
	}
	sort.Strings(cur)
	if len(cur) > limit {
		cur = cur[:limit]
	}
	return cur, nil
}

func dedupProblems(ps []Problem) []Problem {
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}
