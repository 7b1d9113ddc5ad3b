package checks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/change"
)

// Runner runs checks concurrently, each under its own timeout.
type Runner struct {
	checks  []Check
	timeout time.Duration
	log     *slog.Logger
}

// RunnerOption configures a Runner.
type RunnerOption func(*Runner)

// WithTimeout bounds each check's run (default 2 minutes).
func WithTimeout(d time.Duration) RunnerOption { return func(r *Runner) { r.timeout = d } }

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) RunnerOption { return func(r *Runner) { r.log = l } }

// NewRunner returns a runner for the given checks.
func NewRunner(checks []Check, opts ...RunnerOption) *Runner {
	r := &Runner{checks: checks, timeout: 2 * time.Minute, log: slog.Default()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Run runs every check and returns their results in the order the checks were
// given. A check that errors, times out or panics yields a Neutral result that
// says so; it never takes the other checks down with it.
func (r *Runner) Run(ctx context.Context, pr *PullRequest) []Result {
	results := make([]Result, len(r.checks))
	// Ownership runs first: when the author may change nothing the pull request touches, the costly checks
	// are skipped (they run again once an owner approves the head).
	// The gate holds whichever checks are asked for: without the ownership check among them (the CLI's
	// --checks images, template check --pull) ownership is still judged, for the gate only.
	done := make([]bool, len(r.checks))
	skipCostly := false
	gated := false
	for i, c := range r.checks {
		if isGate(c) {
			results[i], done[i] = r.runOne(ctx, c, pr), true
			skipCostly, gated = results[i].SkipCostly, true
		}
	}
	if !gated && slices.ContainsFunc(r.checks, isCostly) {
		skipCostly = r.runOne(ctx, Ownership{}, pr).SkipCostly
	}
	var wg sync.WaitGroup
	for i, c := range r.checks {
		if done[i] {
			continue
		}
		note := ""
		if isCostly(c) && skipCostly {
			free, ok := c.(change.RegistryFree)
			if !ok {
				results[i] = Result{Check: c.Name(), Conclusion: Skipped, Title: "Skipped until an owner approves",
					Summary: fmt.Sprintf("Not run: @%s owns none of the packages this pull request touches, and no owner or maintainer has approved %s. This check reads registries, so it runs once an owner or maintainer approves the head commit (or when an owner pushes it).", pr.Author, short(pr.Head.SHA))}
				continue
			}
			c = free.WithoutRegistry(fmt.Sprintf("not pulled until an owner or maintainer approves %s (@%s owns none of the packages this pull request touches)", short(pr.Head.SHA), pr.Author))
			note = fmt.Sprintf("\nRegistry work skipped: @%s owns none of the packages this pull request touches, and no owner or maintainer has approved %s; images are pulled once one does (or when an owner pushes the head).\n", pr.Author, short(pr.Head.SHA))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.runOne(ctx, c, pr)
			results[i].Summary += note
		}()
	}
	wg.Wait()
	// Findings about changed content go on lines the pull request changed, where GitHub shows them inline.
	for i := range results {
		results[i].Findings = change.Anchor(pr, results[i].Findings)
		catalog.SortFindings(results[i].Findings)
	}
	return results
}

func isCostly(c Check) bool {
	costly, ok := c.(change.Costly)
	return ok && costly.Costly()
}

func (r *Runner) runOne(ctx context.Context, c Check, pr *PullRequest) (res Result) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("check panicked", "check", c.Name(), "panic", p, "stack", string(debug.Stack()))
			res = couldNotRun(c.Name(), fmt.Errorf("internal error: %v", p))
		}
		res.Check = c.Name()
		res.Duration = time.Since(start)
		catalog.SortFindings(res.Findings)
	}()
	res, err := c.Run(ctx, pr)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("timed out after %s: %w", r.timeout, err)
		}
		r.log.Warn("check could not run", "check", c.Name(), "err", err)
		return couldNotRun(c.Name(), err)
	}
	return res
}

func couldNotRun(name string, err error) Result {
	return Result{
		Check:      name,
		Conclusion: Neutral,
		Title:      "Could not run",
		Summary:    fmt.Sprintf("The %s check could not reach a verdict: %s", name, err),
		Err:        err.Error(),
	}
}

// Overall combines results: the worst conclusion wins.
func Overall(results []Result) Conclusion {
	c := Success
	for _, r := range results {
		c = Worst(c, r.Conclusion)
	}
	return c
}
