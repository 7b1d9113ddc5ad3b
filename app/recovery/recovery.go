package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/app/intake"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"
)

// OpenPR is what the resync needs of an open pull request.
type OpenPR struct {
	Number  int
	HeadSHA string
	Draft   bool
}

// GitHub is the GitHub side of the level-triggered recovery; the
// composition root fills it with ghapp.OpenPullRequests, ghapp.HasCompletedChecks and
// ghapp.RedeliverFailed.
type GitHub struct {
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	App          func() *github.Client
	OpenPRs      func(ctx context.Context, gh *github.Client, owner, repo string) ([]OpenPR, error)
	HasCompleted func(ctx context.Context, gh *github.Client, owner, repo, sha string, names []string) (bool, error)
	Redeliver    func(ctx context.Context, app *github.Client, since time.Time) (int, error)
	// Comments lists the issue and pull request comments of a repository updated since a time (nil: commands
	// are not recovered).
	Comments func(ctx context.Context, gh *github.Client, owner, repo string, since time.Time) ([]*github.IssueComment, error)
}

// Deps is what the recovery works with, given once by the composition root.
type Deps struct {
	// Queue is the open database: the known repositories, the head log and handled commands, the jobs.
	Queue  *store.Queue
	GitHub GitHub
	// Names are the check runs a checked head has completed.
	Names func() []string
	// Window is how far back failed deliveries and comments are looked for.
	Window time.Duration
	Log    *slog.Logger
}

// New builds the recovery.
func New(d Deps) *Recovery {
	return &Recovery{q: d.Queue, gh: d.GitHub, names: d.Names, window: d.Window, log: d.Log, now: time.Now, cmds: d.Queue.Commands()}
}

// Recovery re-derives work from GitHub's state on a timer, so that a lost
// webhook delays a check instead of losing it (River runs the periodic jobs
// on the elected leader only, so replicas do not repeat them).
type Recovery struct {
	q      *store.Queue
	gh     GitHub
	names  func() []string
	window time.Duration
	log    *slog.Logger
	now    func() time.Time
	// cmds, when set, is where the resync records the heads it sees and finds the commands handled.
	cmds store.CommandStore
}

// Resync enqueues a check for every open PR head (drafts too) of every known
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
		gh, err := r.gh.Installation(ctx, repo.InstallationID)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", repo.Owner, repo.Name, err))
			continue
		}
		prs, err := r.gh.OpenPRs(ctx, gh, repo.Owner, repo.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: listing open pull requests: %w", repo.Owner, repo.Name, err))
			continue
		}
		var batch []river.InsertManyParams
		if r.cmds != nil {
			cjobs, err := r.recoverCommands(ctx, gh, repo, prs)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: recovering comment commands: %w", repo.Owner, repo.Name, err))
			}
			batch = append(batch, cjobs...)
		}
		for _, pr := range prs {
			done, err := r.gh.HasCompleted(ctx, gh, repo.Owner, repo.Name, pr.HeadSHA, names)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s#%d: %w", repo.Owner, repo.Name, pr.Number, err))
				continue
			}
			if !done {
				batch = append(batch, intake.EnqueueCheck(repo, pr.Number, pr.HeadSHA, "resync")...)
			} else {
				// Checked: the merge decision is re-derived (level-triggered).
				batch = append(batch, river.InsertManyParams{Args: jobs.MergeArgs{InstallationID: repo.InstallationID,
					Owner: repo.Owner, Repo: repo.Name, Number: pr.Number, CloneURL: repo.CloneURL, Reason: "resync"}})
			}
		}
		if err := r.q.Insert(ctx, batch); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: enqueueing: %w", repo.Owner, repo.Name, err))
			continue
		}
		queued += len(batch)
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

// recoverCommands records the heads of the open pull requests and finds the comments of the recovery window
// whose commands (and /promote) were not handled (their deliveries lost): every one newer than the last comment handled,
// and older ones too. One listing of the repository's comments serves every pull request. A comment edited
// since it was written is left alone: what it said first is unknown.
func (r *Recovery) recoverCommands(ctx context.Context, gh *github.Client, repo jobs.InstalledRepo, prs []OpenPR) ([]river.InsertManyParams, error) {
	open := map[int]bool{}
	for _, pr := range prs {
		open[pr.Number] = true
		if err := r.cmds.SawHead(ctx, jobs.HeadSeen{Owner: repo.Owner, Repo: repo.Name, Number: pr.Number, HeadSHA: pr.HeadSHA}, r.now()); err != nil {
			return nil, err
		}
	}
	if r.gh.Comments == nil || len(prs) == 0 {
		return nil, nil
	}
	since := r.now().Add(-r.window)
	cs, err := r.gh.Comments(ctx, gh, repo.Owner, repo.Name, since)
	if err != nil {
		return nil, err
	}
	var batch []river.InsertManyParams
	for _, c := range cs {
		number := issueNumber(c.GetIssueURL())
		if !open[number] || c.GetCreatedAt().Time.Before(since) || !c.GetUpdatedAt().Time.Equal(c.GetCreatedAt().Time) {
			continue
		}
		if pa, ok := intake.PromoteJob(repo, number, c); ok {
			// A /promote on an open pull request (one on an issue is left to GitHub's redelivery: the listing
			// does not say whether the issue is open).
			done, err := r.cmds.CommandHandled(ctx, repo.Owner, repo.Name, number, c.GetID(), jobs.CmdPromote)
			if err != nil {
				return batch, err
			}
			if !done {
				batch = append(batch, river.InsertManyParams{Args: pa})
			}
		}
		a, ok := intake.CommandJob(repo, number, c)
		if !ok {
			continue
		}
		pending := false
		for _, cmd := range a.Commands {
			done, err := r.cmds.CommandHandled(ctx, repo.Owner, repo.Name, number, c.GetID(), cmd)
			if err != nil {
				return batch, err
			}
			pending = pending || !done
		}
		if pending {
			a.Recovered = true
			batch = append(batch, river.InsertManyParams{Args: a})
		}
	}
	return batch, nil
}

// issueNumber is the number at the end of a comment's issue_url (0 when there is none).
func issueNumber(issueURL string) int {
	i := strings.LastIndex(issueURL, "/issues/")
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(issueURL[i+len("/issues/"):])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// Redeliver asks GitHub to redeliver the App's failed deliveries of the
// last window. A redelivery keeps its X-GitHub-Delivery, so one that did
// reach us after all is a no-op.
func (r *Recovery) Redeliver(ctx context.Context) error {
	n, err := r.gh.Redeliver(ctx, r.gh.App(), r.now().Add(-r.window))
	if err != nil {
		return fmt.Errorf("redelivering failed deliveries: %w", err)
	}
	if n > 0 {
		r.log.Info("asked GitHub to redeliver failed deliveries", "count", n)
	}
	return nil
}

// ResyncWorker is the worker of the periodic resync job.
func (r *Recovery) ResyncWorker() river.Worker[jobs.ResyncArgs] { return &resyncWorker{r: r} }

// RedeliverWorker is the worker of the periodic redelivery job.
func (r *Recovery) RedeliverWorker() river.Worker[jobs.RedeliverArgs] { return &redeliverWorker{r: r} }

type resyncWorker struct {
	river.WorkerDefaults[jobs.ResyncArgs]
	r *Recovery
}

func (w *resyncWorker) Work(ctx context.Context, _ *river.Job[jobs.ResyncArgs]) error {
	return w.r.Resync(ctx)
}

type redeliverWorker struct {
	river.WorkerDefaults[jobs.RedeliverArgs]
	r *Recovery
}

func (w *redeliverWorker) Work(ctx context.Context, _ *river.Job[jobs.RedeliverArgs]) error {
	return w.r.Redeliver(ctx)
}
