package githubfake

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/catalogbot/catalogbot/internal/githubfake/fakegit"
)

// Merge queues. QueueMergeGroup does what GitHub's merge queue does when pull requests are queued: it
// builds the group's head in git (a merge commit of each queued pull request's head, in queue order, on the
// base branch's head), creates the branch gh-readonly-queue/<base>/pr-<n>-<head sha> of the last one, and
// returns the merge_group event (action checks_requested) GitHub sends, with the group's head, base and
// refs. MergeGroupEvent renders the event of an existing group (destroyed, say).

// MergeGroup is a merge queue group built by QueueMergeGroup.
type MergeGroup struct {
	HeadSHA, HeadRef, BaseSHA, BaseRef string
}

// QueueMergeGroup queues pull requests numbers (same base branch) of a repository with a GitDir.
func (f *Fake) QueueMergeGroup(owner, name string, numbers ...int) (MergeGroup, []byte, error) {
	f.mu.Lock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		f.mu.Unlock()
		return MergeGroup{}, nil, err
	}
	if r.gitDir == "" || len(numbers) == 0 {
		f.mu.Unlock()
		return MergeGroup{}, nil, fmt.Errorf("githubfake: a merge group needs a repository with a GitDir and pull requests")
	}
	var g MergeGroup
	var last *pull
	for _, n := range numbers {
		p := r.pulls[n]
		if p == nil || p.State != "open" {
			f.mu.Unlock()
			return MergeGroup{}, nil, fmt.Errorf("githubfake: pull request #%d is not open", n)
		}
		if last != nil && p.BaseRef != last.BaseRef {
			f.mu.Unlock()
			return MergeGroup{}, nil, fmt.Errorf("githubfake: the pull requests of a group share their base branch")
		}
		if last == nil {
			g.BaseRef, g.BaseSHA = "refs/heads/"+p.BaseRef, r.branches[p.BaseRef].sha
			g.HeadSHA = g.BaseSHA
		}
		tree, conflict, err := r.g().MergedTree(g.HeadSHA, p.HeadSHA)
		if err != nil || conflict {
			f.mu.Unlock()
			return MergeGroup{}, nil, fmt.Errorf("githubfake: #%d does not merge onto the group (conflict %v): %v", n, conflict, err)
		}
		stamp := fmt.Sprintf("%d +0000", f.now().Unix())
		env := append(fakegit.UserAuthor(p.Author, stamp), fakegit.GitHubCommitter(stamp)...)
		msg := fmt.Sprintf("Merge pull request #%d from %s\n\n%s", p.Number, p.HeadRef, p.Title)
		if g.HeadSHA, err = r.g().Git(nil, env, "commit-tree", tree, "-m", msg, "-p", g.HeadSHA, "-p", p.HeadSHA); err != nil {
			f.mu.Unlock()
			return MergeGroup{}, nil, err
		}
		last = p
	}
	branchName := fmt.Sprintf("gh-readonly-queue/%s/pr-%d-%s", last.BaseRef, last.Number, last.HeadSHA)
	g.HeadRef = "refs/heads/" + branchName
	if _, err := r.g().Git(nil, nil, "update-ref", g.HeadRef, g.HeadSHA); err != nil {
		f.mu.Unlock()
		return MergeGroup{}, nil, err
	}
	r.branches[branchName] = &branch{sha: g.HeadSHA}
	f.mu.Unlock()
	ev, err := f.MergeGroupEvent(owner, name, g, "checks_requested")
	return g, ev, err
}

// MergeGroupEvent is the merge_group event of group g (checks_requested or destroyed, with reason merged,
// invalidated or dequeued as GitHub gives it for destroyed: here "merged").
func (f *Fake) MergeGroupEvent(owner, name string, g MergeGroup, action string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.repoLocked(owner, name)
	if err != nil {
		return nil, err
	}
	c := f.eventCall()
	m := f.envelope(c, r, action, "github-merge-queue[bot]")
	m["sender"] = map[string]any{"login": "github-merge-queue[bot]", "type": "Bot"}
	msg := ""
	if r.gitDir != "" {
		msg, _ = r.g().Git(nil, nil, "log", "-1", "--format=%B", g.HeadSHA)
	}
	m["merge_group"] = map[string]any{
		"head_sha": g.HeadSHA, "head_ref": g.HeadRef, "base_sha": g.BaseSHA, "base_ref": g.BaseRef,
		"head_commit": map[string]any{"id": g.HeadSHA, "message": strings.TrimSpace(msg),
			"author": map[string]any{"name": "GitHub"}, "committer": map[string]any{"name": "GitHub"}},
	}
	if action == "destroyed" {
		m["reason"] = "merged"
	}
	return json.Marshal(m)
}
