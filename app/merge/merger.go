package merge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// StatusMarker starts the one comment that says why a pull request is
// not merged automatically.
const StatusMarker = "<!-- catalogbot:merge-status -->"

// Merger merges pull requests that passed, exactly as checked, and records
// each merge in the audit log. It is the server's review handler.
type Merger struct {
	gh    ghapp.Clients
	teams func(*github.Client) policy.TeamResolver
	names func() []string
	q     *store.Queue
	store store.MergeStore
	cmds  store.CommandStore
	log   *slog.Logger
	now   func() time.Time
	// ownAppID, when set, counts only this App's check runs as ours.
	ownAppID int64
	// mergeRetries bounds the retries of a 405; retryDelay is the first
	// wait, doubled each time.
	mergeRetries int
	retryDelay   time.Duration
	// lease serialises the merges of a repository; cache and limits are the git cache and parse limits
	// the merge result is judged with (no cache: no judgement, the base must not have moved).
	lease  store.LeaseStore
	cache  *ghapp.GitCache
	limits catalog.Limits
	stats  mergeStats
	// required keeps the branches' required checks briefly across evaluations.
	required *requiredCache
}

// mergeStats count the merge work, for the benchmarks and the logs.
type mergeStats struct {
	evaluations, judgements, rechecks, merges, leaseWaits, baseRechecks atomic.Int64
}

// NewMerger builds the merge evaluation on the open database q. appID, when set, counts only this App's
// check runs as ours; cache and limits are what the merge result is judged with (no cache: no judgement,
// the base must not have moved).
func NewMerger(q *store.Queue, gh ghapp.Clients, teams func(*github.Client) policy.TeamResolver, names func() []string, log *slog.Logger,
	appID int64, cache *ghapp.GitCache, limits catalog.Limits) *Merger {
	return &Merger{gh: gh, teams: teams, names: names, log: log, now: time.Now, mergeRetries: 3, retryDelay: 10 * time.Second,
		ownAppID: appID, cache: cache, limits: limits, required: newRequiredCache(),
		q: q, store: q.Merges(), cmds: q.Commands(), lease: q.Leases()}
}

// Worker is the merge job's worker.
func (m *Merger) Worker() *MergeWorker { return &MergeWorker{m: m} }

// approvals are each person's latest stand on the pull request: reviews and /approve comments together.
// Both the ownership check and the merge decision read approvals from here.
func (m *Merger) Approvals(ctx context.Context, gh *github.Client, owner, repo string, number int) ([]Review, error) {
	reviews, err := LatestReviews(ctx, gh, owner, repo, number)
	if err != nil {
		return nil, err
	}
	cmds, err := m.cmds.CommandApprovals(ctx, owner, repo, number)
	if err != nil {
		return nil, fmt.Errorf("reading the /approve comments of #%d: %w", number, err)
	}
	return withCommandApprovals(reviews, cmds), nil
}

// HandleReview re-evaluates the reviewed pull request.
func (m *Merger) HandleReview(ctx context.Context, j jobs.ReviewArgs) error {
	return m.enqueue(ctx, jobs.MergeArgs{InstallationID: j.InstallationID, Owner: j.Owner, Repo: j.Repo, Number: j.Number,
		Reason: "pull_request_review." + j.Action})
}

func (m *Merger) enqueue(ctx context.Context, a jobs.MergeArgs) error {
	return m.q.Insert(ctx, []river.InsertManyParams{{Args: a}})
}

// recordChecked stores what a check of a pull request saw; the pipeline
// calls it once the change set is known, before the check runs complete.
func (m *Merger) RecordChecked(ctx context.Context, a jobs.CheckPRArgs, baseRef string, repo *gitfs.Repo, in *checks.PullRequest) error {
	base, err := repo.Resolve(baseRef)
	if err != nil {
		return fmt.Errorf("base %s: %w", baseRef, err)
	}
	raw := ""
	if in.Policy != nil && in.Policy.File != "" {
		data, err := repo.ReadFile(ctx, base, policy.FileName, 1<<20)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		raw = string(data)
	}
	var touched []string
	var extra map[string][]string
	derived := ""
	if d := checks.Derived(ctx, in); d != nil {
		derived = d.String()
	}
	var removals []string
	if in.Changes != nil {
		if o := in.Changes.BundleOwners(); len(o) > 0 {
			extra = o
		}
		removals = boundedRemovals(checks.AllowedRemovals(in))
		for _, cc := range in.Changes.Catalogs {
			touched = append(touched, cc.TouchedPackages()...)
		}
		for _, b := range in.Changes.Bundles {
			if b.Package != "" && !slices.Contains(touched, b.Package) {
				touched = append(touched, b.Package)
			}
		}
	}
	add, err := reviewersToAdd(ctx, repo, base, in.Policy, touched)
	if err != nil {
		return err
	}
	// The check job verified this head was the pull request's as it started.
	if err := m.cmds.SawHead(ctx, jobs.HeadSeen{Owner: a.Owner, Repo: a.Repo, Number: a.Number, HeadSHA: a.HeadSHA}, m.now()); err != nil {
		return fmt.Errorf("recording the head: %w", err)
	}
	return m.store.SaveChecked(ctx, store.CheckedPR{Owner: a.Owner, Repo: a.Repo, Number: a.Number, HeadSHA: a.HeadSHA,
		BaseRef: baseRef, BaseSHA: base.String(), Touched: touched, ExtraOwners: extra, Derived: derived, AddReviewers: add, Removals: removals, Policy: raw, CheckedAt: m.now()})
}

// maxRecordedRemovals bounds the removals a check records for the audit log.
const maxRecordedRemovals = 100

// boundedRemovals keeps the first maxRecordedRemovals, saying how many more there were.
func boundedRemovals(rs []string) []string {
	if len(rs) <= maxRecordedRemovals {
		return rs
	}
	return append(rs[:maxRecordedRemovals:maxRecordedRemovals], fmt.Sprintf("and %d more removals the policy allows", len(rs)-maxRecordedRemovals))
}

// checksCompleted asks for a merge evaluation once our check runs completed.
func (m *Merger) ChecksCompleted(ctx context.Context, a jobs.CheckPRArgs) error {
	return m.enqueue(ctx, jobs.MergeArgs{InstallationID: a.InstallationID, Owner: a.Owner, Repo: a.Repo, Number: a.Number,
		CloneURL: a.CloneURL, Reason: "checks completed", After: a.HeadSHA + "/" + a.Rerun})
}

func parseStoredPolicy(raw string) (*policy.Policy, error) {
	if raw == "" {
		return policy.Default(), nil
	}
	p, err := policy.Parse(policy.FileName, []byte(raw))
	if err != nil {
		return nil, fmt.Errorf("the stored base policy: %w", err)
	}
	return p, nil
}

// Evaluate gathers the facts, decides, and merges or says why not. It is level-triggered: safe to run any
// number of times. The decision is made twice: first on the pull request alone, without the lease (most
// evaluations end there); then, when it would merge, under the repository's merge lease, on facts read
// again and with the merge result judged on the base head of that moment (see merge_result.go).
func (m *Merger) Evaluate(ctx context.Context, a jobs.MergeArgs) error {
	full := a.Owner + "/" + a.Repo
	log := m.log.With("repo", full, "pr", a.Number, "reason", a.Reason)
	m.stats.evaluations.Add(1)
	gh, err := m.gh.Installation(ctx, a.InstallationID)
	if err != nil {
		return fmt.Errorf("installation %d client: %w", a.InstallationID, err)
	}
	delay := m.retryDelay
	fenced := 0
	for attempt := 0; ; attempt++ {
		// The hold generation is read before the labels: a /hold whose label the facts miss has moved it
		// on by the time the merge would start, and the claim below fails.
		gen, err := m.cmds.HoldGen(ctx, a.Owner, a.Repo, a.Number)
		if err != nil {
			return fmt.Errorf("reading the hold fence: %w", err)
		}
		if err := m.waitLeaseFree(ctx, a.Owner, a.Repo); err != nil {
			return err // a snooze while another merge of the repository is under way
		}
		g, err := m.gatherFacts(ctx, gh, a, nil)
		if err != nil {
			return err
		}
		if g.Merged || !g.Open {
			return m.setStatusComment(ctx, gh, a, nil)
		}
		if !g.HasChecked {
			log.Info("not evaluated: no completed check of this pull request yet")
			return nil
		}
		if attempt == 0 && g.Checked.HeadSHA == g.HeadSHA {
			if err := m.requestReviewers(ctx, gh, a, g); err != nil {
				// Asking for reviews never holds the merge decision up; the next evaluation asks again.
				log.Warn("requesting the reviews ci.yaml asks for", "err", err)
			}
		}
		if !g.Policy.Automerge.Enabled {
			// Nothing to explain on every pull request of a repository
			// that does not merge automatically.
			return m.setStatusComment(ctx, gh, a, nil)
		}
		if d := DecideMerge(ctx, g.MergeFacts, m.names(), m.teams(gh)); !d.Merge {
			log.Info("not merging", "blocking", strings.Join(d.Blocking, "; "))
			return m.setStatusComment(ctx, gh, a, append(d.Blocking, g.Notes...))
		}
		release, err := m.acquireLease(ctx, a.Owner, a.Repo)
		if err != nil {
			return err // a snooze when another merge of the repository is under way
		}
		next, err := m.mergeUnderLease(ctx, gh, a, g, gen, attempt, log)
		release()
		switch {
		case err != nil:
			return err
		case next == retryFenced:
			// A /hold came since the facts were read: read them again (its label is on by now).
			if fenced++; fenced > 3 {
				return fmt.Errorf("holds keep coming on %s#%d; the merge evaluation will run again", full, a.Number)
			}
			log.Info("a hold came while evaluating; evaluating again")
			attempt--
			continue
		case next == retryRefused:
			log.Info("GitHub refused the merge; retrying", "in", delay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			delay *= 2
			continue
		}
		return nil
	}
}

// What the evaluation does after a merge attempt under the lease.
type mergeNext int

const (
	mergeDone    mergeNext = iota
	retryFenced            // a hold came: evaluate again at once
	retryRefused           // GitHub refused (405): evaluate again after a pause
)

// mergeUnderLease reads the facts again with the repository's merge lease held, judges the merge result on
// the base head, and merges when everything holds.
func (m *Merger) mergeUnderLease(ctx context.Context, gh *github.Client, a jobs.MergeArgs, earlier *gatheredFacts, gen int64, attempt int, log *slog.Logger) (mergeNext, error) {
	full := a.Owner + "/" + a.Repo
	g, err := m.gatherFacts(ctx, gh, a, earlier)
	if err != nil {
		return mergeDone, err
	}
	if g.Merged || !g.Open {
		return mergeDone, m.setStatusComment(ctx, gh, a, nil)
	}
	if d := DecideMerge(ctx, g.MergeFacts, m.names(), m.teams(gh)); !d.Merge || !g.HasChecked {
		log.Info("not merging", "blocking", strings.Join(d.Blocking, "; "))
		return mergeDone, m.setStatusComment(ctx, gh, a, append(d.Blocking, g.Notes...))
	}
	m.stats.judgements.Add(1)
	res, err := m.judge(ctx, a, g)
	if err != nil {
		return mergeDone, err
	}
	g.BaseHeadSHA, g.CheckedBaseSHA, g.Result = g.baseHead, g.Checked.BaseSHA, &res
	if res.Recheck != "" && res.RecheckUnderWay != "" {
		log.Info("the base moved in a way that matters; a check under way judges it", "why", res.Recheck, "under_way", res.RecheckUnderWay)
	} else if res.Recheck != "" {
		m.stats.rechecks.Add(1)
		log.Info("the base moved in a way that matters: checking again", "why", res.Recheck)
		if err := m.recheck(ctx, a, g, "base moved", jobs.BaseRecheckKey(g.baseHead)); err != nil {
			return mergeDone, err
		}
	}
	d := DecideMerge(ctx, g.MergeFacts, m.names(), m.teams(gh))
	if !d.Merge {
		log.Info("not merging", "blocking", strings.Join(d.Blocking, "; "))
		return mergeDone, m.setStatusComment(ctx, gh, a, append(d.Blocking, g.Notes...))
	}
	for _, n := range g.Notes {
		log.Warn("merging without an optional read", "note", n, "sha", g.CheckedSHA)
	}
	claimed, err := m.cmds.ClaimMerge(ctx, a.Owner, a.Repo, a.Number, gen, m.now())
	if err != nil {
		return mergeDone, fmt.Errorf("claiming the merge: %w", err)
	}
	if !claimed {
		return retryFenced, nil
	}
	method := string(g.Policy.Automerge.Method)
	res2, err := m.mergeClaimed(ctx, gh, a, g.CheckedSHA, method)
	switch {
	case err == nil && res2.GetMerged():
		m.stats.merges.Add(1)
		log.Info("merged", "sha", g.CheckedSHA, "merge_commit", res2.GetSHA(), "base", jobs.Short(g.baseHead), "authorized_by", d.AuthorizedBy)
		if err := m.store.AddAudit(ctx, store.AuditEntry{Repo: full, Number: a.Number, MergedSHA: g.CheckedSHA,
			MergeCommit: res2.GetSHA(), Author: g.Author, AuthorizedBy: d.AuthorizedBy, ReviewIDs: d.ApprovalIDs, ApprovalComments: d.ApprovalComments, Approvers: d.Approvers,
			PolicySHA: g.Checked.BaseSHA, CheckRunIDs: g.CheckRunIDs, Method: method, MergedAt: m.now()}); err != nil {
			// The merge happened: a retry would find the PR merged and
			// not write the row, so say so loudly instead.
			log.Error("merged but the audit row was not written", "sha", g.CheckedSHA, "err", err)
		}
		return mergeDone, m.setStatusComment(ctx, gh, a, nil)
	case ghapp.IsStatus(err, http.StatusConflict):
		// The head moved after our check: check the new head; never merge it unseen.
		log.Info("head moved before the merge", "checked", g.CheckedSHA)
		cur, _, gerr := gh.PullRequests.Get(ctx, a.Owner, a.Repo, a.Number)
		if gerr != nil {
			return mergeDone, gerr
		}
		g.PR = cur
		if err := m.recheck(ctx, a, g, "head moved before merge", ""); err != nil {
			return mergeDone, err
		}
		return mergeDone, m.setStatusComment(ctx, gh, a, []string{fmt.Sprintf(
			"the head moved to %s after the check of %s; the new head is being checked", jobs.Short(cur.GetHead().GetSHA()), jobs.Short(g.CheckedSHA))})
	case ghapp.IsStatus(err, http.StatusMethodNotAllowed):
		msg := githubMessage(err)
		// Another evaluation (of a later event) may have merged it a moment ago.
		if cur, _, gerr := gh.PullRequests.Get(ctx, a.Owner, a.Repo, a.Number); gerr == nil && cur.GetMerged() {
			log.Info("already merged", "merge_commit", cur.GetMergeCommitSHA())
			return mergeDone, m.setStatusComment(ctx, gh, a, nil)
		}
		if attempt >= m.mergeRetries {
			log.Warn("GitHub refused the merge", "attempts", attempt+1, "message", msg)
			return mergeDone, m.setStatusComment(ctx, gh, a, append([]string{fmt.Sprintf(
				"GitHub refused the merge %d times: %s (branch rules, conflicts or a base that changed)", attempt+1, msg)}, g.Notes...))
		}
		log.Info("GitHub refused the merge", "message", msg)
		return retryRefused, nil
	case err != nil:
		return mergeDone, fmt.Errorf("merging %s#%d: %w", full, a.Number, err)
	default:
		return mergeDone, fmt.Errorf("merging %s#%d: GitHub answered without merging: %s", full, a.Number, res2.GetMessage())
	}
}

// judge judges the merge result of the checked head on the base head the facts read (see judgeResult),
// from the git cache. Without a git cache (tests of the decision alone), the base must not have moved.
func (m *Merger) judge(ctx context.Context, a jobs.MergeArgs, g *gatheredFacts) (ResultJudgement, error) {
	if m.cache == nil {
		res := ResultJudgement{BaseSHA: g.baseHead}
		if g.baseHead != g.Checked.BaseSHA {
			res.Recheck = fmt.Sprintf("the base branch moved to %s since the check", jobs.Short(g.baseHead))
		}
		return res, nil
	}
	clone := a.CloneURL
	if clone == "" {
		clone = g.PR.GetBase().GetRepo().GetCloneURL()
	}
	baseRef := "refs/heads/" + g.PR.GetBase().GetRef()
	repo, err := ghapp.FetchRepo(ctx, m.gh, m.cache, a.InstallationID, a.Owner, a.Repo, clone, []string{baseRef, fmt.Sprintf("refs/pull/%d/head", a.Number)})
	if err != nil {
		return ResultJudgement{}, fmt.Errorf("fetching %s to judge the merge: %w", baseRef, err)
	}
	defer repo.Close()
	if cur, err := repo.Resolve(baseRef); err != nil || cur.String() != g.baseHead {
		// The base moved between GitHub's answer and the fetch (a push by someone else): judge again shortly.
		return ResultJudgement{}, river.JobSnooze(2 * time.Second)
	}
	res, err := m.judgeResult(ctx, a, repo, g.Policy, g.Checked.BaseSHA, g.baseHead, g.CheckedSHA, g.Touched, m.limits)
	if err != nil || res.Recheck == "" || m.q == nil {
		return res, err
	}
	// The push's job (or an earlier evaluation) may have asked for the re-check already.
	active, err := m.q.ActiveChecks(ctx, a.Owner, a.Repo)
	if err != nil {
		return res, err
	}
	res.RecheckUnderWay, err = recheckUnderWay(ctx, repo, g.Policy, g.Touched, active, a.Number, strings.ToLower(g.PR.GetHead().GetSHA()), plumbing.NewHash(g.baseHead))
	return res, err
}

// mergeClaimed sends the merge of sha, bounded so that it ends well within mergeLease, and releases the
// claim the evaluation took on the pull request.
func (m *Merger) mergeClaimed(ctx context.Context, gh *github.Client, a jobs.MergeArgs, sha, method string) (*github.PullRequestMergeResult, error) {
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := m.cmds.ReleaseMerge(rctx, a.Owner, a.Repo, a.Number); err != nil {
			m.log.Warn("releasing the merge claim (a /hold waits for its lease to end)", "repo", a.Owner+"/"+a.Repo, "pr", a.Number, "err", err)
		}
	}()
	mctx, cancel := context.WithTimeout(ctx, mergeLease/2)
	defer cancel()
	res, _, err := gh.PullRequests.Merge(mctx, a.Owner, a.Repo, a.Number, "", &github.PullRequestOptions{SHA: sha, MergeMethod: method})
	return res, err
}

// recheck enqueues a check of the pull request's current head at once. key, when set, makes it a check of
// its own (a base head, say): a check of the same head still running (the one whose completion asked for
// this evaluation) would otherwise swallow it, and the new base would wait for the resync.
func (m *Merger) recheck(ctx context.Context, a jobs.MergeArgs, g *gatheredFacts, reason, key string) error {
	clone := a.CloneURL
	if clone == "" {
		clone = g.PR.GetBase().GetRepo().GetCloneURL()
	}
	return m.q.Insert(ctx, []river.InsertManyParams{{Args: jobs.CheckPRArgs{InstallationID: a.InstallationID,
		Owner: a.Owner, Repo: a.Repo, Number: a.Number, HeadSHA: g.PR.GetHead().GetSHA(), CloneURL: clone,
		Rerun: key, Reason: "merge: " + reason}}})
}

func githubMessage(err error) string {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Message != "" {
		return er.Message
	}
	return err.Error()
}

// setStatusComment makes the one status comment say blocking, or deletes
// it when nothing blocks (merged, closed or resolved).
func (m *Merger) setStatusComment(ctx context.Context, gh *github.Client, a jobs.MergeArgs, blocking []string) error {
	existing, err := m.findStatusComment(ctx, gh, a)
	if err != nil {
		return err
	}
	if len(blocking) == 0 {
		if existing == nil {
			return nil
		}
		_, err := gh.Issues.DeleteComment(ctx, a.Owner, a.Repo, existing.GetID())
		return err
	}
	var b strings.Builder
	b.WriteString(StatusMarker + "\n**catalogbot will not merge this pull request yet:**\n\n")
	for _, r := range blocking {
		b.WriteString("- " + r + "\n")
	}
	b.WriteString("\nThis comment is updated as things change and removed once nothing blocks the merge.\n")
	body := b.String()
	var written *github.IssueComment
	if existing == nil {
		written, _, err = gh.Issues.CreateComment(ctx, a.Owner, a.Repo, a.Number, &github.IssueComment{Body: github.String(body)})
	} else if existing.GetBody() != body {
		written, _, err = gh.Issues.EditComment(ctx, a.Owner, a.Repo, existing.GetID(), &github.IssueComment{Body: github.String(body)})
	}
	if err != nil || written == nil {
		return err
	}
	// The blocking reasons were decided on facts read before this write, without the merge lease: an
	// evaluation of the same pull request may have merged it (and removed the comment) meanwhile. Whichever
	// writes last sees the merge here and takes its comment back, so a merged or closed pull request never
	// keeps a "will not merge" comment.
	pr, _, err := gh.PullRequests.Get(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return fmt.Errorf("reading #%d after its status comment: %w", a.Number, err)
	}
	if pr.GetMerged() || pr.GetState() == "closed" {
		_, err := gh.Issues.DeleteComment(ctx, a.Owner, a.Repo, written.GetID())
		return err
	}
	return nil
}

func (m *Merger) findStatusComment(ctx context.Context, gh *github.Client, a jobs.MergeArgs) (*github.IssueComment, error) {
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; page < maxListPages; page++ {
		cs, resp, err := gh.Issues.ListComments(ctx, a.Owner, a.Repo, a.Number, opt)
		if err != nil {
			return nil, fmt.Errorf("listing comments of #%d: %w", a.Number, err)
		}
		for _, c := range cs {
			if strings.HasPrefix(c.GetBody(), StatusMarker) {
				return c, nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return nil, nil
}

type MergeWorker struct {
	river.WorkerDefaults[jobs.MergeArgs]
	m *Merger
}

func (w *MergeWorker) Work(ctx context.Context, job *river.Job[jobs.MergeArgs]) error {
	if job.Args.Number == 0 && job.Args.Base != "" {
		return ghapp.WaitOutRateLimit(w.m.baseMoved(ctx, job.Args))
	}
	if job.Args.Number == 0 {
		return ghapp.WaitOutRateLimit(w.m.evaluateHead(ctx, job.Args))
	}
	return ghapp.WaitOutRateLimit(w.m.Evaluate(ctx, job.Args))
}

// maxPullsScanned bounds the open pull requests read to find those of one head commit.
const maxPullsScanned = 1000

// evaluateHead evaluates every open pull request whose head is a.HeadSHA.
func (m *Merger) evaluateHead(ctx context.Context, a jobs.MergeArgs) error {
	if !jobs.IsSHA(a.HeadSHA) {
		return nil
	}
	gh, err := m.gh.Installation(ctx, a.InstallationID)
	if err != nil {
		return fmt.Errorf("installation %d client: %w", a.InstallationID, err)
	}
	var numbers []int
	if _, err := ghapp.EachOpenPullRequest(ctx, gh, a.Owner, a.Repo, "", maxPullsScanned, func(pr *github.PullRequest) {
		if strings.EqualFold(pr.GetHead().GetSHA(), a.HeadSHA) {
			numbers = append(numbers, pr.GetNumber())
		}
	}); err != nil {
		return err
	}
	var errs []error
	for _, n := range numbers {
		b := a
		b.Number, b.HeadSHA = n, ""
		if err := m.Evaluate(ctx, b); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
