package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/merge"
	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

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
		if n := checks.RunName(r.Check); n != "" {
			out[n] = append(out[n], r)
		}
	}
	return out, checks.UpgradeGraphs(in), nil
}

// provenance is what the App knows of the pull request from its own doing (see rebuild.UpdateProvenance).
func (p *Pipeline) provenance(ctx context.Context, repo *gitfs.Repo, a jobs.CheckPRArgs, pr *github.PullRequest, baseRef string, in *checks.PullRequest) (checks.Provenance, error) {
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
	return appProvenance{rebuild.NewUpdateProvenance(p.updates, p.promotions, p.bot, repo, a.Owner, a.Repo, pr, defaultHead, mergeBase, head)}, nil
}

// appProvenance is the App's provenance as the checks read it: its catalog updates (checks.Provenance) and
// its promotions (checks.PromotionProvenance).
type appProvenance struct{ *rebuild.UpdateProvenance }

func (p appProvenance) MadePromotion(ctx context.Context) (checks.PromotionRecord, bool, string) {
	r, ok, why := p.Promotion(ctx)
	return checks.PromotionRecord{From: r.From, To: r.To, Package: r.Package}, ok, why
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
