package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/merge"
	"github.com/catalogbot/catalogbot/app/pipeline"
	"github.com/catalogbot/catalogbot/app/promotion"
	"github.com/catalogbot/catalogbot/app/recovery"
	"github.com/riverqueue/river"
)

// reviewHandler works the review job (the merger, *merge.Merger): it is called once per
// recorded review and re-derives the merge decision from the PR's state.
type reviewHandler interface {
	HandleReview(ctx context.Context, job jobs.ReviewArgs) error
}

// rebuildHandler works the rebuild job (*rebuild.Rebuilder with WithRebuild): it is called for each
// push to a default branch.
type rebuildHandler interface {
	// key names the job across its attempts: a retry or a rescued job
	// has the key of the attempt it continues.
	HandleRebuild(ctx context.Context, job jobs.RebuildArgs, key string) error
}

// recordOnly is the rebuildHandler of a server without WithRebuild (and a reviewHandler): it logs the
// event and decides nothing.
type recordOnly struct{ log *slog.Logger }

func (r recordOnly) HandleReview(ctx context.Context, j jobs.ReviewArgs) error {
	r.log.InfoContext(ctx, "review recorded; merge evaluation not configured",
		"repo", j.Owner+"/"+j.Repo, "pr", j.Number, "sha", j.HeadSHA, "reviewer", j.Reviewer, "state", j.State)
	return nil
}

func (r recordOnly) HandleRebuild(ctx context.Context, j jobs.RebuildArgs, _ string) error {
	r.log.InfoContext(ctx, "push to default branch recorded; rebuild not configured",
		"repo", j.Owner+"/"+j.Repo, "ref", j.Ref, "sha", j.SHA)
	return nil
}

// --- workers ----------------------------------------------------------------

type reviewWorker struct {
	river.WorkerDefaults[jobs.ReviewArgs]
	h reviewHandler
}

func (w *reviewWorker) Work(ctx context.Context, job *river.Job[jobs.ReviewArgs]) error {
	return ghapp.WaitOutRateLimit(w.h.HandleReview(ctx, job.Args))
}

type rebuildWorker struct {
	river.WorkerDefaults[jobs.RebuildArgs]
	h rebuildHandler
}

func (w *rebuildWorker) Work(ctx context.Context, job *river.Job[jobs.RebuildArgs]) error {
	return ghapp.WaitOutRateLimit(w.h.HandleRebuild(ctx, job.Args, jobs.CheckJobKey(job.ID, job.CreatedAt)))
}

// jobHandlers are the workers' collaborators, given by the composition root.
type jobHandlers struct {
	pipeline *pipeline.Pipeline
	merger   *merge.Merger
	commands *merge.Commands
	review   reviewHandler
	rebuild  rebuildHandler
	recovery *recovery.Recovery
	promoter *promotion.Promoter
}

// registration adds one job kind's worker to River's workers.
type registration func(*river.Workers) error

func worker[T river.JobArgs](w river.Worker[T]) registration {
	return func(ws *river.Workers) error { return river.AddWorkerSafely(ws, w) }
}

// registrations is every job kind the App works, in one list. A nil handler (tests of the queue alone)
// still registers its kind; its jobs are never worked.
func (h jobHandlers) registrations() []registration {
	return []registration{
		worker[jobs.CheckPRArgs](h.pipeline.CheckWorker()),
		worker[jobs.MergeGroupArgs](h.pipeline.GroupWorker()),
		worker[jobs.ReviewArgs](&reviewWorker{h: h.review}),
		worker[jobs.MergeArgs](h.merger.Worker()),
		worker[jobs.CommandArgs](h.commands.Worker()),
		worker[jobs.RebuildArgs](&rebuildWorker{h: h.rebuild}),
		worker[jobs.ResyncArgs](h.recovery.ResyncWorker()),
		worker[jobs.RedeliverArgs](h.recovery.RedeliverWorker()),
		worker[jobs.PromoteArgs](h.promoter.Worker()),
	}
}

// newRiverConfig registers every job kind and schedules the periodic ones.
func newRiverConfig(c *Config, h jobHandlers) (*river.Config, error) {
	workers := river.NewWorkers()
	for _, add := range h.registrations() {
		if err := add(workers); err != nil {
			return nil, err
		}
	}
	var periodic []*river.PeriodicJob
	if c.ResyncInterval > 0 {
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(c.ResyncInterval),
			func() (river.JobArgs, *river.InsertOpts) { return jobs.ResyncArgs{}, nil },
			&river.PeriodicJobOpts{ID: jobs.KindResync, RunOnStart: true}))
	}
	if c.RedeliverInterval > 0 {
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(c.RedeliverInterval),
			func() (river.JobArgs, *river.InsertOpts) { return jobs.RedeliverArgs{}, nil },
			&river.PeriodicJobOpts{ID: jobs.KindRedeliver, RunOnStart: true}))
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
