package pipeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/merge"
	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// Reporter binds a check-run reporter to one job's runs (implemented by *ghapp.CheckRunReporter).
type Reporter interface {
	For(gh *github.Client, owner, repo, headSHA string, pr int, job string) *ghapp.JobRuns
}

// Recorder is what the pipeline tells the merge evaluation (implemented by *merge.Merger).
type Recorder interface {
	RecordChecked(ctx context.Context, a jobs.CheckPRArgs, baseRef string, repo *gitfs.Repo, in *checks.PullRequest) error
	ChecksCompleted(ctx context.Context, a jobs.CheckPRArgs) error
	Approvals(ctx context.Context, gh *github.Client, owner, repo string, number int) ([]merge.Review, error)
}

// Metrics is where the pipeline counts its jobs and checks (implemented by the server's metrics).
type Metrics interface {
	ObserveJob(kind, outcome string, d time.Duration)
	ObserveCheck(check, conclusion string, d time.Duration)
}

// Deps is everything a Pipeline works with, given once by the composition root.
type Deps struct {
	GitHub       ghapp.Clients
	Reporter     Reporter
	Teams        func(*github.Client) policy.TeamResolver
	Cache        *ghapp.GitCache
	Checks       []checks.Check
	CheckTimeout time.Duration
	// JobTimeout bounds one check job (River's per-job timeout).
	JobTimeout time.Duration
	Catalogs   []string
	Limits     catalog.Limits
	Policies   *gitpr.PolicyCache      // parsed base policies by blob, shared by every check
	Lines      *checks.LineDiffCache   // changed lines by pair of blobs, shared by every check
	BundleDirs *template.DirFactsCache // a bundle directory's package, version and image digest by its tree, shared by every check
	Metrics    Metrics
	Log        *slog.Logger
	// Checked, when set, learns what each check saw and when it completed (the merge).
	Checked Recorder
	// Updates and Bot are the App's own records and login, from which a catalog update is known to be the
	// App's (checks.Provenance); without them no pull request is derived.
	Updates store.UpdateStore
	Bot     *rebuild.BotIdentity
	// Promotions are the App's records of its promotion commits (app/promotion): a promotion pull request is
	// the App's only when they say so.
	Promotions store.PromotionStore
}

// Pipeline checks one pull request head (or merge group head) and reports check runs.
type Pipeline struct {
	gh           ghapp.Clients
	reporter     Reporter
	teams        func(*github.Client) policy.TeamResolver
	cache        *ghapp.GitCache
	checks       []checks.Check
	checkTimeout time.Duration
	jobTimeout   time.Duration
	catalogs     []string
	limits       catalog.Limits
	policies     *gitpr.PolicyCache
	lines        *checks.LineDiffCache
	bundleDirs   *template.DirFactsCache
	metrics      Metrics
	log          *slog.Logger
	checked      Recorder
	updates      store.UpdateStore
	bot          *rebuild.BotIdentity
	promotions   store.PromotionStore
}

// New builds the pipeline from its dependencies.
func New(d Deps) *Pipeline {
	log := d.Log
	if log == nil {
		log = slog.Default()
	}
	return &Pipeline{
		gh: d.GitHub, reporter: d.Reporter, teams: d.Teams, cache: d.Cache,
		checks: d.Checks, checkTimeout: d.CheckTimeout, jobTimeout: d.JobTimeout, catalogs: d.Catalogs,
		limits: d.Limits, policies: d.Policies, lines: d.Lines, bundleDirs: d.BundleDirs,
		metrics: d.Metrics, log: log, checked: d.Checked, updates: d.Updates, bot: d.Bot, promotions: d.Promotions,
	}
}

// RunNames lists the check runs of cs, in order: each check run once, however many checks it shows.
func RunNames(cs []checks.Check) []string {
	var names []string
	seen := map[string]bool{}
	for _, c := range cs {
		if n := checks.RunName(c.Name()); n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// runNames lists the check runs of the configured checks, in order.
func (p *Pipeline) runNames() []string { return RunNames(p.checks) }

// CheckWorker is the worker of the pull request check job.
func (p *Pipeline) CheckWorker() river.Worker[jobs.CheckPRArgs] { return &checkPRWorker{p: p} }

// GroupWorker is the worker of the merge group check job.
func (p *Pipeline) GroupWorker() river.Worker[jobs.MergeGroupArgs] { return &mergeGroupWorker{p: p} }

type checkPRWorker struct {
	river.WorkerDefaults[jobs.CheckPRArgs]
	p *Pipeline
}

func (w *checkPRWorker) Timeout(*river.Job[jobs.CheckPRArgs]) time.Duration { return w.p.jobTimeout }
func (w *checkPRWorker) Work(ctx context.Context, job *river.Job[jobs.CheckPRArgs]) error {
	return ghapp.WaitOutRateLimit(w.p.CheckPR(ctx, job.Args, jobs.CheckJobKey(job.ID, job.CreatedAt), job.Attempt, job.MaxAttempts))
}

type mergeGroupWorker struct {
	river.WorkerDefaults[jobs.MergeGroupArgs]
	p *Pipeline
}

func (w *mergeGroupWorker) Work(ctx context.Context, job *river.Job[jobs.MergeGroupArgs]) error {
	return ghapp.WaitOutRateLimit(w.p.CheckGroup(ctx, job.Args, jobs.CheckJobKey(job.ID, job.CreatedAt)))
}
