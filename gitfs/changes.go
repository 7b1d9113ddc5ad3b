package gitfs

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"path"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Action is what happened to a path between two trees.
type Action string

const (
	Added    Action = "added"
	Modified Action = "modified" // content or mode (a file becoming a link, say)
	Deleted  Action = "deleted"
	Renamed  Action = "renamed" // moved with identical content
)

// Change is one changed path. Path is the path in head (in base for a
// deletion); OldPath is set for renames only.
type Change struct {
	Path    string
	OldPath string
	Action  Action
}

// maxChanges bounds a diff: more than this many changed paths is refused.
const maxChanges = 500_000

// ErrNoMergeBase: the two commits share no history.
var ErrNoMergeBase = errors.New("the commits have no common ancestor")

// ChangedPaths compares the trees of two commits directly (base's tree
// against head's), sorted by path. This is not what GitHub shows for a pull
// request when base has moved on: for that, diff MergeBase(base, head)
// against head. Renames are detected only when the content is identical; a
// file moved and edited shows as a deletion and an addition. A submodule
// change is a change of its path.
//
// Subtrees with the same hash on both sides are skipped unread, so the cost
// follows the change: a one-file change in a catalog of thousands of
// package folders reads the trees on the file's path, not every folder.
func (r *Repo) ChangedPaths(ctx context.Context, base, head Hash) ([]Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var roots [2]Hash
	for i, h := range []Hash{base, head} {
		t, err := r.TreeHash(ctx, h)
		if err != nil {
			return nil, err
		}
		roots[i] = t
	}
	d := treeDiff{ctx: ctx, r: r}
	if err := d.trees("", roots[0], roots[1]); err != nil {
		return nil, fmt.Errorf("diffing %s..%s: %w", base, head, err)
	}
	out := d.pairRenames()
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// treeDiff collects the files added, deleted and modified between two trees.
type treeDiff struct {
	ctx            context.Context
	r              *Repo
	added, deleted []fileAt
	modified       []string
	n              int
}

type fileAt struct {
	path string
	e    entry
}

func (d *treeDiff) count() error {
	d.n++
	if d.n > maxChanges {
		return fmt.Errorf("over the limit of %d changed paths", maxChanges)
	}
	return d.ctx.Err()
}

// trees compares the trees a and b (zero for an absent side) under dir.
func (d *treeDiff) trees(dir string, a, b Hash) error {
	if a == b {
		return nil
	}
	var ea, eb []entry
	var err error
	if !a.IsZero() {
		if ea, err = d.r.tree(a); err != nil {
			return err
		}
	}
	if !b.IsZero() {
		if eb, err = d.r.tree(b); err != nil {
			return err
		}
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		switch {
		case j == len(eb) || (i < len(ea) && ea[i].name < eb[j].name):
			if err := d.side(dir, ea[i], true); err != nil {
				return err
			}
			i++
		case i == len(ea) || eb[j].name < ea[i].name:
			if err := d.side(dir, eb[j], false); err != nil {
				return err
			}
			j++
		default:
			if err := d.both(dir, ea[i], eb[j]); err != nil {
				return err
			}
			i++
			j++
		}
	}
	return nil
}

// side records an entry present on one side only (everything under it, for a tree).
func (d *treeDiff) side(dir string, e entry, deleted bool) error {
	p := joinPath(dir, e.name)
	if e.mode == filemode.Dir {
		if deleted {
			return d.trees(p, e.hash, Hash{})
		}
		return d.trees(p, Hash{}, e.hash)
	}
	if err := d.count(); err != nil {
		return err
	}
	if deleted {
		d.deleted = append(d.deleted, fileAt{p, e})
	} else {
		d.added = append(d.added, fileAt{p, e})
	}
	return nil
}

// both compares an entry present on both sides.
func (d *treeDiff) both(dir string, a, b entry) error {
	if a.hash == b.hash && a.mode == b.mode {
		return nil
	}
	p := joinPath(dir, a.name)
	aDir, bDir := a.mode == filemode.Dir, b.mode == filemode.Dir
	switch {
	case aDir && bDir:
		return d.trees(p, a.hash, b.hash)
	case aDir || bDir: // a file became a folder or the other way round
		if err := d.side(dir, a, true); err != nil {
			return err
		}
		return d.side(dir, b, false)
	}
	if err := d.count(); err != nil {
		return err
	}
	d.modified = append(d.modified, p)
	return nil
}

// pairRenames turns a deletion and an addition of the same content (and
// kind of file) into a rename: same base name first, then in path order.
func (d *treeDiff) pairRenames() []Change {
	type key struct {
		h    Hash
		link bool
	}
	kindOf := func(f fileAt) key { return key{f.e.hash, f.e.mode == filemode.Symlink} }
	gone := map[key][]int{}
	for i, f := range d.deleted {
		gone[kindOf(f)] = append(gone[kindOf(f)], i)
	}
	usedDel := make([]bool, len(d.deleted))
	renamedTo := make([]int, len(d.added)) // index+1 of the deletion
	for pass := 0; pass < 2; pass++ {
		for ai, f := range d.added {
			if renamedTo[ai] != 0 {
				continue
			}
			for _, di := range gone[kindOf(f)] {
				if usedDel[di] || (pass == 0 && path.Base(d.deleted[di].path) != path.Base(f.path)) {
					continue
				}
				usedDel[di], renamedTo[ai] = true, di+1
				break
			}
		}
	}
	out := make([]Change, 0, len(d.added)+len(d.deleted)+len(d.modified))
	for _, p := range d.modified {
		out = append(out, Change{Path: p, Action: Modified})
	}
	for ai, f := range d.added {
		if di := renamedTo[ai]; di != 0 {
			out = append(out, Change{Path: f.path, OldPath: d.deleted[di-1].path, Action: Renamed})
		} else {
			out = append(out, Change{Path: f.path, Action: Added})
		}
	}
	for di, f := range d.deleted {
		if !usedDel[di] {
			out = append(out, Change{Path: f.path, Action: Deleted})
		}
	}
	return out
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// MergeBase returns the best common ancestor of two commits, the commit
// GitHub diffs a pull request's head against. With several equally good
// ones (criss-cross merges), the one committed last is returned, the first
// git merge-base --all lists.
func (r *Repo) MergeBase(ctx context.Context, a, b Hash) (Hash, error) {
	if err := ctx.Err(); err != nil {
		return Hash{}, err
	}
	for _, h := range []Hash{a, b} {
		if _, err := r.parents(h); err != nil {
			return Hash{}, fmt.Errorf("commit %s: %w", h, err)
		}
	}
	// A pull request is most often a few commits on top of its base: when one commit is a near ancestor of
	// the other, it is their merge base, found without walking the histories by date.
	if r.nearAncestor(a, b) {
		return a, nil
	}
	if r.nearAncestor(b, a) {
		return b, nil
	}
	bases, err := r.mergeBases(ctx, a, b)
	if err != nil {
		return Hash{}, fmt.Errorf("merge base of %s and %s: %w", a, b, err)
	}
	if len(bases) == 0 {
		return Hash{}, fmt.Errorf("merge base of %s and %s: %w", a, b, ErrNoMergeBase)
	}
	return bases[0], nil
}

// Flags of mergeBases' walk.
const (
	fromA = 1 << iota
	fromB
	stale
	found
)

// mergeBases finds the common ancestors of a and b that are no ancestor of another common ancestor, newest
// first, as git merge-base --all does: walking both histories newest commit first, a commit reached from both
// sides is a candidate and what lies below it is stale; the walk ends when only stale commits are queued.
// (Written here rather than through go-git's object.Commit.MergeBase, which links go-git's OpenPGP
// signature support into every program using gitfs.)
func (r *Repo) mergeBases(ctx context.Context, a, b Hash) ([]Hash, error) {
	flags := map[Hash]int{}
	q := &commitQueue{}
	push := func(h Hash, f int) error {
		ci, err := r.commitInfo(ctx, h)
		if err != nil {
			return err
		}
		flags[h] |= f
		heap.Push(q, queued{h: h, when: ci.when, parents: ci.parents})
		return nil
	}
	if err := push(a, fromA); err != nil {
		return nil, err
	}
	if err := push(b, fromB); err != nil {
		return nil, err
	}
	var cands []queued
	for q.live(flags) {
		if len(flags) > maxMergeBaseWalk {
			return nil, fmt.Errorf("walked over %d commits", maxMergeBaseWalk)
		}
		c := heap.Pop(q).(queued)
		f := flags[c.h] & (fromA | fromB | stale)
		if f == fromA|fromB {
			if flags[c.h]&found == 0 {
				flags[c.h] |= found
				cands = append(cands, c)
			}
			f |= stale
		}
		for _, p := range c.parents {
			if flags[p]&f == f {
				continue
			}
			if err := push(p, f); err != nil {
				return nil, err
			}
		}
	}
	var out []queued
	for _, c := range cands {
		if flags[c.h]&stale == 0 {
			out = append(out, c)
		}
	}
	// A candidate that is an ancestor of another is not a best common ancestor.
	var bases []Hash
	for i, c := range out {
		redundant := false
		for j, d := range out {
			if i != j && !redundant {
				anc, err := r.isAncestor(ctx, c.h, d.h)
				if err != nil {
					return nil, err
				}
				redundant = anc
			}
		}
		if !redundant {
			bases = append(bases, c.h)
		}
	}
	return bases, nil
}

// maxMergeBaseWalk bounds the commits mergeBases and isAncestor look at.
const maxMergeBaseWalk = 1 << 20

// isAncestor reports whether a is an ancestor of b.
func (r *Repo) isAncestor(ctx context.Context, a, b Hash) (bool, error) {
	seen := map[Hash]bool{b: true}
	todo := []Hash{b}
	for len(todo) > 0 {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if h == a {
			return true, nil
		}
		if len(seen) > maxMergeBaseWalk {
			return false, fmt.Errorf("walked over %d commits", maxMergeBaseWalk)
		}
		ci, err := r.commitInfo(ctx, h)
		if err != nil {
			return false, err
		}
		for _, p := range ci.parents {
			if !seen[p] {
				seen[p] = true
				todo = append(todo, p)
			}
		}
	}
	return false, nil
}

// queued is a commit waiting in mergeBases' walk.
type queued struct {
	h       Hash
	when    time.Time
	parents []Hash
}

// commitQueue is a heap of commits, newest committer time first (ties by hash, for a fixed order).
type commitQueue []queued

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	if !q[i].when.Equal(q[j].when) {
		return q[i].when.After(q[j].when)
	}
	return bytes.Compare(q[i].h[:], q[j].h[:]) < 0
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *commitQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// live reports whether a queued commit is not yet stale: the walk goes on while one is.
func (q commitQueue) live(flags map[Hash]int) bool {
	for _, c := range q {
		if flags[c.h]&stale == 0 {
			return true
		}
	}
	return false
}

// maxNearAncestor bounds the commits nearAncestor looks at.
const maxNearAncestor = 256

// nearAncestor reports whether a is b or one of the maxNearAncestor commits nearest b among its ancestors
// (breadth first, every parent). false says nothing.
func (r *Repo) nearAncestor(a, b Hash) bool {
	seen := map[Hash]bool{b: true}
	queue := []Hash{b}
	for len(queue) > 0 && len(seen) <= maxNearAncestor {
		h := queue[0]
		queue = queue[1:]
		if h == a {
			return true
		}
		ps, err := r.parents(h)
		if err != nil {
			return false
		}
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false
}
