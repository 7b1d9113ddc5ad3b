package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/checks"
)

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
