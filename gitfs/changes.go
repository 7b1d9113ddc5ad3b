package gitfs

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/merkletrie"
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
func (r *Repo) ChangedPaths(ctx context.Context, base, head Hash) ([]Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	trees := make([]*object.Tree, 2)
	for i, h := range []Hash{base, head} {
		c, err := r.commit(h)
		if err != nil {
			return nil, err
		}
		if trees[i], err = c.Tree(); err != nil {
			return nil, fmt.Errorf("tree of commit %s: %w", h, err)
		}
	}
	diff, err := object.DiffTreeWithOptions(ctx, trees[0], trees[1], &object.DiffTreeOptions{
		DetectRenames:    true,
		OnlyExactRenames: true,
	})
	if err != nil {
		return nil, fmt.Errorf("diffing %s..%s: %w", base, head, err)
	}
	if len(diff) > maxChanges {
		return nil, fmt.Errorf("diffing %s..%s: %d changed paths, over the limit of %d", base, head, len(diff), maxChanges)
	}
	out := make([]Change, 0, len(diff))
	for _, d := range diff {
		act, err := d.Action()
		if err != nil {
			return nil, fmt.Errorf("diffing %s..%s: %w", base, head, err)
		}
		switch {
		case act == merkletrie.Insert:
			out = append(out, Change{Path: d.To.Name, Action: Added})
		case act == merkletrie.Delete:
			out = append(out, Change{Path: d.From.Name, Action: Deleted})
		case d.From.Name != d.To.Name:
			out = append(out, Change{Path: d.To.Name, OldPath: d.From.Name, Action: Renamed})
		default:
			out = append(out, Change{Path: d.To.Name, Action: Modified})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// MergeBase returns the best common ancestor of two commits, the commit
// GitHub diffs a pull request's head against. With several equally good
// ones, the first go-git reports is returned.
func (r *Repo) MergeBase(ctx context.Context, a, b Hash) (Hash, error) {
	if err := ctx.Err(); err != nil {
		return Hash{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ca, err := r.commit(a)
	if err != nil {
		return Hash{}, err
	}
	cb, err := r.commit(b)
	if err != nil {
		return Hash{}, err
	}
	bases, err := ca.MergeBase(cb)
	if err != nil {
		return Hash{}, fmt.Errorf("merge base of %s and %s: %w", a, b, err)
	}
	if len(bases) == 0 {
		return Hash{}, fmt.Errorf("merge base of %s and %s: %w", a, b, ErrNoMergeBase)
	}
	return bases[0].Hash, nil
}
