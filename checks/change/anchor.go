package change

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/catalogbot/catalogbot/catalog"
)

// GitHub shows an annotation inline in "Files changed" only on a line the pull request changed. Findings about
// changed content are therefore anchored on such a line: the first changed line of the blob the finding is
// about, else the changed line nearest to it in its file, and the message says where the finding really is.

// fileLines are the lines of one head file a pull request touched.
type fileLines struct {
	changed []int // head lines added or modified, ascending
	// deletedAt are head lines just after which base lines were removed (0: before the first line), ascending.
	deletedAt []int
	lines     int // lines in the head file
}

// MaxDiffBytes bounds the files whose lines are compared; a larger one counts as changed throughout.
const MaxDiffBytes = 16 << 20

// diffTimeout bounds one file's line diff; past it the diff degrades to a bulk replacement (every line changed).
const diffTimeout = 2 * time.Second

// changedLinesOf compares the base and head contents of one file, line by line.
func changedLinesOf(base, head string) fileLines {
	var fl fileLines
	fl.lines = strings.Count(head, "\n")
	if head != "" && !strings.HasSuffix(head, "\n") {
		fl.lines++
	}
	line := 1 // the next head line
	for _, d := range diff.DoWithTimeout(base, head, diffTimeout) {
		n := strings.Count(d.Text, "\n")
		if d.Text != "" && !strings.HasSuffix(d.Text, "\n") {
			n++
		}
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			for i := 0; i < n; i++ {
				fl.changed = append(fl.changed, line+i)
			}
			line += n
		case diffmatchpatch.DiffEqual:
			line += n
		case diffmatchpatch.DiffDelete:
			fl.deletedAt = append(fl.deletedAt, line-1)
		}
	}
	return fl
}

// ReadCapped reads name from fsys, up to max bytes; ok is false when it is absent or larger.
func ReadCapped(fsys fs.FS, name string, max int64) (string, bool) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var b strings.Builder
	n, err := io.Copy(&b, io.LimitReader(f, max+1))
	if err != nil || n > max {
		return "", false
	}
	return b.String(), true
}

// computeChangedLines fills cc.lines for the changed files of the root present in head.
// With a cache, a (base, head) pair of contents compared before is not read again.
func computeChangedLines(ctx context.Context, cc *CatalogChange, baseFS, headFS fs.FS, cache *LineDiffCache) {
	cc.lines = map[string]fileLines{}
	for _, f := range cc.Files {
		if f.Status == FileDeleted || ctx.Err() != nil {
			continue
		}
		rel, ok := relTo(cc.Root, f.Path)
		if !ok {
			continue
		}
		oldRel, hasBase := "", false
		if f.Status != FileAdded {
			old := f.Path
			if f.OldPath != "" {
				old = f.OldPath
			}
			oldRel, hasBase = relTo(cc.Root, old)
		}
		// Both contents named by their keys: a pair compared before is not read again.
		headKey, _ := contentKey(headFS, rel)
		baseKey, baseKeyed := "", !hasBase
		if hasBase {
			baseKey, baseKeyed = contentKey(baseFS, oldRel)
		}
		if headKey != "" && baseKeyed {
			if fl, ok := cache.get(baseKey, headKey); ok {
				cc.lines[rel] = fl
				continue
			}
		}
		head, ok := ReadCapped(headFS, rel, MaxDiffBytes)
		if !ok {
			continue
		}
		var base string
		if hasBase {
			base, _ = ReadCapped(baseFS, oldRel, MaxDiffBytes)
		}
		fl := changedLinesOf(base, head)
		cc.lines[rel] = fl
		if headKey != "" && baseKeyed {
			cache.put(baseKey, headKey, fl)
		}
	}
}

// Anchor moves each finding about a changed file of pr onto a line the pull request changed, and says so.
func Anchor(pr *PullRequest, fs []catalog.Finding) []catalog.Finding {
	if pr.Changes == nil {
		return fs
	}
	for i := range fs {
		f := &fs[i]
		if f.File == "" || f.Line == 0 {
			continue
		}
		for _, cc := range pr.Changes.Catalogs {
			rel, ok := relTo(cc.Root, f.File)
			if !ok {
				continue
			}
			fl, ok := cc.lines[rel]
			if !ok {
				break
			}
			from, to := blobSpan(cc, rel, f.Line)
			moveToChange(f, fl, from, to)
			break
		}
	}
	return fs
}

// blobSpan is the span of lines [from, to] of the blob of head file rel that holds line, or (0, 0).
func blobSpan(cc *CatalogChange, rel string, line int) (int, int) {
	if cc.Head == nil {
		return 0, 0
	}
	if cc.spans == nil {
		cc.spans = map[string][]int{}
		docs := cc.Head.Docs()
		for i := range docs {
			cc.spans[docs[i].Pos.File] = append(cc.spans[docs[i].Pos.File], docs[i].Pos.Line)
		}
		for _, starts := range cc.spans {
			sort.Ints(starts)
		}
	}
	starts := cc.spans[rel]
	i := sort.SearchInts(starts, line+1) - 1
	if i < 0 {
		return 0, 0
	}
	to := 1 << 30
	if i+1 < len(starts) {
		to = starts[i+1] - 1
	}
	return starts[i], to
}

// moveToChange anchors f on a changed line: its own, the first changed line of its blob [from, to], or the
// changed (or deletion) line nearest to it in the file.
func moveToChange(f *catalog.Finding, fl fileLines, from, to int) {
	if contains(fl.changed, f.Line) {
		return
	}
	orig := f.Line
	if from > 0 {
		if i := sort.SearchInts(fl.changed, from); i < len(fl.changed) && fl.changed[i] <= to {
			f.Line, f.Column = fl.changed[i], 0
			f.Message += fmt.Sprintf(" (shown on line %d, the first line this pull request changed in the blob; the finding is about line %d)", f.Line, orig)
			return
		}
	}
	best, dist := 0, 1<<30
	for _, l := range fl.changed {
		if d := abs(l - orig); d < dist {
			best, dist = l, d
		}
	}
	if len(fl.changed) == 0 {
		// Only removals: the surviving line next to one.
		for _, l := range fl.deletedAt {
			l = max(1, min(l, fl.lines))
			if d := abs(l - orig); d < dist {
				best, dist = l, d
			}
		}
	}
	if best == 0 || best == orig {
		return
	}
	f.Line, f.Column = best, 0
	f.Message += fmt.Sprintf(" (shown on line %d, the nearest line this pull request changed; the finding is about line %d)", best, orig)
}

func contains(sorted []int, v int) bool {
	i := sort.SearchInts(sorted, v)
	return i < len(sorted) && sorted[i] == v
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// changeInBlob is the first line the pull request changed in the head blob of file rel that holds line.
func (cc *CatalogChange) ChangeInBlob(rel string, line int) (int, bool) {
	fl, ok := cc.lines[rel]
	if !ok {
		return 0, false
	}
	from, to := blobSpan(cc, rel, line)
	if from == 0 {
		return 0, false
	}
	if i := sort.SearchInts(fl.changed, from); i < len(fl.changed) && fl.changed[i] <= to {
		return fl.changed[i], true
	}
	return 0, false
}

// FirstChangedLineOf is the first head line that differs from base (the line after a removal when only lines
// were removed), 1 when none does.
func FirstChangedLineOf(base, head string) int {
	fl := changedLinesOf(base, head)
	switch {
	case len(fl.changed) > 0:
		return fl.changed[0]
	case len(fl.deletedAt) > 0:
		return max(fl.deletedAt[0], 1)
	}
	return 1
}
