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
