package app

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river"
)

// Job kinds. They are stored in the database: never rename one.
const (
	KindCheckPR   = "catalogbot_check_pr"
	KindReview    = "catalogbot_review"
	KindRebuild   = "catalogbot_rebuild"
	KindResync    = "catalogbot_resync"
	KindRedeliver = "catalogbot_redeliver"
)

// CheckPRArgs asks for the checks of one pull request head. A job is unique
// by repository, PR and head SHA while it waits or runs, so a burst of events
// about one head (pull_request, check_suite, a redelivery) runs it once; a
// finished job does not block a new one, so "Re-run" works.
type CheckPRArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner" river:"unique"`
	Repo           string `json:"repo" river:"unique"`
	Number         int    `json:"number" river:"unique"`
	HeadSHA        string `json:"head_sha" river:"unique"`
	// CloneURL is the repository's HTTPS git URL from the webhook; it
	// follows GitHub Enterprise Server's host.
	CloneURL   string `json:"clone_url"`
	DeliveryID string `json:"delivery_id,omitempty"`
	// Rerun is the delivery of an explicit re-run request; it makes the job
	// unique by that delivery instead of by head alone.
	Rerun string `json:"rerun,omitempty" river:"unique"`
	// Reason says which event asked (pull_request.synchronize, check_run.rerequested, resync...).
	Reason string `json:"reason"`
}

func (CheckPRArgs) Kind() string { return KindCheckPR }
func (CheckPRArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeJobStates()}}
}

// ReviewArgs records a pull request review; the merge evaluation plugs in
// through ReviewHandler.
type ReviewArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	Number         int    `json:"number"`
	HeadSHA        string `json:"head_sha"`
	ReviewID       int64  `json:"review_id" river:"unique"`
	Reviewer       string `json:"reviewer"`
	State          string `json:"state"`  // approved, changes_requested, commented, dismissed
	Action         string `json:"action"` // submitted, edited, dismissed
	DeliveryID     string `json:"delivery_id,omitempty" river:"unique"`
}

func (ReviewArgs) Kind() string { return KindReview }
func (ReviewArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeJobStates()}}
}

// RebuildArgs asks for the catalog image(s) of a default branch commit; the
// rebuild plugs in through RebuildHandler.
type RebuildArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner" river:"unique"`
	Repo           string `json:"repo" river:"unique"`
	Ref            string `json:"ref"`
	SHA            string `json:"sha" river:"unique"`
	CloneURL       string `json:"clone_url"`
	DeliveryID     string `json:"delivery_id,omitempty"`
	// Before is the branch's head before the push that made SHA the head: the bundle directories that
	// push added are those that differ between the two ("" for a job not made by a push).
	Before string `json:"before,omitempty"`
	// Rerun: someone pressed Re-run on the commit's image run, so it is
	// built again even when an earlier job already reported on it.
	Rerun bool `json:"rerun,omitempty"`
}

func (RebuildArgs) Kind() string { return KindRebuild }
func (RebuildArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeJobStates()}}
}

// ResyncArgs: the periodic level-triggered pass over open pull requests.
type ResyncArgs struct{}

func (ResyncArgs) Kind() string { return KindResync }
func (ResyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeJobStates()}}
}

// RedeliverArgs: the periodic request to redeliver failed webhook deliveries.
type RedeliverArgs struct{}

func (RedeliverArgs) Kind() string { return KindRedeliver }
func (RedeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: activeJobStates()}}
}

// ReviewHandler is where the merge issue plugs in: it is called once per
// recorded review and re-derives the merge decision from the PR's state.
type ReviewHandler interface {
	HandleReview(ctx context.Context, job ReviewArgs) error
}

// RebuildHandler is where the rebuild issue plugs in: it is called for each
// push to a default branch.
type RebuildHandler interface {
	// key names the job across its attempts: a retry or a rescued job
	// has the key of the attempt it continues.
	HandleRebuild(ctx context.Context, job RebuildArgs, key string) error
}

// recordOnly is the ReviewHandler and RebuildHandler until the merge and
// rebuild land: it logs the event and decides nothing.
type recordOnly struct{ log *slog.Logger }

func (r recordOnly) HandleReview(ctx context.Context, j ReviewArgs) error {
	r.log.InfoContext(ctx, "review recorded; merge evaluation not configured",
		"repo", j.Owner+"/"+j.Repo, "pr", j.Number, "sha", j.HeadSHA, "reviewer", j.Reviewer, "state", j.State)
	return nil
}

func (r recordOnly) HandleRebuild(ctx context.Context, j RebuildArgs, _ string) error {
	r.log.InfoContext(ctx, "push to default branch recorded; rebuild not configured",
		"repo", j.Owner+"/"+j.Repo, "ref", j.Ref, "sha", j.SHA)
	return nil
}

// --- workers ----------------------------------------------------------------

type checkPRWorker struct {
	river.WorkerDefaults[CheckPRArgs]
	p       *Pipeline
	timeout time.Duration
}

func (w *checkPRWorker) Timeout(*river.Job[CheckPRArgs]) time.Duration { return w.timeout }
func (w *checkPRWorker) Work(ctx context.Context, job *river.Job[CheckPRArgs]) error {
	return waitOutRateLimit(w.p.CheckPR(ctx, job.Args, CheckJobKey(job.ID, job.CreatedAt), job.Attempt, job.MaxAttempts))
}

type reviewWorker struct {
	river.WorkerDefaults[ReviewArgs]
	h ReviewHandler
}

func (w *reviewWorker) Work(ctx context.Context, job *river.Job[ReviewArgs]) error {
	return waitOutRateLimit(w.h.HandleReview(ctx, job.Args))
}

type rebuildWorker struct {
	river.WorkerDefaults[RebuildArgs]
	h RebuildHandler
}

func (w *rebuildWorker) Work(ctx context.Context, job *river.Job[RebuildArgs]) error {
	return waitOutRateLimit(w.h.HandleRebuild(ctx, job.Args, CheckJobKey(job.ID, job.CreatedAt)))
}

// waitOutRateLimit turns "GitHub rate limits us until T" into a snooze until
// T. A snooze costs the job no attempt, whereas River's retry delays would
// spend all five attempts within minutes of an hourly limit and drop the
// job. A short random spread keeps the jobs held by one limit from all
// calling GitHub in the same second it lifts.
func waitOutRateLimit(err error) error {
	var rl *RateLimitedError
	if !errors.As(err, &rl) {
		return err
	}
	wait := max(time.Until(rl.Until), time.Second)
	return river.JobSnooze(wait + rand.N(rateLimitSpread))
}

// rateLimitSpread bounds the random delay added to a rate-limit snooze.
const rateLimitSpread = 5 * time.Second

type resyncWorker struct {
	river.WorkerDefaults[ResyncArgs]
	r *Recovery
}

func (w *resyncWorker) Work(ctx context.Context, _ *river.Job[ResyncArgs]) error {
	return w.r.Resync(ctx)
}

type redeliverWorker struct {
	river.WorkerDefaults[RedeliverArgs]
	r *Recovery
}

func (w *redeliverWorker) Work(ctx context.Context, _ *river.Job[RedeliverArgs]) error {
	return w.r.Redeliver(ctx)
}

// jobHandlers are the workers' collaborators, given by the composition root.
type jobHandlers struct {
	pipeline   *Pipeline
	review     ReviewHandler
	rebuild    RebuildHandler
	recovery   *Recovery
	jobTimeout time.Duration
}

// newRiverConfig registers every job kind and schedules the periodic ones.
func newRiverConfig(c *Config, h jobHandlers) (*river.Config, error) {
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &checkPRWorker{p: h.pipeline, timeout: c.JobTimeout}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &reviewWorker{h: h.review}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &rebuildWorker{h: h.rebuild}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &resyncWorker{r: h.recovery}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &redeliverWorker{r: h.recovery}); err != nil {
		return nil, err
	}
	var periodic []*river.PeriodicJob
	if c.ResyncInterval > 0 {
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(c.ResyncInterval),
			func() (river.JobArgs, *river.InsertOpts) { return ResyncArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindResync, RunOnStart: true}))
	}
	if c.RedeliverInterval > 0 {
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(c.RedeliverInterval),
			func() (river.JobArgs, *river.InsertOpts) { return RedeliverArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindRedeliver, RunOnStart: true}))
	}
	return &river.Config{
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.Workers}},
		Workers:              workers,
		PeriodicJobs:         periodic,
		JobTimeout:           c.JobTimeout,
		RescueStuckJobsAfter: c.RescueAfter,
		MaxAttempts:          5,
		FetchCooldown:        20 * time.Millisecond,
		FetchPollInterval:    500 * time.Millisecond,
	}, nil
}
