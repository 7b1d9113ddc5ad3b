package merge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/policy"
)

// Outcomes of a command, as stored.
const (
	outcomeAccepted = "accepted"
	outcomeRefused  = "refused"
	outcomeTooLate  = "too_late"
	outcomeClosed   = "closed"
)

// Defaults of the comment commands.
const (
	// defaultCommandClockSkew: an /approve binds to a head catalogbot saw at least this long before the
	// comment's time (GitHub's clock, in whole seconds), and a head seen after that time minus this margin
	// makes it refuse: a push around the comment never gets an approval its author may not have seen.
	defaultCommandClockSkew = 2 * time.Second
	// mergeLease bounds how long a /hold waits for a merge that was already under way to end.
	mergeLease = 2 * time.Minute
	// checkWait is how long an /approve waits for the check of a head that was just pushed (its touched
	// packages decide who may approve).
	checkWait = 5 * time.Minute
	// ReplyMarker starts catalogbot's reply to a command, with the comment id and the command: a
	// retried job finds its reply instead of writing a second one.
	ReplyMarker = "<!-- catalogbot:command-reply "
)

// Commands carries out comment commands (the jobs.CommandArgs jobs).
type Commands struct {
	gh     ghapp.Clients
	teams  func(*github.Client) policy.TeamResolver
	q      *store.Queue
	merges store.MergeStore
	store  store.CommandStore
	log    *slog.Logger
	now    func() time.Time
	// skew is the clock margin of /approve in nanoseconds (atomic: tests shorten it while workers run).
	skew atomic.Int64
	// retestLimit bounds the /retest of a pull request in an hour (atomic, as skew).
	retestLimit atomic.Int64
}

// Worker is the comment command job's worker.
func (c *Commands) Worker() *CommandWorker { return &CommandWorker{c: c} }

// NewCommands builds the comment command handler on the open database q.
func NewCommands(q *store.Queue, gh ghapp.Clients, teams func(*github.Client) policy.TeamResolver, log *slog.Logger) *Commands {
	c := &Commands{gh: gh, teams: teams, log: log, now: time.Now, q: q, merges: q.Merges(), store: q.Commands()}
	c.skew.Store(int64(defaultCommandClockSkew))
	c.retestLimit.Store(jobs.DefaultRetestPerHour)
	return c
}

// SetClockSkew sets the clock margin of /approve (tests shorten it while workers run).
func (c *Commands) SetClockSkew(d time.Duration) { c.skew.Store(int64(d)) }

// SetRetestLimit sets how many /retest a pull request may have in an hour.
func (c *Commands) SetRetestLimit(n int) { c.retestLimit.Store(int64(n)) }

// commandContext is what every command of one comment looks at.
type commandContext struct {
	a      jobs.CommandArgs
	gh     *github.Client
	pr     *github.PullRequest
	head   string
	author string
	// checked is the last check of the pull request (ok false: none yet), pol its base policy.
	checked store.CheckedPR
	ok      bool
	pol     *policy.Policy
	teams   policy.TeamResolver
	log     *slog.Logger
}

// Handle carries out the commands of one comment, each once: a command already handled (a retried job, a
// redelivery, the resync) is skipped. jobCreated is when the job was enqueued.
func (c *Commands) Handle(ctx context.Context, a jobs.CommandArgs, jobCreated time.Time) error {
	log := c.log.With("repo", a.Owner+"/"+a.Repo, "pr", a.Number, "comment", a.CommentID, "commenter", a.Commenter,
		"delivery", a.DeliveryID, "recovered", a.Recovered)
	var todo []string
	for _, cmd := range a.Commands {
		if jobs.NormalCommand(cmd) != cmd {
			continue // not a command (a job written by hand)
		}
		done, err := c.store.CommandHandled(ctx, a.Owner, a.Repo, a.Number, a.CommentID, cmd)
		if err != nil {
			return err
		}
		if !done {
			todo = append(todo, cmd)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	gh, err := c.gh.Installation(ctx, a.InstallationID)
	if err != nil {
		return fmt.Errorf("installation %d client: %w", a.InstallationID, err)
	}
	pr, _, err := gh.PullRequests.Get(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return fmt.Errorf("reading pull request %s/%s#%d: %w", a.Owner, a.Repo, a.Number, err)
	}
	readAt := c.now()
	cc := &commandContext{a: a, gh: gh, pr: pr, head: strings.ToLower(pr.GetHead().GetSHA()), author: pr.GetUser().GetLogin(),
		teams: c.teams(gh), log: log}
	if pr.GetState() != "open" || pr.GetMerged() {
		// Written while it was open (a merge came first): nothing to do, and the commenter is told.
		why := "closed"
		if pr.GetMerged() {
			why = fmt.Sprintf("merged (%s)", jobs.Short(pr.GetMergeCommitSHA()))
		}
		for _, cmd := range todo {
			if err := c.reply(ctx, cc, cmd, fmt.Sprintf("@%s, `/%s` came too late: this pull request is %s.", a.Commenter, cmd, why)); err != nil {
				return err
			}
			if err := c.store.MarkCommand(ctx, a.Owner, a.Repo, a.Number, a.CommentID, cmd, outcomeClosed, c.now()); err != nil {
				return err
			}
		}
		return nil
	}
	cc.checked, cc.ok, err = c.merges.LoadChecked(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return fmt.Errorf("reading the last check of %s/%s#%d: %w", a.Owner, a.Repo, a.Number, err)
	}
	// An /approve is judged on the packages the current head touches: wait a little for its check.
	needsHeadCheck := slices.Contains(todo, jobs.CmdApprove) || slices.Contains(todo, jobs.CmdApproveCancel)
	if needsHeadCheck && (!cc.ok || !strings.EqualFold(cc.checked.HeadSHA, cc.head)) && c.now().Sub(jobCreated) < checkWait {
		log.Info("waiting for the check of the head before judging the commands", "head", jobs.Short(cc.head))
		return river.JobSnooze(5 * time.Second)
	}
	cc.pol = policy.Default()
	if cc.ok {
		if cc.pol, err = parseStoredPolicy(cc.checked.Policy); err != nil {
			return err
		}
	}
	var errs []error
	for _, cmd := range todo {
		outcome, err := c.run(ctx, cc, cmd)
		if err != nil {
			errs = append(errs, fmt.Errorf("/%s: %w", cmd, err))
			continue
		}
		log.Info("command handled", "command", cmd, "outcome", outcome, "head", jobs.Short(cc.head))
		if err := c.store.MarkCommand(ctx, a.Owner, a.Repo, a.Number, a.CommentID, cmd, outcome, c.now()); err != nil {
			errs = append(errs, err)
		}
	}
	// The head was the pull request's when it was read (recorded after the commands were judged, which look
	// at what was seen up to the comment).
	if err := c.store.SawHead(ctx, jobs.HeadSeen{Owner: a.Owner, Repo: a.Repo, Number: a.Number, HeadSHA: cc.head}, readAt); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// run carries out one command and acknowledges it: a reaction when accepted, a reply otherwise.
func (c *Commands) run(ctx context.Context, cc *commandContext, cmd string) (string, error) {
	var refusal string
	var err error
	switch cmd {
	case jobs.CmdHelp:
		if err := c.reply(ctx, cc, cmd, fmt.Sprintf("@%s, catalogbot reads these commands in pull request comments:\n\n%s",
			cc.a.Commenter, jobs.CommandsHelp(int(c.retestLimit.Load())))); err != nil {
			return "", err
		}
	case jobs.CmdApprove, jobs.CmdApproveCancel:
		refusal, err = c.approve(ctx, cc, cmd == jobs.CmdApproveCancel)
	case jobs.CmdHold, jobs.CmdHoldCancel:
		var tooLate string
		refusal, tooLate, err = c.hold(ctx, cc, cmd == jobs.CmdHoldCancel)
		if err == nil && tooLate != "" {
			return outcomeTooLate, c.reply(ctx, cc, cmd, tooLate)
		}
	case jobs.CmdRetest:
		refusal, err = c.retest(ctx, cc)
	case jobs.CmdLGTM, jobs.CmdLGTMCancel:
		// Prow's habit: one line saying what catalogbot reads instead.
		instead := "`/approve` by an owner of the touched packages or a maintainer (or their approving review)"
		if cmd == jobs.CmdLGTMCancel {
			instead = "`/approve cancel`"
		}
		refusal = fmt.Sprintf("@%s, catalogbot does not read `/%s`: use %s; `/help` lists the commands.", cc.a.Commenter, cmd, instead)
	}
	if err != nil {
		return "", err
	}
	if refusal != "" {
		return outcomeRefused, c.reply(ctx, cc, cmd, refusal)
	}
	return outcomeAccepted, c.react(ctx, cc, "+1")
}

// mayApprove: a maintainer, or an owner of a package the pull request touches.
func (c *Commands) mayApprove(ctx context.Context, cc *commandContext, login string) bool {
	if vouchesAsMaintainer(ctx, cc.pol, login, cc.teams) {
		return true
	}
	for _, pkg := range cc.checked.Touched {
		if pkg == "" {
			continue
		}
		if d, _ := cc.pol.IsOwner(ctx, pkg, login, cc.teams); d == policy.Yes || extraOwner(cc.checked.ExtraOwners, pkg, login) {
			return true
		}
	}
	return false
}

// whoMayApprove names the owners of the touched packages and the maintainers, for a refusal.
func whoMayApprove(cc *commandContext) string {
	var parts []string
	pkgs := append([]string(nil), cc.checked.Touched...)
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		if pkg == "" {
			continue
		}
		var names []string
		if owners, ok := cc.pol.Owners(pkg); ok {
			for _, o := range owners {
				names = append(names, o.String())
			}
		}
		names = append(names, cc.checked.ExtraOwners[pkg]...)
		if len(names) == 0 {
			names = []string{"no owner"}
		}
		parts = append(parts, fmt.Sprintf("`%s`: %s", pkg, strings.Join(names, ", ")))
	}
	var maint []string
	for _, m := range cc.pol.Maintainers {
		maint = append(maint, m.String())
	}
	s := "the owners of the packages this pull request touches"
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	s += " and the maintainers"
	if len(maint) > 0 {
		s += " (" + strings.Join(maint, ", ") + ")"
	}
	return s
}

// approve records an /approve of the head at the time of the comment (or its cancel) and asks for the
// ownership check again, which the merge evaluation follows.
func (c *Commands) approve(ctx context.Context, cc *commandContext, cancel bool) (refusal string, err error) {
	a := cc.a
	verb := "/approve"
	if cancel {
		verb = "/approve cancel"
	}
	if !cc.ok {
		return fmt.Sprintf("@%s, `%s` was not applied: catalogbot has not checked this pull request yet, so it does not know which packages it touches. Comment again once its checks ran.", a.Commenter, verb), nil
	}
	if !cancel && policy.SameLogin(a.Commenter, cc.author) {
		return fmt.Sprintf("@%s, `/approve` was not applied: the author's own approval never counts. It may be given by %s.", a.Commenter, whoMayApprove(cc)), nil
	}
	if !c.mayApprove(ctx, cc, a.Commenter) {
		return fmt.Sprintf("@%s, `%s` was not applied: only %s may use it.", a.Commenter, verb, whoMayApprove(cc)), nil
	}
	action := store.ApprovalApprove
	if cancel {
		action = store.ApprovalCancel
	} else if ok, why, err := c.headAtComment(ctx, cc); err != nil {
		return "", err
	} else if !ok {
		return fmt.Sprintf("@%s, `/approve` was not applied: %s. An approval counts for the commit it was given on only: look at %s and comment `/approve` again.",
			a.Commenter, why, jobs.Short(cc.head)), nil
	}
	if err := c.store.AddCommandApproval(ctx, store.CommandApproval{Repo: a.Owner + "/" + a.Repo, Number: a.Number, CommentID: a.CommentID,
		Login: a.Commenter, HeadSHA: cc.head, Action: action, At: a.CommentedAt, Recorded: c.now()}); err != nil {
		return "", fmt.Errorf("recording the approval: %w", err)
	}
	// Ownership is judged again with the approval (the other checks' work comes from the parse cache);
	// its completion asks for the merge evaluation.
	return "", c.q.Insert(ctx, []river.InsertManyParams{{Args: jobs.CheckPRArgs{InstallationID: a.InstallationID, Owner: a.Owner,
		Repo: a.Repo, Number: a.Number, HeadSHA: cc.head, CloneURL: c.cloneURL(cc), DeliveryID: a.DeliveryID,
		Rerun: fmt.Sprintf("comment:%d:%s", a.CommentID, action), Reason: "issue_comment./" + strings.ReplaceAll(verb, "/", "")}}})
}

// headAtComment tells whether the pull request's head now was already its head when the comment was
// written (see boundHead), from the head log.
func (c *Commands) headAtComment(ctx context.Context, cc *commandContext) (bool, string, error) {
	log, err := c.store.HeadLog(ctx, cc.a.Owner, cc.a.Repo, cc.a.Number)
	if err != nil {
		return false, "", err
	}
	ok, why := boundHead(log, cc.head, cc.a.CommentedAt.Add(-time.Duration(c.skew.Load())))
	return ok, why, nil
}

// boundHead: head was the pull request's head at time at when the newest head seen up to at is head and
// no other head was seen since; why says otherwise which commit moved in.
func boundHead(log []store.HeadAt, head string, at time.Time) (ok bool, why string) {
	var before string
	for _, h := range log {
		if !h.At.After(at) {
			before = h.SHA
			continue
		}
		if !strings.EqualFold(h.SHA, head) {
			return false, fmt.Sprintf("the head moved to %s around or after the comment", jobs.Short(h.SHA))
		}
	}
	switch {
	case before == "":
		return false, fmt.Sprintf("catalogbot had not seen %s as the head of this pull request when the comment was written", jobs.Short(head))
	case !strings.EqualFold(before, head):
		return false, fmt.Sprintf("the comment was written on %s, and the head is now %s", jobs.Short(before), jobs.Short(head))
	}
	return true, ""
}

func (c *Commands) cloneURL(cc *commandContext) string {
	if cc.a.CloneURL != "" {
		return cc.a.CloneURL
	}
	return cc.pr.GetBase().GetRepo().GetCloneURL()
}

// hold puts the policy's first hold label on (or takes it off). A hold is acknowledged only once no
// merge can follow it: the label is on before the hold generation moves (a merge evaluation that read the
// labels earlier then fails to claim the pull request), and a merge that claimed it before is waited for;
// if that merge happened, the hold came too late and says so.
func (c *Commands) hold(ctx context.Context, cc *commandContext, cancel bool) (refusal, tooLate string, err error) {
	a := cc.a
	verb := "/hold"
	if cancel {
		verb = "/hold cancel"
	}
	if !policy.SameLogin(a.Commenter, cc.author) && !c.mayApprove(ctx, cc, a.Commenter) {
		if !cc.ok {
			return fmt.Sprintf("@%s, `%s` was not applied: only the author and, once catalogbot has checked the pull request, the owners of the packages it touches and the maintainers may use it.", a.Commenter, verb), "", nil
		}
		return fmt.Sprintf("@%s, `%s` was not applied: only the author (@%s), %s may use it.", a.Commenter, verb, cc.author,
			strings.Replace(whoMayApprove(cc), " and the maintainers", ", and the maintainers", 1)), "", nil
	}
	labels := cc.pol.Automerge.HoldLabels
	if len(labels) == 0 {
		return fmt.Sprintf("@%s, `%s` was not applied: the base branch's %s names no hold label (automerge.holdLabels).", a.Commenter, verb, policy.FileName), "", nil
	}
	has := map[string]string{}
	for _, l := range cc.pr.Labels {
		has[strings.ToLower(l.GetName())] = l.GetName()
	}
	if cancel {
		// Only the label /hold puts on: another hold label (do-not-merge/work-in-progress) is its setter's.
		for _, l := range labels[:1] {
			name, on := has[strings.ToLower(l)]
			if !on {
				continue
			}
			// go-github v62 puts the name into the path as it is: a hold label has a slash, escape it.
			if _, err := cc.gh.Issues.RemoveLabelForIssue(ctx, a.Owner, a.Repo, a.Number, url.PathEscape(name)); err != nil && !ghapp.IsStatus(err, http.StatusNotFound) {
				return "", "", fmt.Errorf("removing label %q: %w", name, err)
			}
		}
		return "", "", c.q.Insert(ctx, []river.InsertManyParams{{Args: jobs.MergeArgs{InstallationID: a.InstallationID, Owner: a.Owner,
			Repo: a.Repo, Number: a.Number, CloneURL: c.cloneURL(cc), Reason: "issue_comment./hold cancel"}}})
	}
	held := false
	for _, l := range labels {
		if _, on := has[strings.ToLower(l)]; on {
			held = true
		}
	}
	if !held {
		if _, _, err := cc.gh.Issues.AddLabelsToIssue(ctx, a.Owner, a.Repo, a.Number, []string{labels[0]}); err != nil {
			return "", "", fmt.Errorf("adding label %q: %w", labels[0], err)
		}
	}
	since, err := c.store.BumpHold(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return "", "", fmt.Errorf("fencing the merge: %w", err)
	}
	for !since.IsZero() && c.now().Sub(since) < mergeLease {
		// A merge claimed the pull request before the hold: wait for its end.
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", "", ctx.Err()
		case <-t.C:
		}
		if since, err = c.store.MergingSince(ctx, a.Owner, a.Repo, a.Number); err != nil {
			return "", "", err
		}
	}
	cur, _, err := cc.gh.PullRequests.Get(ctx, a.Owner, a.Repo, a.Number)
	if err != nil {
		return "", "", fmt.Errorf("reading the pull request after the hold: %w", err)
	}
	if cur.GetMerged() {
		return "", fmt.Sprintf("@%s, `/hold` came too late: catalogbot had already merged this pull request (%s).", a.Commenter, jobs.Short(cur.GetMergeCommitSHA())), nil
	}
	return "", "", nil
}

// retest runs catalogbot's checks again on the current head, as the Re-run button does.
func (c *Commands) retest(ctx context.Context, cc *commandContext) (string, error) {
	a := cc.a
	perm, _, err := cc.gh.Repositories.GetPermissionLevel(ctx, a.Owner, a.Repo, a.Commenter)
	level := perm.GetPermission()
	switch {
	case ghapp.IsStatus(err, http.StatusNotFound):
		level = "none"
	case err != nil:
		return "", fmt.Errorf("reading the permission of %s: %w", a.Commenter, err)
	}
	if level == "" || level == "none" {
		return fmt.Sprintf("@%s, `/retest` was not applied: only people with read access to the repository may use it.", a.Commenter), nil
	}
	n, err := c.store.CommandsSince(ctx, a.Owner, a.Repo, a.Number, jobs.CmdRetest, outcomeAccepted, c.now().Add(-time.Hour))
	if err != nil {
		return "", err
	}
	if limit := int(c.retestLimit.Load()); n >= limit {
		return fmt.Sprintf("@%s, `/retest` was not applied: this pull request was retested %d times in the past hour, the most catalogbot allows (%s). The Re-run button on a check run still works.",
			a.Commenter, n, fmt.Sprintf(jobs.RuleRetest, limit)), nil
	}
	return "", c.q.Insert(ctx, []river.InsertManyParams{{Args: jobs.CheckPRArgs{InstallationID: a.InstallationID, Owner: a.Owner,
		Repo: a.Repo, Number: a.Number, HeadSHA: cc.head, CloneURL: c.cloneURL(cc), DeliveryID: a.DeliveryID,
		Rerun: fmt.Sprintf("comment:%d:retest", a.CommentID), Reason: "issue_comment./retest"}}})
}

// react puts a reaction on the comment (GitHub answers 200 for one that is already there).
func (c *Commands) react(ctx context.Context, cc *commandContext, content string) error {
	if _, _, err := cc.gh.Reactions.CreateIssueCommentReaction(ctx, cc.a.Owner, cc.a.Repo, cc.a.CommentID, content); err != nil {
		return fmt.Errorf("reacting to comment %d: %w", cc.a.CommentID, err)
	}
	return nil
}

// reply answers a command in a comment of its own, once.
func (c *Commands) reply(ctx context.Context, cc *commandContext, cmd, text string) error {
	marker := fmt.Sprintf("%s%d %s -->", ReplyMarker, cc.a.CommentID, cmd)
	if err := ghapp.CommentOnce(ctx, cc.gh, cc.a.Owner, cc.a.Repo, cc.a.Number, cc.a.CommentedAt, marker, text); err != nil {
		return fmt.Errorf("replying to comment %d: %w", cc.a.CommentID, err)
	}
	return nil
}

type CommandWorker struct {
	river.WorkerDefaults[jobs.CommandArgs]
	c *Commands
}

func (w *CommandWorker) Work(ctx context.Context, job *river.Job[jobs.CommandArgs]) error {
	return ghapp.WaitOutRateLimit(w.c.Handle(ctx, job.Args, job.CreatedAt))
}
