package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// openPR is what the resync needs of an open pull request.
type openPR struct {
	Number  int
	HeadSHA string
	Draft   bool
}

// recoveryGitHub is the GitHub side of the level-triggered recovery; the
// composition root fills it with OpenPullRequests, HasCompletedChecks and
// RedeliverFailed.
type recoveryGitHub struct {
	installation func(ctx context.Context, installationID int64) (*github.Client, error)
	app          func() *github.Client
	openPRs      func(ctx context.Context, gh *github.Client, owner, repo string) ([]openPR, error)
	hasCompleted func(ctx context.Context, gh *github.Client, owner, repo, sha string, names []string) (bool, error)
	redeliver    func(ctx context.Context, app *github.Client, since time.Time) (int, error)
	// comments lists the comments of a pull request updated since a time (nil: commands are not recovered).
	comments func(ctx context.Context, gh *github.Client, owner, repo string, number int, since time.Time) ([]*github.IssueComment, error)
}

// Recovery re-derives work from GitHub's state on a timer, so that a lost
// webhook delays a check instead of losing it (River runs the periodic jobs
// on the elected leader only, so replicas do not repeat them).
type Recovery struct {
	q      *Queue
	gh     recoveryGitHub
	names  func() []string
	window time.Duration
	log    *slog.Logger
	now    func() time.Time
	// cmds, when set, is where the resync records the heads it sees and finds the commands handled.
	cmds commandStore
}

// Resync enqueues a check for every open, non-draft PR head of every known
// repository that has not got all our check runs completed. Checks already
// queued for a head are not duplicated (unique jobs).
func (r *Recovery) Resync(ctx context.Context) error {
	repos, err := r.q.InstalledRepos(ctx)
	if err != nil {
		return fmt.Errorf("listing installed repositories: %w", err)
	}
	names := r.names()
	var errs []error
	queued := 0
	for _, repo := range repos {
		gh, err := r.gh.installation(ctx, repo.InstallationID)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", repo.Owner, repo.Name, err))
			continue
		}
		prs, err := r.gh.openPRs(ctx, gh, repo.Owner, repo.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: listing open pull requests: %w", repo.Owner, repo.Name, err))
			continue
		}
		var jobs []river.InsertManyParams
		for _, pr := range prs {
			if r.cmds != nil {
				cjobs, err := r.recoverCommands(ctx, gh, repo, pr)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s/%s#%d: recovering comment commands: %w", repo.Owner, repo.Name, pr.Number, err))
				}
				jobs = append(jobs, cjobs...)
			}
			if pr.Draft {
				continue
			}
			done, err := r.gh.hasCompleted(ctx, gh, repo.Owner, repo.Name, pr.HeadSHA, names)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s#%d: %w", repo.Owner, repo.Name, pr.Number, err))
				continue
			}
			if !done {
				jobs = append(jobs, enqueueCheck(repo, pr.Number, pr.HeadSHA, "resync")...)
			} else {
				// Checked: the merge decision is re-derived (level-triggered).
				jobs = append(jobs, river.InsertManyParams{Args: MergeArgs{InstallationID: repo.InstallationID,
					Owner: repo.Owner, Repo: repo.Name, Number: pr.Number, CloneURL: repo.CloneURL, Reason: "resync"}})
			}
		}
		if err := r.q.Insert(ctx, jobs); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: enqueueing: %w", repo.Owner, repo.Name, err))
			continue
		}
		queued += len(jobs)
	}
	r.log.Info("resync done", "repositories", len(repos), "queued", queued, "errors", len(errs))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// One repository's failure does not fail the pass; the next pass retries it.
	if len(errs) > 0 {
		r.log.Warn("resync incomplete", "err", errors.Join(errs...))
	}
	return nil
}

// recoverCommands records the head of an open pull request and finds the comments of the recovery window
// whose commands were not handled (their deliveries lost): every one newer than the last comment handled,
// and older ones too. A comment edited since it was written is left alone: what it said first is unknown.
func (r *Recovery) recoverCommands(ctx context.Context, gh *github.Client, repo InstalledRepo, pr openPR) ([]river.InsertManyParams, error) {
	if err := r.cmds.sawHead(ctx, HeadSeen{Owner: repo.Owner, Repo: repo.Name, Number: pr.Number, HeadSHA: pr.HeadSHA}, r.now()); err != nil {
		return nil, err
	}
	if r.gh.comments == nil {
		return nil, nil
	}
	since := r.now().Add(-r.window)
	cs, err := r.gh.comments(ctx, gh, repo.Owner, repo.Name, pr.Number, since)
	if err != nil {
		return nil, err
	}
	ec := eventContext{InstallationID: repo.InstallationID, Owner: repo.Owner, Name: repo.Name, CloneURL: repo.CloneURL}
	var jobs []river.InsertManyParams
	for _, c := range cs {
		if c.GetCreatedAt().Time.Before(since) || !c.GetUpdatedAt().Time.Equal(c.GetCreatedAt().Time) {
			continue
		}
		a, ok := commandJob(ec, pr.Number, c)
		if !ok {
			continue
		}
		var todo []string
		for _, cmd := range a.Commands {
			done, err := r.cmds.commandHandled(ctx, repo.Owner, repo.Name, pr.Number, c.GetID(), cmd)
			if err != nil {
				return jobs, err
			}
			if !done {
				todo = append(todo, cmd)
			}
		}
		if len(todo) == 0 {
			continue
		}
		a.Recovered = true
		jobs = append(jobs, river.InsertManyParams{Args: a})
	}
	return jobs, nil
}

// maxCommentPages bounds the comments the resync reads of one pull request.
const maxCommentPages = 10

// PullRequestComments lists the comments of a pull request updated since since (all pages, bounded).
func PullRequestComments(ctx context.Context, gh *github.Client, owner, repo string, number int, since time.Time) ([]*github.IssueComment, error) {
	var out []*github.IssueComment
	opt := &github.IssueListCommentsOptions{Since: &since, ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; page < maxCommentPages; page++ {
		cs, resp, err := gh.Issues.ListComments(ctx, owner, repo, number, opt)
		if err != nil {
			return out, fmt.Errorf("listing the comments of #%d: %w", number, err)
		}
		out = append(out, cs...)
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

// Redeliver asks GitHub to redeliver the App's failed deliveries of the
// last window. A redelivery keeps its X-GitHub-Delivery, so one that did
// reach us after all is a no-op.
func (r *Recovery) Redeliver(ctx context.Context) error {
	n, err := r.gh.redeliver(ctx, r.gh.app(), r.now().Add(-r.window))
	if err != nil {
		return fmt.Errorf("redelivering failed deliveries: %w", err)
	}
	if n > 0 {
		r.log.Info("asked GitHub to redeliver failed deliveries", "count", n)
	}
	return nil
}
