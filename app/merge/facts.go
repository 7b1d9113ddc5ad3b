package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/google/go-github/v62/github"
)

// maxListPages bounds every paginated read of the merge evaluation.
const maxListPages = 20

// gatheredFacts are the merge facts plus what the merge and its audit row need.
type gatheredFacts struct {
	MergeFacts
	PR         *github.PullRequest
	Checked    store.CheckedPR
	HasChecked bool
	// baseHead is the base branch's head as the facts were read.
	baseHead string
	// CheckRunIDs are our check runs on the head, by name.
	CheckRunIDs map[string]int64
	// Notes say which optional reads GitHub refused (a permission the installation lacks), for the status
	// comment: the evaluation goes on without them rather than retrying a 403 for ever.
	Notes []string
	// required are the base branch's required checks as read (with requiredNote), for the decision under the
	// lease to reuse: GitHub's merge enforces them anyway, and they do not change between the two reads.
	required     []string
	requiredNote string
	readRequired bool
}

// gatherFacts reads the pull request's current state from GitHub and what
// the last check saw from the database; earlier, when set, is the read just
// before, whose required checks it reuses.
func (m *Merger) gatherFacts(ctx context.Context, gh *github.Client, a jobs.MergeArgs, earlier *gatheredFacts) (*gatheredFacts, error) {
	pr, _, err := gh.PullRequests.Get(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return nil, fmt.Errorf("reading pull request %s/%s#%d: %w", a.Owner, a.Repo, a.Number, err)
	}
	g := &gatheredFacts{PR: pr, CheckRunIDs: map[string]int64{}}
	f := &g.MergeFacts
	f.Open = pr.GetState() == "open"
	f.Draft = pr.GetDraft()
	f.Merged = pr.GetMerged()
	f.HeadSHA = pr.GetHead().GetSHA()
	f.Author = pr.GetUser().GetLogin()
	for _, l := range pr.Labels {
		f.Labels = append(f.Labels, l.GetName())
	}
	if !f.Open || f.Merged {
		return g, nil
	}

	c, ok, err := m.store.LoadChecked(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return nil, fmt.Errorf("reading the last check of %s/%s#%d: %w", a.Owner, a.Repo, a.Number, err)
	}
	g.Checked, g.HasChecked = c, ok
	if ok {
		f.CheckedSHA = c.HeadSHA
		f.ExtraOwners = c.ExtraOwners
		f.Derived = c.Derived
		f.Removals = c.Removals
		for _, p := range c.Touched {
			if p != "" { // files of no package: the ownership check judged them
				f.Touched = append(f.Touched, p)
			}
		}
		pol, err := parseStoredPolicy(c.Policy)
		if err != nil {
			return nil, err
		}
		f.Policy = pol
	}
	baseRef := pr.GetBase().GetRef()
	if earlier != nil {
		// Under the lease: the base head the merge result is judged on. The first decision does not judge the
		// result and does not need it.
		if br, _, err := gh.Repositories.GetBranch(ctx, a.Owner, a.Repo, baseRef, 1); err == nil {
			g.baseHead = br.GetCommit().GetSHA()
		} else {
			return nil, fmt.Errorf("reading base branch %s: %w", baseRef, err)
		}
	}

	runs, err := checkRunsOn(ctx, gh, a.Owner, a.Repo, f.HeadSHA)
	if err != nil {
		return nil, err
	}
	f.OurChecks = map[string]string{}
	ours := map[string]bool{}
	for _, n := range m.names() {
		ours[n] = true
	}
	for name, r := range runs {
		if ours[name] && r.GetApp().GetID() == m.appID(r) {
			f.OurChecks[name] = conclusionOf(r)
			g.CheckRunIDs[name] = r.GetID()
		}
	}

	var required []string
	var note string
	if earlier != nil && earlier.readRequired {
		required, note = earlier.required, earlier.requiredNote
	} else if required, note, err = m.required.get(ctx, gh, a.Owner, a.Repo, baseRef, m.now()); err != nil {
		return nil, err
	}
	g.required, g.requiredNote, g.readRequired = required, note, true
	if note != "" {
		g.Notes = append(g.Notes, note)
	}
	// Commit statuses count only for a required check that is no check run: most evaluations need none.
	var statuses map[string]string
	if slices.ContainsFunc(required, func(name string) bool { _, ok := runs[name]; return !ok }) {
		statuses, err = statusesOn(ctx, gh, a.Owner, a.Repo, f.HeadSHA)
		switch {
		case ghapp.IsStatus(err, http.StatusForbidden):
			g.Notes = append(g.Notes, "cannot read the commit statuses of the head: grant the App Commit statuses: read (required statuses count as missing until then)")
		case err != nil:
			return nil, err
		}
	}
	for _, name := range required {
		state := "missing"
		if r, ok := runs[name]; ok {
			state = runState(r)
		} else if s, ok := statuses[name]; ok {
			state = s
		}
		f.Required = append(f.Required, RequiredCheck{Name: name, State: state})
	}

	f.Reviews, err = m.Approvals(ctx, gh, a.Owner, a.Repo, a.Number)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// appID accepts every App's runs when the Merger does not know its own id.
func (m *Merger) appID(r *github.CheckRun) int64 {
	if m.ownAppID == 0 {
		return r.GetApp().GetID()
	}
	return m.ownAppID
}

// checkRunsOn lists the check runs of sha, the latest per name.
func checkRunsOn(ctx context.Context, gh *github.Client, owner, repo, sha string) (map[string]*github.CheckRun, error) {
	out := map[string]*github.CheckRun{}
	latest := github.ListCheckRunsOptions{Filter: github.String("latest")}
	err := ghapp.ListRuns(ctx, gh, owner, repo, sha, latest, maxListPages, func(r *github.CheckRun) {
		if old, ok := out[r.GetName()]; !ok || r.GetID() > old.GetID() {
			out[r.GetName()] = r
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// conclusionOf is a completed run's conclusion, "" while it runs.
func conclusionOf(r *github.CheckRun) string {
	if r.GetStatus() != "completed" {
		return ""
	}
	return r.GetConclusion()
}

// runState maps a check run to a required check's state, as GitHub judges
// it: success, neutral and skipped pass.
func runState(r *github.CheckRun) string {
	if r.GetStatus() != "completed" {
		return "pending"
	}
	switch r.GetConclusion() {
	case "success", "neutral", "skipped":
		return "success"
	}
	return "failure"
}

// statusesOn returns the latest commit status of each context on sha.
func statusesOn(ctx context.Context, gh *github.Client, owner, repo, sha string) (map[string]string, error) {
	out := map[string]string{}
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxListPages; page++ {
		cs, resp, err := gh.Repositories.GetCombinedStatus(ctx, owner, repo, sha, opt)
		if err != nil {
			return nil, fmt.Errorf("reading the statuses of %s: %w", jobs.Short(sha), err)
		}
		for _, s := range cs.Statuses {
			st := s.GetState()
			if st == "error" {
				st = "failure"
			}
			out[s.GetContext()] = st
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

// requiredChecks lists the status checks that branch protection and the
// rulesets require on branch, sorted and without duplicates. No protection
// (404) means none. When the installation may not read branch protection
// (403: the App lacks Administration: read), note says so and the rulesets
// alone count: GitHub's merge still enforces the protection.
func requiredChecks(ctx context.Context, gh *github.Client, owner, repo, branch string) (_ []string, note string, _ error) {
	set := map[string]bool{}
	rsc, _, err := gh.Repositories.GetRequiredStatusChecks(ctx, owner, repo, branch)
	switch {
	case errors.Is(err, github.ErrBranchNotProtected) || ghapp.IsStatus(err, http.StatusNotFound):
	case ghapp.IsStatus(err, http.StatusForbidden):
		note = fmt.Sprintf("cannot read the branch protection of %s: grant the App Administration: read (its required checks are not considered here; GitHub's merge still enforces them)", branch)
	case err != nil:
		return nil, "", fmt.Errorf("reading the required status checks of %s: %w", branch, err)
	default:
		if rsc.Contexts != nil {
			for _, c := range *rsc.Contexts {
				set[c] = true
			}
		}
		if rsc.Checks != nil {
			for _, c := range *rsc.Checks {
				set[c.Context] = true
			}
		}
	}
	rules, _, err := gh.Repositories.GetRulesForBranch(ctx, owner, repo, branch)
	switch {
	case ghapp.IsStatus(err, http.StatusNotFound):
	case err != nil:
		return nil, "", fmt.Errorf("reading the rulesets of %s: %w", branch, err)
	}
	for _, r := range rules {
		if r.Type != "required_status_checks" || r.Parameters == nil {
			continue
		}
		var p github.RequiredStatusChecksRuleParameters
		if err := json.Unmarshal(*r.Parameters, &p); err != nil {
			return nil, "", fmt.Errorf("ruleset %d's required status checks: %w", r.RulesetID, err)
		}
		for _, c := range p.RequiredStatusChecks {
			set[c.Context] = true
		}
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out, note, nil
}

// LatestReviews reads every review (all pages) and keeps each reviewer's
// latest one that takes a stand (a later plain comment does not undo an
// approval), with the commit it was made on.
func LatestReviews(ctx context.Context, gh *github.Client, owner, repo string, number int) ([]Review, error) {
	latest := map[string]Review{}
	opt := &github.ListOptions{PerPage: 100}
	for page := 0; page < maxListPages; page++ {
		rs, resp, err := gh.PullRequests.ListReviews(ctx, owner, repo, number, opt)
		if err != nil {
			return nil, fmt.Errorf("listing the reviews of #%d: %w", number, err)
		}
		for _, r := range rs {
			state := strings.ToUpper(r.GetState())
			if state == "COMMENTED" || state == "PENDING" {
				continue
			}
			key := strings.ToLower(r.GetUser().GetLogin())
			if old, ok := latest[key]; !ok || r.GetID() > old.ID {
				latest[key] = Review{ID: r.GetID(), User: r.GetUser().GetLogin(), State: state, CommitID: r.GetCommitID(), At: r.GetSubmittedAt().Time}
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	out := make([]Review, 0, len(latest))
	for _, r := range latest {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// withCommandApprovals folds the /approve and /approve cancel comments into each person's latest stand:
// whichever of their latest review and their latest command came last holds. An /approve counts as an
// approving review of the head it was bound to; /approve cancel withdraws the person's approval however it
// was given (GitHub keeps a dismissed review's time, so a later /approve still counts).
func withCommandApprovals(reviews []Review, cmds []store.CommandApproval) []Review {
	if len(cmds) == 0 {
		return reviews
	}
	latest := map[string]Review{}
	var order []string
	put := func(r Review) {
		key := strings.ToLower(r.User)
		old, ok := latest[key]
		if !ok {
			order = append(order, key)
		}
		if !ok || !r.At.Before(old.At) {
			latest[key] = r
		}
	}
	for _, r := range reviews {
		put(r)
	}
	for _, c := range cmds {
		state := "APPROVED"
		if c.Action == store.ApprovalCancel {
			state = "DISMISSED"
		}
		put(Review{User: c.Login, State: state, CommitID: c.HeadSHA, At: c.At, CommentID: c.CommentID})
	}
	out := make([]Review, 0, len(order))
	for _, k := range order {
		out = append(out, latest[k])
	}
	return out
}

// requiredTTL is how long an evaluation reuses the required checks of a branch that another evaluation read:
// branch protection and rulesets rarely change, and GitHub's merge enforces them whatever was read.
const requiredTTL = 30 * time.Second

// maxRequiredCached bounds the branches whose required checks are kept.
const maxRequiredCached = 1000

// requiredCache keeps each branch's required checks for requiredTTL, so that a burst of evaluations reads
// them once (two requests) instead of once per evaluation.
type requiredCache struct {
	mu      sync.Mutex
	entries map[string]requiredEntry
	// read reads them from GitHub (requiredChecks; tests replace it).
	read func(ctx context.Context, gh *github.Client, owner, repo, branch string) ([]string, string, error)
}

type requiredEntry struct {
	required []string
	note     string
	at       time.Time
}

func newRequiredCache() *requiredCache {
	return &requiredCache{entries: map[string]requiredEntry{}, read: requiredChecks}
}

// get returns the branch's required checks, read from GitHub unless they were within requiredTTL.
func (c *requiredCache) get(ctx context.Context, gh *github.Client, owner, repo, branch string, now time.Time) ([]string, string, error) {
	key := strings.ToLower(owner+"/"+repo) + "\x00" + branch
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < requiredTTL && !now.Before(e.at) {
		return e.required, e.note, nil
	}
	required, note, err := c.read(ctx, gh, owner, repo, branch)
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxRequiredCached {
		clear(c.entries)
	}
	c.entries[key] = requiredEntry{required: required, note: note, at: now}
	return required, note, nil
}
