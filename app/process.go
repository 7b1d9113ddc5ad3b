package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

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

// checkRunReporting binds a check-run reporter to one job's runs (implemented by *ghapp.CheckRunReporter).
type checkRunReporting interface {
	For(gh *github.Client, owner, repo, headSHA string, pr int, job string) *ghapp.JobRuns
}

// Pipeline checks one pull request head and reports check runs.
type Pipeline struct {
	gh           ghapp.Clients
	reporter     checkRunReporting
	teams        func(*github.Client) policy.TeamResolver
	cache        *ghapp.GitCache
	checks       []checks.Check
	checkTimeout time.Duration
	catalogs     []string
	limits       catalog.Limits
	policies     *gitpr.PolicyCache      // parsed base policies by blob, shared by every check
	lines        *checks.LineDiffCache   // changed lines by pair of blobs, shared by every check
	bundleDirs   *template.DirFactsCache // a bundle directory's package, version and image digest by its tree, shared by every check
	metrics      *Metrics
	log          *slog.Logger
	// checked, when set, learns what each check saw and when it completed (the merge).
	checked checkRecorder
	// updates and bot are the App's own records and login, from which a catalog update is known to be the
	// App's (checks.Provenance); without them no pull request is derived.
	updates store.UpdateStore
	bot     *rebuild.BotIdentity
}

// runNames lists the check runs of the configured checks, in order.
func (p *Pipeline) runNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, c := range p.checks {
		if n := jobs.CheckRunName(c.Name()); n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// errPermanent marks a failure that a retry cannot fix (the base's policy
// file is invalid, no catalog is configured).
type errPermanent struct{ err error }

func (e errPermanent) Error() string { return e.err.Error() }
func (e errPermanent) Unwrap() error { return e.err }

// CheckPR is the work of one check job (job is its jobs.CheckJobKey): a retried
// attempt reports on the runs of the earlier ones and leaves those they
// completed alone, so a job reports one result per run however often it is
// interrupted. It drops work for a head that is no longer the PR's.
func (p *Pipeline) CheckPR(ctx context.Context, a jobs.CheckPRArgs, job string, attempt, maxAttempts int) (err error) {
	start := time.Now()
	outcome := "error"
	defer func() { p.metrics.ObserveJob(jobs.KindCheckPR, outcome, time.Since(start)) }()
	full := a.Owner + "/" + a.Repo
	log := p.log.With("delivery", a.DeliveryID, "repo", full, "pr", a.Number, "sha", a.HeadSHA, "reason", a.Reason, "attempt", attempt)

	gh, err := p.gh.Installation(ctx, a.InstallationID)
	if err != nil {
		return fmt.Errorf("installation %d client: %w", a.InstallationID, err)
	}
	runs := p.reporter.For(gh, a.Owner, a.Repo, a.HeadSHA, a.Number, job)
	pr, _, err := gh.PullRequests.Get(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return fmt.Errorf("reading pull request %s#%d: %w", full, a.Number, err)
	}
	if drop := whyDrop(pr, a.HeadSHA); drop != "" {
		log.Info("check dropped", "why", drop)
		outcome = "dropped"
		if attempt > 1 {
			// An earlier attempt may have left its runs in progress (it
			// failed and meant to retry, or it was killed): close them,
			// or they would spin on the old head for ever.
			return closeLeftovers(ctx, runs, a.HeadSHA, pr, drop)
		}
		return nil
	}

	names := p.runNames()
	var ids map[string]int64
	if sameHeadAgain(a.Reason) {
		// The startup resync and a delivery (often a late redelivery) may
		// both ask for this head; the second to run finds the first's
		// verdict and leaves it, rather than reporting a second set.
		var by string
		ids, by, err = runs.StartUnlessChecked(ctx, names)
		if err == nil && by != "" {
			log.Info("check dropped", "why", "already checked", "by", by)
			outcome = "dropped"
			return nil
		}
	} else {
		ids, err = runs.Start(ctx, names)
	}
	if err != nil {
		return fmt.Errorf("creating check runs: %w", err)
	}
	log.Info("checking", "runs", len(ids), "completed_before", len(names)-len(ids))

	results, graphs, runErr := p.run(ctx, gh, a, pr)
	// Observe: is this head still the pull request's? (A force push also removes the old head from
	// refs/pull/N/head, which is one way the run fails.) Unreadable counts as still the head.
	cur, _, gerr := gh.PullRequests.Get(ctx, a.Owner, a.Repo, a.Number)
	if gerr != nil {
		cur = nil
	}
	// Decide, then act.
	d := decideRun(runErr, cur, a.HeadSHA, attempt, maxAttempts)
	switch d.outcome {
	case runSuperseded:
		if runErr == nil {
			log.Info("results dropped", "why", d.why)
		}
		outcome = "superseded"
		return runs.CompleteAll(ctx, ids, supersededResult(d.newHead))
	case runRetry, runFailed:
		// The job's own context may be what ended (its timeout): say what
		// happened on the runs under a short deadline of its own.
		tell, cancel := context.WithTimeout(context.WithoutCancel(ctx), failureReportTimeout)
		defer cancel()
		if d.outcome == runRetry {
			// The runs stay in progress, saying why: the next attempt
			// completes them (a neutral result now would read as a verdict).
			summary := fmt.Sprintf("catalogbot could not check this commit: %s\n\nIt will try again (attempt %d of %d).",
				ghapp.MarkdownInline(runErr.Error()), attempt, maxAttempts)
			for name, id := range ids {
				if nerr := runs.Note(tell, id, "Could not run, trying again", summary); nerr != nil {
					log.Warn("noting the failure on a check run", "check_run", name, "err", nerr)
				}
			}
			return runErr
		}
		res := checks.Result{Conclusion: checks.Neutral, Title: ghapp.TitleCouldNotRun, Err: runErr.Error(),
			Summary: fmt.Sprintf("catalogbot could not check this commit: %s", runErr)}
		if cerr := runs.CompleteAll(tell, ids, res); cerr != nil {
			log.Warn("completing check runs after a failure", "err", cerr)
		}
		log.Error("check could not run", "err", runErr)
		outcome = "failed"
		return nil
	}

	var errs []error
	for _, name := range names {
		res := mergeResults(name, results[name])
		id, ok := ids[name]
		if !ok {
			continue
		}
		extra := ""
		if name == "catalogbot/validate" {
			extra = graphs
		}
		if err := runs.Complete(ctx, id, res, extra); err != nil {
			errs = append(errs, fmt.Errorf("completing %s: %w", name, err))
			continue
		}
		log.Info("check run completed", "check_run", name, "conclusion", string(res.Conclusion), "findings", len(res.Findings))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if p.checked != nil {
		if err := p.checked.ChecksCompleted(ctx, a); err != nil {
			return fmt.Errorf("asking for the merge evaluation: %w", err)
		}
	}
	outcome = "reported"
	return nil
}

// sameHeadAgain says whether a job asked for with reason only wants its
// head checked, so that a verdict another job gave that head already
// answers it: the head arrived (opened, synchronize) or was found unchecked
// (resync). Other reasons ask for a fresh look at a head that may have
// been checked (reopened, a new base, a re-run) and always check.
func sameHeadAgain(reason string) bool {
	switch reason {
	case "pull_request.opened", "pull_request.synchronize", "resync":
		return true
	}
	return false
}

// runOutcome is what a check job does once its checks ran, or could not.
type runOutcome int

const (
	// runReport: the head is still the pull request's and the checks ran: complete the runs with the results.
	runReport runOutcome = iota
	// runSuperseded: the pull request moved on (another head, closed): complete the runs as superseded.
	runSuperseded
	// runRetry: the checks could not run and another attempt is left: note it on the runs, fail the attempt.
	runRetry
	// runFailed: the checks could not run, for good: complete the runs as "could not run" (neutral).
	runFailed
)

// runDecision is decideRun's answer: the outcome, and for runSuperseded why and the head that replaced it.
type runDecision struct {
	outcome runOutcome
	why     string
	newHead string
}

// decideRun decides what a check job of head does after its checks, from what it observed: runErr (nil
// when the checks ran), the pull request as read after them (cur; nil when it could not be read, which
// counts as still the head), and the attempt. A head that is no longer the pull request's is superseded
// whether or not its checks ran; an error no retry can mend (errPermanent) or the last attempt fails.
func decideRun(runErr error, cur *github.PullRequest, head string, attempt, maxAttempts int) runDecision {
	if cur != nil {
		if drop := whyDrop(cur, head); drop != "" {
			return runDecision{outcome: runSuperseded, why: drop, newHead: cur.GetHead().GetSHA()}
		}
	}
	if runErr == nil {
		return runDecision{outcome: runReport}
	}
	var perm errPermanent
	if !errors.As(runErr, &perm) && attempt < maxAttempts {
		return runDecision{outcome: runRetry}
	}
	return runDecision{outcome: runFailed}
}

// whyDrop says why work for sha on pr must not be reported, or "".
func whyDrop(pr *github.PullRequest, sha string) string {
	switch {
	case pr.GetState() != "open":
		return "the pull request is " + pr.GetState()
	case !strings.EqualFold(pr.GetHead().GetSHA(), sha):
		return "superseded by " + pr.GetHead().GetSHA()
	}
	return ""
}

func supersededResult(newSHA string) checks.Result {
	return checks.Result{Conclusion: checks.Neutral, Title: ghapp.TitleSuperseded,
		Summary: fmt.Sprintf("The pull request's head moved to %s before this check finished; that commit is checked instead.", newSHA)}
}

// failureReportTimeout bounds what a failed or timed-out job still tells
// GitHub about its runs after its own context has ended.
const failureReportTimeout = 15 * time.Second

// closeLeftovers completes the runs an earlier attempt of the job left in
// progress on a head that is no longer to be checked.
func closeLeftovers(ctx context.Context, runs *ghapp.JobRuns, head string, cur *github.PullRequest, why string) error {
	ids, err := runs.InProgress(ctx)
	if err != nil {
		return fmt.Errorf("looking for runs left in progress: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	res := supersededResult(cur.GetHead().GetSHA())
	if strings.EqualFold(cur.GetHead().GetSHA(), head) {
		res = checks.Result{Conclusion: checks.Neutral, Title: ghapp.TitleNotChecked,
			Summary: fmt.Sprintf("This commit was not checked: %s.", why)}
	}
	return runs.CompleteAll(ctx, ids, res)
}

// run fetches both revisions, builds the checks' input and runs them; the
// results are grouped by check run name. It also draws the upgrade graphs
// of the changed channels (markdown for catalogbot/validate's summary).
func (p *Pipeline) run(ctx context.Context, gh *github.Client, a jobs.CheckPRArgs, pr *github.PullRequest) (map[string][]checks.Result, string, error) {
	baseRef := pr.GetBase().GetRef()
	if baseRef == "" {
		return nil, "", errors.New("the pull request has no base branch")
	}
	cloneURL := a.CloneURL
	if cloneURL == "" {
		cloneURL = pr.GetBase().GetRepo().GetCloneURL()
	}
	baseFull := "refs/heads/" + baseRef
	headRef := fmt.Sprintf("refs/pull/%d/head", a.Number)
	repo, err := ghapp.FetchRepo(ctx, p.gh, p.cache, a.InstallationID, a.Owner, a.Repo, cloneURL, []string{baseFull, headRef})
	if err != nil {
		return nil, "", err
	}
	defer repo.Close() // every read of the revisions ends within this call
	in, err := gitpr.Build(ctx, repo, gitpr.Options{
		Base: baseFull, Head: a.HeadSHA, Author: pr.GetUser().GetLogin(),
		Repo: a.Owner + "/" + a.Repo, Number: a.Number, DiffFromMergeBase: true,
		Catalogs: p.catalogs, Teams: p.teams(gh), Limits: p.limits, Policies: p.policies, Lines: p.lines,
		BundleDirs: p.bundleDirs,
	})
	if err != nil {
		var pe *policy.ParseError
		if errors.As(err, &pe) || errors.Is(err, gitpr.ErrNoCatalogs) {
			return nil, "", errPermanent{fmt.Errorf("the base branch's %s: %w", policy.FileName, err)}
		}
		return nil, "", err
	}
	if p.updates != nil {
		prov, err := p.provenance(ctx, repo, a, pr, baseFull, in)
		if err != nil {
			return nil, "", err
		}
		in.Provenance = prov
	}
	// Approving reviews of this head lift ownership findings an owner (or a maintainer) may vouch for; the
	// reviews are read for every check, so ownership follows approvals given, dismissed and outdated by a push.
	var reviews []merge.Review
	if p.checked != nil {
		reviews, err = p.checked.Approvals(ctx, gh, a.Owner, a.Repo, a.Number) // reviews and /approve comments
	} else {
		reviews, err = merge.LatestReviews(ctx, gh, a.Owner, a.Repo, a.Number)
	}
	if err != nil {
		return nil, "", err
	}
	for _, r := range reviews {
		if r.State == "APPROVED" {
			in.Approvals = append(in.Approvals, checks.Approval{Login: r.User, SHA: r.CommitID})
		}
	}
	in.ApprovalsKnown = true
	if err := checks.Prepare(ctx, in); err != nil {
		return nil, "", err
	}
	if p.checked != nil {
		if err := p.checked.RecordChecked(ctx, a, baseFull, repo, in); err != nil {
			return nil, "", fmt.Errorf("recording the check for the merge: %w", err)
		}
		if why := checks.NotDerivedReason(in); why != "" && strings.HasPrefix(pr.GetHead().GetRef(), rebuild.CatalogUpdateBranch("")) {
			p.log.Info("not a derived catalog update", "repo", a.Owner+"/"+a.Repo, "pr", a.Number, "head", a.HeadSHA, "why", why)
		}
	}
	runner := checks.NewRunner(p.checks, checks.WithTimeout(p.checkTimeout), checks.WithLogger(p.log))
	out := map[string][]checks.Result{}
	for _, r := range runner.Run(ctx, in) {
		p.metrics.ObserveCheck(r.Check, string(r.Conclusion), r.Duration)
		if n := jobs.CheckRunName(r.Check); n != "" {
			out[n] = append(out[n], r)
		}
	}
	return out, checks.UpgradeGraphs(in), nil
}

// provenance is what the App knows of the pull request from its own doing (see rebuild.UpdateProvenance).
func (p *Pipeline) provenance(ctx context.Context, repo *gitfs.Repo, a jobs.CheckPRArgs, pr *github.PullRequest, baseRef string, in *checks.PullRequest) (*rebuild.UpdateProvenance, error) {
	if strings.HasSuffix(pr.GetUser().GetLogin(), "[bot]") && p.bot != nil {
		// A bot's pull request may be the App's own: know the App's login now, or try the job again, rather
		// than judge it as anyone's.
		if _, err := p.bot.Login(ctx); err != nil {
			return nil, err
		}
	}
	defaultHead, err := repo.Resolve(baseRef)
	if err != nil {
		return nil, err
	}
	mergeBase, err := repo.Resolve(in.Base.SHA)
	if err != nil {
		return nil, err
	}
	head, err := repo.Resolve(in.Head.SHA)
	if err != nil {
		return nil, err
	}
	return rebuild.NewUpdateProvenance(p.updates, p.bot, repo, a.Owner, a.Repo, pr, defaultHead, mergeBase, head), nil
}

// mergeResults makes one check run's result out of the checks it shows.
func mergeResults(name string, rs []checks.Result) checks.Result {
	switch len(rs) {
	case 0:
		return checks.Result{Check: name, Conclusion: checks.Neutral, Title: "Not run", Summary: "This check did not run."}
	case 1:
		r := rs[0]
		r.Check = name
		return r
	}
	out := checks.Result{Check: name, Conclusion: checks.Success}
	var titles, summaries, errs []string
	for _, r := range rs {
		out.Conclusion = checks.Worst(out.Conclusion, r.Conclusion)
		out.Findings = append(out.Findings, r.Findings...)
		out.Duration += r.Duration
		if r.Title != "" {
			titles = append(titles, r.Title)
		}
		summaries = append(summaries, fmt.Sprintf("### %s\n\n%s", r.Check, r.Summary))
		if r.Err != "" {
			errs = append(errs, r.Check+": "+r.Err)
		}
	}
	catalog.SortFindings(out.Findings)
	out.Title = strings.Join(titles, "; ")
	out.Summary = strings.Join(summaries, "\n\n")
	out.Err = strings.Join(errs, "; ")
	return out
}

// checkRecorder is what the pipeline tells the merge evaluation.
type checkRecorder interface {
	RecordChecked(ctx context.Context, a jobs.CheckPRArgs, baseRef string, repo *gitfs.Repo, in *checks.PullRequest) error
	ChecksCompleted(ctx context.Context, a jobs.CheckPRArgs) error
	Approvals(ctx context.Context, gh *github.Client, owner, repo string, number int) ([]merge.Review, error)
}
