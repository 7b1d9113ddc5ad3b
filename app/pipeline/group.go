package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
)

// GitHub's merge queue. A repository whose branch protection uses a merge queue asks, with a merge_group
// event (action checks_requested), for the required checks on the group's head: a commit GitHub made on
// gh-readonly-queue/<base>/pr-<n>-<sha> holding the base head and the queued pull requests' changes.
// catalogbot answers with the same check runs as on a pull request, on that commit: the content checks
// (validate, CRD safety, templates, images) judge the group's head against the base commit it was built on,
// which is the merge result itself (two queued pull requests that conflict in content fail here).
// catalogbot/ownership reports what GitHub already enforced: each pull request entered the queue only once
// its required checks, ownership among them, passed on its own head, and a group holds nothing else.

// groupOwnership is catalogbot/ownership's result on a merge group head.
func groupOwnership(a jobs.MergeGroupArgs) checks.Result {
	return checks.Result{Check: "ownership", Conclusion: checks.Success, Title: "Judged on each pull request of the group",
		Summary: fmt.Sprintf("This commit is a merge queue group (`%s`) built on %s. Each pull request entered the queue only after its required checks, "+
			"catalogbot/ownership among them, passed on its own head; the group holds nothing else. The other checks judge the group's head itself.",
			ghapp.MarkdownInline(strings.TrimPrefix(a.HeadRef, "refs/heads/")), jobs.Short(a.BaseSHA))}
}

// CheckGroup checks a merge group's head and reports every check run on it.
func (p *Pipeline) CheckGroup(ctx context.Context, a jobs.MergeGroupArgs, job string) error {
	log := p.log.With("repo", a.Owner+"/"+a.Repo, "merge_group", a.HeadRef, "sha", a.HeadSHA, "delivery", a.DeliveryID)
	gh, err := p.gh.Installation(ctx, a.InstallationID)
	if err != nil {
		return fmt.Errorf("installation %d client: %w", a.InstallationID, err)
	}
	names := p.runNames()
	runs := p.reporter.For(gh, a.Owner, a.Repo, a.HeadSHA, 0, job)
	ids, err := runs.Start(ctx, names)
	if err != nil {
		return fmt.Errorf("creating check runs: %w", err)
	}
	results, runErr := p.runGroup(ctx, a)
	if runErr != nil {
		tell, cancel := context.WithTimeout(context.WithoutCancel(ctx), failureReportTimeout)
		defer cancel()
		res := checks.Result{Conclusion: checks.Neutral, Title: ghapp.TitleCouldNotRun, Err: runErr.Error(),
			Summary: fmt.Sprintf("catalogbot could not check this merge group: %s", ghapp.MarkdownInline(runErr.Error()))}
		var errs []error
		for name, id := range ids {
			r := res
			r.Check = name
			if err := runs.Complete(tell, id, r, ""); err != nil {
				errs = append(errs, err)
			}
		}
		log.Error("merge group check could not run", "err", runErr)
		return errors.Join(errs...)
	}
	var errs []error
	for _, name := range names {
		id, ok := ids[name]
		if !ok {
			continue
		}
		if err := runs.Complete(ctx, id, mergeResults(name, results[name]), ""); err != nil {
			errs = append(errs, fmt.Errorf("completing %s: %w", name, err))
		}
	}
	log.Info("merge group checked", "runs", len(ids))
	return errors.Join(errs...)
}

// runGroup fetches the group's head and base and runs the checks, grouped by check run name.
func (p *Pipeline) runGroup(ctx context.Context, a jobs.MergeGroupArgs) (map[string][]checks.Result, error) {
	repo, err := ghapp.FetchRepo(ctx, p.gh, p.cache, a.InstallationID, a.Owner, a.Repo, a.CloneURL, []string{a.BaseRef, a.HeadRef})
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	gh, err := p.gh.Installation(ctx, a.InstallationID)
	if err != nil {
		return nil, err
	}
	in, err := gitpr.Build(ctx, repo, gitpr.Options{
		Base: a.BaseSHA, Head: a.HeadSHA, Repo: a.Owner + "/" + a.Repo,
		Catalogs: p.catalogs, Teams: p.teams(gh), Limits: p.limits, Policies: p.policies, Lines: p.lines,
		BundleDirs: p.bundleDirs,
	})
	if err != nil {
		return nil, err
	}
	if err := checks.Prepare(ctx, in); err != nil {
		return nil, err
	}
	out := map[string][]checks.Result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range p.checks {
		name := checks.RunName(c.Name())
		if name == "" {
			continue
		}
		if c.Name() == (checks.Ownership{}).Name() {
			out[name] = append(out[name], groupOwnership(a))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.runGroupCheck(ctx, c, in)
			p.metrics.ObserveCheck(r.Check, string(r.Conclusion), r.Duration)
			mu.Lock()
			out[name] = append(out[name], r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, nil
}

// runGroupCheck runs one check under the check timeout; an error or a panic is a neutral result saying so.
func (p *Pipeline) runGroupCheck(ctx context.Context, c checks.Check, in *checks.PullRequest) (res checks.Result) {
	ctx, cancel := context.WithTimeout(ctx, p.checkTimeout)
	defer cancel()
	start := time.Now()
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("check panicked", "check", c.Name(), "panic", v, "stack", string(debug.Stack()))
			res = checks.Result{Conclusion: checks.Neutral, Title: "Could not run", Summary: fmt.Sprintf("internal error: %v", v)}
		}
		res.Check, res.Duration = c.Name(), time.Since(start)
	}()
	r, err := c.Run(ctx, in)
	if err != nil {
		return checks.Result{Conclusion: checks.Neutral, Title: "Could not run", Err: err.Error(),
			Summary: fmt.Sprintf("The %s check could not reach a verdict: %s", c.Name(), err)}
	}
	return r
}
