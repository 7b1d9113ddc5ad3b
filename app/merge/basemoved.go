package merge

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// Re-checks that grow with what changed. A push that moves a base branch changes the ground of every open
// pull request into it, but a check's judgement of a pull request depends only on the base's policy file and
// on the folders of the packages the pull request touches (what the merge result's judgement compares, see
// result.go). The push's job therefore compares, for each open pull request checked at its current head, the
// base it was checked against with the new base head: when the move changed one of those paths, the pull
// request is checked again at once, with a check of its own; when it changed none, the check runs stand and
// nothing is asked of GitHub for it. A burst of merges, each a push, thus re-checks only the pull requests
// that share a package with what merged, not every open one after every merge.

// BaseMoveOutcome is what the push's job did with one open pull request.
type BaseMoveOutcome struct {
	Number int
	// Recheck, when set, is the path whose change made the pull request be checked again.
	Recheck string
	// Why says why nothing was asked when Recheck is empty.
	Why string
}

// baseMoved handles a push that moved branch a.BaseRef to a.Base (MergeArgs with Number 0 and Base set).
func (m *Merger) baseMoved(ctx context.Context, a jobs.MergeArgs) error {
	if !jobs.IsSHA(a.Base) || a.BaseRef == "" {
		return nil
	}
	gh, err := m.gh.Installation(ctx, a.InstallationID)
	if err != nil {
		return fmt.Errorf("installation %d client: %w", a.InstallationID, err)
	}
	prs, err := openPullsInto(ctx, gh, a.Owner, a.Repo, a.BaseRef)
	if err != nil {
		return err
	}
	if len(prs) == 0 || m.cache == nil {
		return nil
	}
	clone := a.CloneURL
	if clone == "" {
		clone = prs[0].GetBase().GetRepo().GetCloneURL()
	}
	baseRef := "refs/heads/" + a.BaseRef
	repo, err := ghapp.FetchRepo(ctx, m.gh, m.cache, a.InstallationID, a.Owner, a.Repo, clone, []string{baseRef})
	if err != nil {
		return fmt.Errorf("fetching %s to compare the base move: %w", baseRef, err)
	}
	defer repo.Close()
	// The branch as it is now: a later push's job compares from the same checks, so comparing with the newest
	// head asks once for what both moves changed.
	head, err := repo.Resolve(baseRef)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", baseRef, err)
	}
	active, err := m.q.ActiveChecks(ctx, a.Owner, a.Repo)
	if err != nil {
		return err
	}
	outcomes, batch, err := m.judgeBaseMove(ctx, a, repo, head, prs, active, clone)
	if err != nil {
		return err
	}
	if err := m.q.Insert(ctx, batch); err != nil {
		return fmt.Errorf("enqueueing the re-checks: %w", err)
	}
	rechecked := 0
	for _, o := range outcomes {
		if o.Recheck != "" {
			rechecked++
			m.log.Info("the base moved in a way that matters: checking again", "repo", a.Owner+"/"+a.Repo, "pr", o.Number,
				"base", jobs.Short(head.String()), "changed", o.Recheck)
		}
	}
	m.stats.baseRechecks.Add(int64(rechecked))
	m.log.Info("base moved", "repo", a.Owner+"/"+a.Repo, "branch", a.BaseRef, "head", jobs.Short(head.String()),
		"open", len(prs), "rechecked", rechecked, "kept", len(prs)-rechecked)
	return nil
}

// judgeBaseMove decides, for each open pull request, whether the base's move to head can change its check's
// judgement, and returns the re-checks to enqueue.
func (m *Merger) judgeBaseMove(ctx context.Context, a jobs.MergeArgs, repo *gitfs.Repo, head gitfs.Hash, prs []*github.PullRequest,
	active []store.ActiveCheck, clone string) ([]BaseMoveOutcome, []river.InsertManyParams, error) {
	changed := map[string][]gitfs.Change{} // by checked base
	failed := map[string]string{}
	var outcomes []BaseMoveOutcome
	var batch []river.InsertManyParams
	for _, pr := range prs {
		o := BaseMoveOutcome{Number: pr.GetNumber()}
		sha := strings.ToLower(pr.GetHead().GetSHA())
		c, ok, err := m.store.LoadChecked(ctx, a.Owner, a.Repo, o.Number)
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("reading the last check of #%d: %w", o.Number, err)
		case !ok || !strings.EqualFold(c.HeadSHA, sha):
			// A check of this head that is running but has not recorded its base yet may have fetched the
			// base before the move: with nothing recorded to compare, it is checked again.
			if firstCheckMayMissMove(active, o.Number, sha, head) {
				o.Recheck = "the base, which moved while the first check of this head was reading it"
				break
			}
			o.Why = "its head is not checked yet: that check reads the new base"
		case c.BaseSHA == head.String():
			o.Why = "checked on this base already"
		default:
			pol, err := parseStoredPolicy(c.Policy)
			if err != nil {
				o.Recheck = ".catalogbot.yaml (the stored policy does not parse)"
				break
			}
			changes, ok := changed[c.BaseSHA]
			if !ok && failed[c.BaseSHA] == "" {
				changes, err = repo.ChangedPaths(ctx, plumbing.NewHash(c.BaseSHA), head)
				if err != nil {
					if ctx.Err() != nil {
						return nil, nil, ctx.Err()
					}
					failed[c.BaseSHA] = err.Error()
				} else {
					changed[c.BaseSHA] = changes
				}
			}
			if why := failed[c.BaseSHA]; why != "" {
				o.Recheck = fmt.Sprintf("the base (catalogbot could not compare %s with %s: %s)", jobs.Short(c.BaseSHA), jobs.Short(head.String()), why)
				break
			}
			var touched []string
			for _, p := range c.Touched {
				if p != "" {
					touched = append(touched, p)
				}
			}
			p := relevantChange(pol, touched, changes)
			if p == "" {
				o.Why = "the move changed none of its packages nor the policy"
				break
			}
			if why, err := recheckUnderWay(ctx, repo, pol, touched, active, o.Number, sha, head); err != nil {
				return nil, nil, err
			} else if why != "" {
				o.Why = why
				break
			}
			o.Recheck = p
		}
		if o.Recheck != "" {
			batch = append(batch, river.InsertManyParams{Args: jobs.CheckPRArgs{InstallationID: a.InstallationID,
				Owner: a.Owner, Repo: a.Repo, Number: o.Number, HeadSHA: pr.GetHead().GetSHA(), CloneURL: clone,
				Rerun: jobs.BaseRecheckKey(head.String()), Reason: "base moved: " + o.Recheck}})
		}
		outcomes = append(outcomes, o)
	}
	return outcomes, batch, nil
}

// openPullsInto lists the open pull requests whose base is branch (at most maxPullsScanned).
func openPullsInto(ctx context.Context, gh *github.Client, owner, repo, branch string) ([]*github.PullRequest, error) {
	var out []*github.PullRequest
	_, err := ghapp.EachOpenPullRequest(ctx, gh, owner, repo, branch, maxPullsScanned, func(pr *github.PullRequest) { out = append(out, pr) })
	if err != nil {
		return nil, fmt.Errorf("the open pull requests into %s: %w", branch, err)
	}
	return out, nil
}

// firstCheckMayMissMove reports whether a check of the pull request's head is running and none is waiting to
// run nor re-checking on head (either of which reads the base as it is now).
func firstCheckMayMissMove(active []store.ActiveCheck, number int, prHead string, head gitfs.Hash) bool {
	running := false
	for _, c := range active {
		if c.Number != number || !strings.EqualFold(c.HeadSHA, prHead) {
			continue
		}
		if !c.Running {
			return false
		}
		if b, ok := jobs.RecheckedBase(c.Rerun); ok && b == head.String() {
			return false
		}
		running = true
	}
	return running
}

// recheckUnderWay says why a check of the pull request's head under way already judges the base at head in
// what matters to the pull request (its packages pkgs, the policy), or "": a check waiting to run (it reads
// the base branch when it starts), or a running re-check asked for on a base since which the branch changed
// none of it. A running check of another kind may have read an older base and does not count.
func recheckUnderWay(ctx context.Context, repo *gitfs.Repo, pol *policy.Policy, pkgs []string, active []store.ActiveCheck, number int, prHead string, head gitfs.Hash) (string, error) {
	for _, c := range active {
		if c.Number != number || !strings.EqualFold(c.HeadSHA, prHead) {
			continue
		}
		if !c.Running {
			return "a check of its head waits to run: it reads the new base", nil
		}
		b, ok := jobs.RecheckedBase(c.Rerun)
		if !ok {
			continue
		}
		if b == head.String() {
			return "a re-check on this base is running", nil
		}
		changes, err := repo.ChangedPaths(ctx, plumbing.NewHash(b), head)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			continue // not comparable: it does not count
		}
		if relevantChange(pol, pkgs, changes) == "" {
			return fmt.Sprintf("a re-check on %s is running, and the base changed none of its packages since", jobs.Short(b)), nil
		}
	}
	return "", nil
}
