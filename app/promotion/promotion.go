package promotion

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/promote"
	"github.com/catalogbot/catalogbot/promote/pulls"
)

// Outcomes of a /promote command, as stored with the other commands.
const (
	outcomeAccepted = "accepted"
	outcomeRefused  = "refused"
)

const (
	// leaseFor bounds one job's hold on the repository's promotion lease (a killed job's lease ends by itself).
	leaseFor = 15 * time.Minute
	// jobTimeout bounds one promotion job.
	jobTimeout = 12 * time.Minute
	// maxPolicyBytes bounds the policy file read.
	maxPolicyBytes = 1 << 20
	// replyMarker starts the App's answer to a /promote comment; trackingMarker its tracking comment.
	replyMarker    = "<!-- catalogbot:promote-reply "
	trackingMarker = "<!-- catalogbot:promotion "
)

// Deps is everything the promotion works with, given once by the composition root.
type Deps struct {
	GitHub   ghapp.Clients
	Cache    *ghapp.GitCache
	Teams    func(*github.Client) policy.TeamResolver
	Records  store.PromotionStore
	Commands store.CommandStore
	Leases   store.LeaseStore
	Limits   catalog.Limits
	Log      *slog.Logger
}

// Promoter works the promotion jobs.
type Promoter struct {
	d   Deps
	log *slog.Logger
	now func() time.Time
}

// New builds the promotion from its dependencies.
func New(d Deps) *Promoter {
	log := d.Log
	if log == nil {
		log = slog.Default()
	}
	return &Promoter{d: d, log: log, now: time.Now}
}

// Worker is the promotion job's worker.
func (p *Promoter) Worker() river.Worker[jobs.PromoteArgs] { return &worker{p: p} }

type worker struct {
	river.WorkerDefaults[jobs.PromoteArgs]
	p *Promoter
}

func (w *worker) Timeout(*river.Job[jobs.PromoteArgs]) time.Duration { return jobTimeout }

func (w *worker) Work(ctx context.Context, job *river.Job[jobs.PromoteArgs]) error {
	return ghapp.WaitOutRateLimit(w.p.Handle(ctx, job.Args, fmt.Sprintf("promote-%d", job.ID)))
}

// job is one promotion job's state.
type job struct {
	a      jobs.PromoteArgs
	gh     *github.Client
	branch string
	log    *slog.Logger
}

// Handle works one promotion job; holder names it in the repository's promotion lease.
func (p *Promoter) Handle(ctx context.Context, a jobs.PromoteArgs, holder string) error {
	log := p.log.With("repo", a.Owner+"/"+a.Repo, "delivery", a.DeliveryID)
	if a.CommentID != 0 {
		log = log.With("number", a.Number, "comment", a.CommentID, "commenter", a.Commenter)
		done, err := p.d.Commands.CommandHandled(ctx, a.Owner, a.Repo, a.Number, a.CommentID, jobs.CmdPromote)
		if err != nil || done {
			return err
		}
	} else if !jobs.IsSHA(a.After) {
		log.Warn("promotion job ignored: neither a comment nor a push")
		return nil
	}
	gh, err := p.d.GitHub.Installation(ctx, a.InstallationID)
	if err != nil {
		return fmt.Errorf("installation %d client: %w", a.InstallationID, err)
	}
	j := &job{a: a, gh: gh, log: log, branch: a.DefaultBranch}
	if a.CommentID != 0 {
		if _, _, problem := jobs.ParsePromote(a.Command); problem != "" {
			return p.finishCommand(ctx, j, outcomeRefused, fmt.Sprintf("@%s, `/%s` was not applied: %s. Write %s.", a.Commenter, ghapp.MarkdownCode(a.Command), problem, jobs.PromoteUsage))
		}
	}
	// One promotion of a repository at a time: two triggers at once would both find a package without a pull
	// request. The lease is the merge lease's table under a key no repository name can be.
	key := a.Repo + "#promote"
	ok, err := p.d.Leases.TakeLease(ctx, a.Owner, key, holder, p.now(), p.now().Add(leaseFor))
	if err != nil {
		return err
	}
	if !ok {
		log.Info("another promotion of the repository is under way; waiting")
		return river.JobSnooze(5 * time.Second)
	}
	defer func() {
		if err := p.d.Leases.DropLease(context.WithoutCancel(ctx), a.Owner, key, holder); err != nil {
			log.Warn("dropping the promotion lease", "err", err)
		}
	}()
	if j.branch == "" {
		rp, _, err := gh.Repositories.Get(ctx, a.Owner, a.Repo)
		if err != nil {
			return fmt.Errorf("reading %s/%s: %w", a.Owner, a.Repo, err)
		}
		j.branch = rp.GetDefaultBranch()
		if a.CloneURL == "" {
			j.a.CloneURL = rp.GetCloneURL()
		}
	}
	if j.a.CloneURL == "" {
		rp, _, err := gh.Repositories.Get(ctx, a.Owner, a.Repo)
		if err != nil {
			return fmt.Errorf("reading %s/%s: %w", a.Owner, a.Repo, err)
		}
		j.a.CloneURL = rp.GetCloneURL()
	}
	ref := "refs/heads/" + j.branch
	repo, err := ghapp.FetchRepo(ctx, p.d.GitHub, p.d.Cache, a.InstallationID, a.Owner, a.Repo, j.a.CloneURL, []string{ref})
	if err != nil {
		return err
	}
	defer repo.Close()
	head, err := repo.Resolve(ref)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", ref, err)
	}
	tree, err := repo.TreeFS(ctx, head, gitfs.Limits{})
	if err != nil {
		return err
	}
	pol, err := readPolicy(tree)
	if err != nil {
		if a.CommentID != 0 {
			return p.finishCommand(ctx, j, outcomeRefused, fmt.Sprintf("@%s, `/promote` was not applied: the default branch's %s does not parse (%v), so catalogbot cannot tell who may promote.", a.Commenter, policy.FileName, err))
		}
		log.Warn("no promotion: the default branch's policy does not parse", "err", err)
		return nil
	}
	var targets []promote.Target
	if a.CommentID != 0 {
		teams := p.d.Teams(gh)
		d, err := pol.IsMaintainer(ctx, a.Commenter, teams)
		if d == policy.Unresolved {
			return fmt.Errorf("telling whether %s is a maintainer: %w", a.Commenter, err)
		}
		if d != policy.Yes {
			return p.finishCommand(ctx, j, outcomeRefused, fmt.Sprintf("@%s, `/promote` was not applied: only %s%s may use it.", a.Commenter, jobs.RulePromote, maintainerList(pol)))
		}
		from, to, _ := jobs.ParsePromote(a.Command)
		targets = []promote.Target{{From: from, To: to}}
	} else {
		targets, err = p.pushTargets(ctx, repo, tree, pol, a.Before)
		if err != nil {
			return err
		}
		if len(targets) == 0 {
			return nil
		}
	}
	baseTree, err := repo.TreeHash(ctx, head)
	if err != nil {
		return err
	}
	var summaries []string
	for _, t := range targets {
		s, err := p.promote(ctx, j, tree, pol, t, head.String(), baseTree.String())
		if err != nil {
			return err
		}
		summaries = append(summaries, s)
	}
	if a.CommentID != 0 {
		return p.finishCommand(ctx, j, outcomeAccepted, fmt.Sprintf("@%s, promoting:\n\n%s", a.Commenter, strings.Join(summaries, "\n\n")))
	}
	return nil
}

// pushTargets are the promotions a push asks for: the catalog roots catalogs/<to> the policy now declares by
// path and did not before, that are empty on the head, each from the newest catalog below it.
func (p *Promoter) pushTargets(ctx context.Context, repo *gitfs.Repo, tree *gitfs.FS, pol *policy.Policy, before string) ([]promote.Target, error) {
	if !jobs.IsSHA(before) {
		return nil, nil // a branch created: nothing was declared before it, and nothing is asked
	}
	b, err := repo.Resolve(before)
	if err != nil {
		p.log.Info("no promotion: the push's previous head is not in the repository", "before", before)
		return nil, nil
	}
	old, err := repo.TreeFS(ctx, b, gitfs.Limits{})
	if err != nil {
		return nil, err
	}
	if k1, ok1 := old.ContentKey(policy.FileName); ok1 {
		if k2, ok2 := tree.ContentKey(policy.FileName); ok2 && k1 == k2 {
			return nil, nil // the policy did not change
		}
	}
	oldPol, err := readPolicy(old)
	if err != nil {
		oldPol = nil // a broken policy before declared nothing
	}
	var out []promote.Target
	for _, t := range promote.NewTargets(tree, oldPol, pol) {
		if !emptyRoot(tree, promote.CatalogsDir+"/"+t.To) {
			p.log.Info("no promotion: the new catalog root is not empty", "to", t.To)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// emptyRoot: the directory is absent or holds no package directory.
func emptyRoot(fsys fs.FS, dir string) bool {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return true
	}
	for _, e := range entries {
		if e.IsDir() {
			return false
		}
	}
	return true
}

// promote computes the promotion t on the head and brings every package to its row's end: a pull request
// opened (once), or the reason it has none. It writes the tracking comment and returns its text.
func (p *Promoter) promote(ctx context.Context, j *job, tree *gitfs.FS, pol *policy.Policy, t promote.Target, head, baseTree string) (string, error) {
	a := j.a
	log := j.log.With("from", t.From, "to", t.To)
	plan, err := promote.Compute(ctx, tree, pol, promote.Options{From: t.From, To: t.To, Limits: p.d.Limits})
	if err != nil {
		// Nothing to promote from, or names that are no catalog: said in the tracking comment, not retried.
		text := fmt.Sprintf("**Promotion %s → %s**: nothing promoted: %v.", t.From, t.To, err)
		return text, p.track(ctx, j, t, text)
	}
	opener := &pulls.Opener{GH: j.gh, Owner: a.Owner, Repo: a.Repo, DefaultBranch: j.branch, Records: recorder{p.d.Records}}
	for i := range plan.Packages {
		pk := &plan.Packages[i]
		row, known, err := p.d.Records.Promotion(ctx, a.Owner, a.Repo, t.From, t.To, pk.Name)
		if err != nil {
			return "", err
		}
		if known && row.Pull != 0 {
			// A pull request was opened for it once: never a second one; its state is refreshed.
			if err := p.refresh(ctx, j, &row); err != nil {
				return "", err
			}
			continue
		}
		row = store.Promotion{From: t.From, To: t.To, Package: pk.Name, Strategy: string(pk.Strategy), Updated: p.now()}
		switch {
		case pk.Err != nil:
			row.State, row.Reason = store.PromotionFailed, pk.Reason
		case pk.Outcome == promote.Skipped:
			row.State, row.Reason = store.PromotionSkipped, pk.Reason
		case pk.Outcome == promote.Unchanged:
			row.State, row.Reason = store.PromotionUnchanged, pk.Reason
		default:
			// Its pull request: the row says committed before anything is made, so a job that stops anywhere
			// after finds the branch (and its pull request, open or not) instead of making another.
			if !known {
				row.State = store.PromotionCommitted
				if err := p.d.Records.SavePromotion(ctx, a.Owner, a.Repo, row); err != nil {
					return "", err
				}
			} else if n, state, err := p.existingPull(ctx, j, promote.Branch(t.To, pk.Name)); err != nil {
				return "", err
			} else if n != 0 && state != "open" {
				row.Pull, row.State = n, state
				if err := p.d.Records.SavePromotion(ctx, a.Owner, a.Repo, row); err != nil {
					return "", err
				}
				continue
			}
			sub := *plan
			sub.Packages = []promote.Package{*pk}
			res, err := opener.Open(ctx, &sub, head, baseTree)
			if err != nil {
				return "", fmt.Errorf("promotion of %s: %w", pk.Name, err)
			}
			row.State, row.Pull = store.PromotionOpen, res[0].Number
			log.Info("promotion pull request", "package", pk.Name, "strategy", pk.Strategy, "pr", res[0].Number, "action", res[0].Action)
		}
		row.Updated = p.now()
		if err := p.d.Records.SavePromotion(ctx, a.Owner, a.Repo, row); err != nil {
			return "", err
		}
	}
	rows, err := p.d.Records.Promotions(ctx, a.Owner, a.Repo, t.From, t.To)
	if err != nil {
		return "", err
	}
	text := summary(plan, rows)
	return text, p.track(ctx, j, t, text)
}

// existingPull is the newest pull request from the App's branch, in any state (0 when none).
func (p *Promoter) existingPull(ctx context.Context, j *job, branch string) (int, string, error) {
	prs, _, err := j.gh.PullRequests.List(ctx, j.a.Owner, j.a.Repo, &github.PullRequestListOptions{State: "all", Head: j.a.Owner + ":" + branch})
	if err != nil {
		return 0, "", fmt.Errorf("listing the pull requests of %s: %w", branch, err)
	}
	if len(prs) == 0 {
		return 0, "", nil
	}
	pr := prs[0]
	for _, q := range prs[1:] {
		if q.GetNumber() > pr.GetNumber() {
			pr = q
		}
	}
	return pr.GetNumber(), pullState(pr), nil
}

func pullState(pr *github.PullRequest) string {
	switch {
	case pr.GetMerged() || pr.MergedAt != nil:
		return store.PromotionMerged
	case pr.GetState() == "closed":
		return store.PromotionClosed
	}
	return store.PromotionOpen
}

// refresh reads the state of a row's pull request (merged, closed) into the row.
func (p *Promoter) refresh(ctx context.Context, j *job, row *store.Promotion) error {
	if row.State == store.PromotionMerged || row.State == store.PromotionClosed {
		return nil
	}
	pr, _, err := j.gh.PullRequests.Get(ctx, j.a.Owner, j.a.Repo, row.Pull)
	if err != nil {
		if ghapp.IsStatus(err, http.StatusNotFound) {
			return nil
		}
		return fmt.Errorf("reading #%d: %w", row.Pull, err)
	}
	if s := pullState(pr); s != row.State {
		row.State, row.Updated = s, p.now()
		return p.d.Records.SavePromotion(ctx, j.a.Owner, j.a.Repo, *row)
	}
	return nil
}

// summary is the tracking comment's text: each package's strategy and what became of it.
func summary(plan *promote.Plan, rows []store.Promotion) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Promotion %s → %s** (`%s` → `%s`): one pull request per package from `%s<package>`, as each package's `fbc.version_promotion_strategy` says — `always`: derived from the default branch, merged by catalogbot once its checks pass; `review-needed`: labelled `%s`, merged once an owner of the package approves (`/approve`); `never`: skipped.\n\n",
		plan.From, plan.To, plan.SourceRoot, plan.TargetRoot, promote.BranchPrefix+plan.To+"/", promote.Label(promote.ReviewNeeded))
	if plan.TargetNote != "" {
		fmt.Fprintf(&b, "Note: %s\n\n", plan.TargetNote)
	}
	counts := map[string]int{}
	b.WriteString("| package | strategy | state |\n|---|---|---|\n")
	sort.Slice(rows, func(i, k int) bool { return rows[i].Package < rows[k].Package })
	for _, r := range rows {
		counts[r.State]++
		what := r.State
		switch r.State {
		case store.PromotionOpen, store.PromotionMerged, store.PromotionClosed:
			what = fmt.Sprintf("#%d %s", r.Pull, r.State)
		case store.PromotionSkipped, store.PromotionUnchanged, store.PromotionFailed:
			what = r.State + ": " + ghapp.MarkdownInline(r.Reason)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", ghapp.MarkdownCode(r.Package), r.Strategy, what)
	}
	var parts []string
	for _, s := range []string{store.PromotionOpen, store.PromotionMerged, store.PromotionClosed, store.PromotionSkipped, store.PromotionUnchanged, store.PromotionFailed, store.PromotionCommitted} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	fmt.Fprintf(&b, "\n%d packages: %s.\n", len(rows), strings.Join(parts, ", "))
	return b.String()
}

// track writes the promotion's tracking comment, or edits it: on the issue or pull request of the /promote
// comment, else on a tracking issue the App opens for the promotion (a push).
func (p *Promoter) track(ctx context.Context, j *job, t promote.Target, text string) error {
	a := j.a
	body := fmt.Sprintf("%s%s %s -->\n%s", trackingMarker, t.From, t.To, text)
	issue, comment, ok, err := p.d.Records.PromotionTracking(ctx, a.Owner, a.Repo, t.From, t.To)
	if err != nil {
		return err
	}
	if ok && comment != 0 {
		_, _, err := j.gh.Issues.EditComment(ctx, a.Owner, a.Repo, comment, &github.IssueComment{Body: github.String(body)})
		if err == nil || !ghapp.IsStatus(err, http.StatusNotFound) {
			return err
		}
		ok = false // deleted: written again
	}
	if a.CommentID != 0 {
		return nil // the command's reply carries it; the tracking comment is where the first promotion wrote it
	}
	if !ok || issue == 0 {
		is, _, err := j.gh.Issues.Create(ctx, a.Owner, a.Repo, &github.IssueRequest{
			Title: github.String(fmt.Sprintf("Catalog promotion %s → %s", t.From, t.To)),
			Body: github.String(fmt.Sprintf("catalogbot promotes every package's catalog from `%s/%s` to `%s/%s`, because the default branch's %s now declares `%s/%s` (%s). "+
				"The comment below lists each package and its pull request, and is kept up to date. A maintainer may comment `/promote %s %s` here to run the promotion again: it opens what is missing and nothing twice.",
				promote.CatalogsDir, t.From, promote.CatalogsDir, t.To, policy.FileName, promote.CatalogsDir, t.To, jobs.Short(a.After), t.From, t.To)),
		})
		if err != nil {
			return fmt.Errorf("opening the tracking issue: %w", err)
		}
		issue = is.GetNumber()
		if err := p.d.Records.SetPromotionTracking(ctx, a.Owner, a.Repo, t.From, t.To, issue, 0); err != nil {
			return err
		}
	}
	c, _, err := j.gh.Issues.CreateComment(ctx, a.Owner, a.Repo, issue, &github.IssueComment{Body: github.String(body)})
	if err != nil {
		return fmt.Errorf("writing the tracking comment on #%d: %w", issue, err)
	}
	return p.d.Records.SetPromotionTracking(ctx, a.Owner, a.Repo, t.From, t.To, issue, c.GetID())
}

// finishCommand answers a /promote comment (a 👍 and the summary when accepted, a reply saying why when
// refused) and records it handled.
func (p *Promoter) finishCommand(ctx context.Context, j *job, outcome, text string) error {
	a := j.a
	if outcome == outcomeAccepted {
		if _, _, err := j.gh.Reactions.CreateIssueCommentReaction(ctx, a.Owner, a.Repo, a.CommentID, "+1"); err != nil {
			return fmt.Errorf("reacting to comment %d: %w", a.CommentID, err)
		}
	}
	if err := p.reply(ctx, j, text); err != nil {
		return err
	}
	j.log.Info("command handled", "command", jobs.CmdPromote, "outcome", outcome)
	return p.d.Commands.MarkCommand(ctx, a.Owner, a.Repo, a.Number, a.CommentID, jobs.CmdPromote, outcome, p.now())
}

// reply answers the comment once: a retried job finds its reply by its marker.
func (p *Promoter) reply(ctx context.Context, j *job, text string) error {
	a := j.a
	marker := fmt.Sprintf("%s%d -->", replyMarker, a.CommentID)
	if err := ghapp.CommentOnce(ctx, j.gh, a.Owner, a.Repo, a.Number, a.CommentedAt, marker, text); err != nil {
		return fmt.Errorf("replying to comment %d: %w", a.CommentID, err)
	}
	return nil
}

func maintainerList(pol *policy.Policy) string {
	var names []string
	for _, m := range pol.Maintainers {
		names = append(names, m.String())
	}
	if len(names) == 0 {
		return " (the policy names none)"
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// readPolicy reads the policy of a tree (the default policy when it has none), bounded.
func readPolicy(fsys fs.FS) (*policy.Policy, error) {
	f, err := fsys.Open(policy.FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return policy.Default(), nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > maxPolicyBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", policy.FileName, info.Size(), maxPolicyBytes)
	}
	data, err := fs.ReadFile(fsys, policy.FileName)
	if err != nil {
		return nil, err
	}
	return policy.Parse(policy.FileName, data)
}

// recorder keeps promote/pulls' commit records in the store.
type recorder struct{ s store.PromotionStore }

func (r recorder) RecordCommit(ctx context.Context, rec pulls.Record) error {
	return r.s.RecordPromotionCommit(ctx, rec.Owner, rec.Repo, store.PromotionCommit{SHA: rec.SHA, From: rec.From, To: rec.To, Package: rec.Package,
		Strategy: string(rec.Strategy), Base: rec.Base, Tree: rec.Tree, Files: rec.Files})
}

func (r recorder) Commit(ctx context.Context, owner, repo, sha string) (pulls.Record, bool, error) {
	c, ok, err := r.s.PromotionCommit(ctx, owner, repo, sha)
	if err != nil || !ok {
		return pulls.Record{}, false, err
	}
	return pulls.Record{Owner: owner, Repo: repo, SHA: c.SHA, From: c.From, To: c.To, Package: c.Package, Strategy: promote.Strategy(c.Strategy),
		Base: c.Base, Tree: c.Tree, Files: c.Files}, true, nil
}
