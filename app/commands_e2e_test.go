package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/merge"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

// commandEnv starts the approval world (bob's pull request changes carol's package etcd; maria maintains)
// with the /approve clock margin off, so that a comment a second after a head counts.
func commandEnv(t *testing.T, backend string) *e2eEnv {
	t.Helper()
	e := startApprovalE2E(t, backend)
	e.srv.commands.SetClockSkew(0)
	return e
}

// comment writes a comment by login on pull request 1 and delivers its issue_comment event. GitHub's times
// are whole seconds: the comment is written in a later second than anything before it.
func (e *e2eEnv) comment(t *testing.T, login, body string) int64 {
	t.Helper()
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	id, err := e.fake.AddComment("acme", "catalog", 1, login, body)
	if err != nil {
		t.Fatal(err)
	}
	e.deliverComment(t, id, "created", "")
	return id
}

func (e *e2eEnv) commentEvent(t *testing.T, id int64, action, previous string) []byte {
	t.Helper()
	body, err := e.fake.IssueCommentEvent("acme", "catalog", id, action, previous)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(body, []byte(`"https://github.com/acme/catalog.git"`), []byte(`"`+e.git.URL("acme", "catalog")+`"`))
}

func (e *e2eEnv) deliverComment(t *testing.T, id int64, action, previous string) {
	t.Helper()
	e.deliverRaw(t, "issue_comment", e.commentEvent(t, id, action, previous))
}

// waitFor polls cond for up to 60 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *e2eEnv) reactions(id int64) []string {
	var out []string
	for _, r := range e.fake.Reactions("acme", "catalog", id) {
		out = append(out, r.Content)
	}
	return out
}

func (e *e2eEnv) waitReaction(t *testing.T, id int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("no 👍 on comment %d", id), func() bool { return strings.Join(e.reactions(id), ",") == "+1" })
}

// replyTo returns catalogbot's reply to the command of comment id, "" when there is none.
func (e *e2eEnv) replyTo(id int64, cmd string) string {
	marker := fmt.Sprintf("%s%d %s -->", merge.ReplyMarker, id, cmd)
	for _, c := range e.fake.Comments("acme", "catalog", 1) {
		if strings.HasPrefix(c.Body, marker) && c.User == e.fake.BotLogin() {
			return c.Body
		}
	}
	return ""
}

func (e *e2eEnv) waitReply(t *testing.T, id int64, cmd string) string {
	t.Helper()
	waitFor(t, fmt.Sprintf("no reply to /%s of comment %d", cmd, id), func() bool { return e.replyTo(id, cmd) != "" })
	return e.replyTo(id, cmd)
}

func (e *e2eEnv) labels(t *testing.T) []string {
	t.Helper()
	pr, _ := e.fake.PullRequest("acme", "catalog", 1)
	return pr.Labels
}

// pushHead commits a new head on the pull request branch and delivers the synchronize.
func (e *e2eEnv) pushHead(t *testing.T, content string) string {
	t.Helper()
	runGit(t, e.work.dir, "checkout", "-q", "pr")
	head := e.work.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": content}, "push")
	e.work.push("HEAD", "refs/pull/1/head")
	if err := e.fake.PushPullRequest("acme", "catalog", 1, head); err != nil {
		t.Fatal(err)
	}
	e.deliver(t, "pull_request", e.prEvent("synchronize", head))
	return head
}

// /approve by someone who may not approve is refused with a reply naming who may; by the author too; an
// owner's /approve of the head merges the pull request as an approving review does, and is an audit row.
// On SQLite and PostgreSQL.
func TestCommentApproveMerges(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := commandEnv(t, backend)
			e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
			e.waitOwnership(t, e.headSHA, "action_required")

			dave := e.comment(t, "dave", "/approve")
			reply := e.waitReply(t, dave, jobs.CmdApprove)
			if !strings.Contains(reply, "@dave") || !strings.Contains(reply, "carol") || !strings.Contains(reply, "maria") {
				t.Errorf("the refusal does not name who may approve:\n%s", reply)
			}
			bob := e.comment(t, "bob", "/approve")
			if reply := e.waitReply(t, bob, jobs.CmdApprove); !strings.Contains(reply, "author's own approval never counts") {
				t.Errorf("the author's /approve: reply %q", reply)
			}
			e.waitIdle(t)
			if n := len(e.fake.Merges()); n != 0 || len(e.reactions(dave))+len(e.reactions(bob)) != 0 {
				t.Fatalf("refused approvals merged (%d) or got reactions", n)
			}

			carol := e.comment(t, "carol", "LGTM, thanks!\n\n/APPROVE  \n")
			e.waitReaction(t, carol)
			run := e.waitOwnership(t, e.headSHA, "success")
			if !strings.Contains(run.Title+run.Summary, "@carol") {
				t.Errorf("the ownership run does not name carol: %s\n%s", run.Title, run.Summary)
			}
			if !strings.Contains(run.Summary, "<summary>Comment commands") || !strings.Contains(run.Summary, jobs.RuleApprove) {
				t.Errorf("the ownership run's summary does not end with the comment commands:\n%s", run.Summary)
			}
			if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 || merges[0].HeadSHA != e.headSHA {
				t.Fatalf("merges = %+v, want one of %s", merges, e.headSHA[:8])
			}
			waitFor(t, "no merge audit row", func() bool {
				m, _ := e.srv.Queue().AuditLog(context.Background(), "acme/catalog", 0)
				return len(m) > 0
			})
			merges, err := e.srv.Queue().AuditLog(context.Background(), "acme/catalog", 0)
			if err != nil || len(merges) != 1 || merges[0].AuthorizedBy != "approved by carol" || len(merges[0].ReviewIDs) != 0 ||
				len(merges[0].ApprovalComments) != 1 || merges[0].ApprovalComments[0] != carol {
				t.Errorf("merge audit = %+v, %v; want authorized by carol's comment %d", merges, err, carol)
			}
			log, err := e.srv.Queue().ApprovalLog(context.Background(), "acme/catalog", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(log) != 1 || log[0].Login != "carol" || log[0].HeadSHA != e.headSHA || log[0].CommentID != carol || log[0].Action != "approve" {
				t.Errorf("approval audit = %+v, want carol's /approve of %s by comment %d", log, e.headSHA[:8], carol)
			}
		})
	}
}

// An /approve counts for the head of its time only: after a push the new head needs a new approval; a
// comment written before a push but handled after it is refused; /approve cancel withdraws an approval.
func TestCommentApproveIsBoundToTheHead(t *testing.T) {
	e := commandEnv(t, store.BackendSQLite)
	if err := e.fake.AddLabel("acme", "catalog", 1, "do-not-merge/hold"); err != nil {
		t.Fatal(err)
	}
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")
	first := e.comment(t, "carol", "/approve")
	e.waitReaction(t, first)
	e.waitOwnership(t, e.headSHA, "success")

	newHead := e.pushHead(t, approvalHead+"# a comment\n")
	run := e.waitOwnership(t, newHead, "action_required")
	if strings.Contains(run.Title, "Approved") {
		t.Errorf("the new head counts the old /approve: %s", run.Title)
	}

	// maria writes /approve, then bob pushes before her comment is delivered: it is not applied to the
	// commit she did not see.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	late, err := e.fake.AddComment("acme", "catalog", 1, "maria", "/approve")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	third := e.pushHead(t, approvalHead+"# another comment\n")
	e.deliverComment(t, late, "created", "")
	if reply := e.waitReply(t, late, jobs.CmdApprove); !strings.Contains(reply, "comment `/approve` again") {
		t.Errorf("the late /approve: reply %q", reply)
	}
	e.waitOwnership(t, third, "action_required")

	// A fresh /approve of the third head counts; /approve cancel withdraws it.
	ok := e.comment(t, "maria", "/approve")
	e.waitReaction(t, ok)
	e.waitOwnership(t, third, "success")
	cancel := e.comment(t, "maria", "/approve cancel")
	e.waitReaction(t, cancel)
	e.waitOwnership(t, third, "action_required")
	e.waitIdle(t)
	if n := len(e.fake.Merges()); n != 0 {
		t.Errorf("merges = %d, want none (held)", n)
	}
	log, _ := e.srv.Queue().ApprovalLog(context.Background(), "", 0)
	if len(log) != 3 || log[0].Action != "cancel" || log[1].HeadSHA != third || log[2].HeadSHA != e.headSHA {
		t.Errorf("approval audit = %+v", log)
	}
}

// /hold is for the author, owners and maintainers: it puts the policy's hold label on and nothing merges
// until /hold cancel takes it off; anyone else is refused.
func TestCommentHold(t *testing.T) {
	e := commandEnv(t, store.BackendSQLite)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")

	dave := e.comment(t, "dave", "/hold")
	if reply := e.waitReply(t, dave, jobs.CmdHold); !strings.Contains(reply, "only the author (@bob)") || !strings.Contains(reply, "carol") {
		t.Errorf("dave's /hold: reply %q", reply)
	}
	hold := e.comment(t, "bob", "/hold")
	e.waitReaction(t, hold)
	if l := e.labels(t); len(l) != 1 || l[0] != "do-not-merge/hold" {
		t.Fatalf("labels = %v, want the hold label", l)
	}
	approve := e.comment(t, "carol", "/approve")
	e.waitReaction(t, approve)
	e.waitOwnership(t, e.headSHA, "success")
	e.waitIdle(t)
	if n := len(e.fake.Merges()); n != 0 {
		t.Fatalf("merged %d times while held", n)
	}
	unhold := e.comment(t, "maria", "/hold cancel")
	e.waitReaction(t, unhold)
	if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 {
		t.Fatalf("merges = %+v after /hold cancel, want one", merges)
	}
	if l := e.labels(t); len(l) != 0 {
		t.Errorf("labels = %v after /hold cancel", l)
	}
}

// /hold racing the merge of an owner's pull request: whatever the timing, a hold that was acknowledged (👍)
// is never followed by a merge; a hold that came too late says so and has no 👍.
// On SQLite at several points around the merge, on PostgreSQL at two.
func TestCommentHoldRacesMerge(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, x := range n {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	for _, c := range []struct {
		backend string
		delays  []time.Duration
	}{{store.BackendSQLite, ms(0, 100, 150, 200, 250, 300, 900)}, {store.BackendPostgres, ms(150, 250)}} {
		for _, delay := range c.delays {
			t.Run(fmt.Sprintf("%s/%v", c.backend, delay), func(t *testing.T) { holdRace(t, c.backend, delay) })
		}
	}
}

func holdRace(t *testing.T, backend string, delay time.Duration) {
	e := startE2EWith(t, backend, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": ownerPolicy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
	e.srv.commands.SetClockSkew(0)
	id, err := e.fake.AddComment("acme", "catalog", 1, "bob", "/hold")
	if err != nil {
		t.Fatal(err)
	}
	// GitHub's payload says what the pull request was when the comment was written: open.
	payload := e.commentEvent(t, id, "created", "")
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	time.Sleep(delay)
	e.deliverRaw(t, "issue_comment", payload)
	waitFor(t, "the /hold is neither acknowledged nor answered", func() bool {
		return len(e.reactions(id)) > 0 || e.replyTo(id, jobs.CmdHold) != ""
	})
	e.waitIdle(t)
	time.Sleep(500 * time.Millisecond)
	e.waitIdle(t)
	merges, acked, late := e.fake.Merges(), len(e.reactions(id)) > 0, e.replyTo(id, jobs.CmdHold)
	t.Logf("delay %v: merges %d, acknowledged %v, reply %q", delay, len(merges), acked, late)
	switch {
	case acked && len(merges) > 0:
		t.Fatalf("merged after the hold was acknowledged: %+v", merges)
	case !acked && (len(merges) != 1 || !strings.Contains(late, "too late")):
		t.Fatalf("an unacknowledged hold: merges %+v, reply %q", merges, late)
	}
}

// A /hold that arrives while a merge holds its claim waits for the merge to end before it answers.
func TestCommentHoldWaitsForMergeInFlight(t *testing.T) {
	e := commandEnv(t, store.BackendSQLite)
	ctx := context.Background()
	cs := e.srv.Queue().Commands()
	gen, err := cs.HoldGen(ctx, "acme", "catalog", 1)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := cs.ClaimMerge(ctx, "acme", "catalog", 1, gen, time.Now()); !ok || err != nil {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	id := e.comment(t, "bob", "/hold")
	time.Sleep(1500 * time.Millisecond)
	if r := e.reactions(id); len(r) != 0 {
		t.Fatalf("the hold was acknowledged while a merge was in flight: %v", r)
	}
	// The merge ends without merging: the hold is acknowledged, and a claim with the old generation fails.
	if err := cs.ReleaseMerge(ctx, "acme", "catalog", 1); err != nil {
		t.Fatal(err)
	}
	e.waitReaction(t, id)
	if ok, _ := cs.ClaimMerge(ctx, "acme", "catalog", 1, gen, time.Now()); ok {
		t.Error("a merge evaluation that read the labels before the hold claimed the pull request")
	}
}

// /retest runs the checks again on the head for anyone with read access, at most retestLimit times an
// hour; on a private repository a stranger is refused.
func TestCommentRetest(t *testing.T) {
	e := commandEnv(t, store.BackendSQLite)
	e.srv.commands.SetRetestLimit(1)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")
	e.waitIdle(t)
	ownershipRuns := func() int {
		n := 0
		for _, r := range e.fake.CheckRuns("acme", "catalog", e.headSHA) {
			if r.Name == "catalogbot/ownership" {
				n++
			}
		}
		return n
	}
	before := ownershipRuns()
	id := e.comment(t, "dave", "/retest")
	e.waitReaction(t, id)
	waitFor(t, "no new ownership run after /retest", func() bool { return ownershipRuns() > before })
	e.waitOwnership(t, e.headSHA, "action_required")
	e.waitIdle(t)

	again := e.comment(t, "dave", "/retest")
	if reply := e.waitReply(t, again, jobs.CmdRetest); !strings.Contains(reply, "1 times in the past hour") {
		t.Errorf("the second /retest: reply %q", reply)
	}
	if err := e.fake.SetPrivate("acme", "catalog", true); err != nil {
		t.Fatal(err)
	}
	stranger := e.comment(t, "eve", "/retest")
	if reply := e.waitReply(t, stranger, jobs.CmdRetest); !strings.Contains(reply, "read access") {
		t.Errorf("a stranger's /retest on a private repository: reply %q", reply)
	}
}

// /help answers with the commands and who may use them; unknown commands, edits, deletions and the App's own
// comments change nothing.
func TestCommentHelpAndIgnored(t *testing.T) {
	e := commandEnv(t, store.BackendSQLite)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")

	help := e.comment(t, "dave", "/help")
	reply := e.waitReply(t, help, jobs.CmdHelp)
	for _, want := range []string{"/approve", "/hold cancel", "/retest", jobs.RuleApprove, jobs.RuleHold} {
		if !strings.Contains(reply, want) {
			t.Errorf("the help does not say %q:\n%s", want, reply)
		}
	}
	e.waitReaction(t, help)

	unknown := e.comment(t, "carol", "/assign @maria\n```\n/approve\n```\n> /approve")
	lgtm := e.comment(t, "carol", "/lgtm")
	if reply := e.waitReply(t, lgtm, jobs.CmdLGTM); !strings.Contains(reply, "`/approve`") || strings.Count(strings.TrimSpace(reply), "\n") != 1 {
		t.Errorf("the reply to /lgtm is not one line pointing to /approve:\n%s", reply)
	}
	edited := e.comment(t, "carol", "looks fine")
	if err := e.fake.EditComment("acme", "catalog", edited, "/approve"); err != nil {
		t.Fatal(err)
	}
	e.deliverComment(t, edited, "edited", "looks fine")
	deleted := e.comment(t, "maria", "/hold")
	e.waitReaction(t, deleted)
	e.deliverComment(t, deleted, "deleted", "")
	if err := e.fake.RemoveComment("acme", "catalog", deleted); err != nil {
		t.Fatal(err)
	}
	// The App's own comment saying /approve is not a command.
	own, err := e.fake.AddComment("acme", "catalog", 1, e.fake.BotLogin(), "/approve\n/retest")
	if err != nil {
		t.Fatal(err)
	}
	e.deliverComment(t, own, "created", "")
	e.waitIdle(t)
	time.Sleep(500 * time.Millisecond)
	e.waitIdle(t)
	for _, id := range []int64{unknown, lgtm, edited, own} {
		if r := e.reactions(id); len(r) != 0 {
			t.Errorf("comment %d got reactions %v", id, r)
		}
	}
	if got := latestByName(e.fake.CheckRuns("acme", "catalog", e.headSHA))["catalogbot/ownership"]; got.Conclusion != "action_required" {
		t.Errorf("ownership = %s: an ignored /approve counted", got.Conclusion)
	}
	if l := e.labels(t); len(l) != 1 {
		t.Errorf("labels = %v: deleting the /hold comment changed the hold", l)
	}
	if log, _ := e.srv.Queue().ApprovalLog(context.Background(), "", 0); len(log) != 0 {
		t.Errorf("approvals = %+v, want none", log)
	}
}

// A comment delivery sent twice (a redelivery) is handled once; one with a bad signature is refused and
// changes nothing; a comment whose delivery was lost is found by the resync, once.
func TestCommentDeliveriesDuplicatedForgedAndLost(t *testing.T) {
	e := commandEnv(t, store.BackendSQLite)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")

	time.Sleep(1100 * time.Millisecond)
	help, err := e.fake.AddComment("acme", "catalog", 1, "dave", "/help")
	if err != nil {
		t.Fatal(err)
	}
	body := e.commentEvent(t, help, "created", "")
	for i, want := range []int{http.StatusAccepted, http.StatusOK} {
		status, err := postSigned(e.url+"/webhook", e2eSecret, "comment-delivery-1", "issue_comment", body)
		if err != nil || status != want {
			t.Fatalf("delivery %d: %d %v, want %d", i+1, status, err, want)
		}
	}
	// The same comment under another delivery id (as the resync finds it) is still handled once.
	if status, err := postSigned(e.url+"/webhook", e2eSecret, "comment-delivery-2", "issue_comment", body); err != nil || status != http.StatusAccepted {
		t.Fatalf("second delivery: %d %v", status, err)
	}
	e.waitReply(t, help, jobs.CmdHelp)

	forged, err := e.fake.AddComment("acme", "catalog", 1, "mallory", "/approve")
	if err != nil {
		t.Fatal(err)
	}
	forgedBody := bytes.ReplaceAll(e.commentEvent(t, forged, "created", ""), []byte(`"mallory"`), []byte(`"carol"`))
	if status, err := postSigned(e.url+"/webhook", "not-the-secret", "comment-forged", "issue_comment", forgedBody); err != nil || status != http.StatusUnauthorized {
		t.Fatalf("forged delivery: %d %v, want 401", status, err)
	}

	// carol's /approve never arrives; the resync finds it. A comment edited into a /hold (its delivery of
	// the edit lost too) is not a command.
	time.Sleep(1100 * time.Millisecond)
	lost, err := e.fake.AddComment("acme", "catalog", 1, "carol", "/approve")
	if err != nil {
		t.Fatal(err)
	}
	edited, err := e.fake.AddComment("acme", "catalog", 1, "bob", "fine by me")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if err := e.fake.EditComment("acme", "catalog", edited, "/hold"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := e.srv.recovery.Resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.waitIdle(t)
	}
	e.waitReaction(t, lost)
	e.waitOwnership(t, e.headSHA, "success")
	e.waitIdle(t)

	helps := 0
	for _, c := range e.fake.Comments("acme", "catalog", 1) {
		if strings.HasPrefix(c.Body, fmt.Sprintf("%s%d help", merge.ReplyMarker, help)) {
			helps++
		}
	}
	if helps != 1 {
		t.Errorf("%d replies to one /help, want 1", helps)
	}
	// The resync finds mallory's comment as GitHub holds it: mallory's, refused.
	if r, reply := e.reactions(forged), e.replyTo(forged, jobs.CmdApprove); len(r) != 0 || (reply != "" && !strings.Contains(reply, "@mallory")) {
		t.Errorf("the forged comment counted: reactions %v, reply %q", r, reply)
	}
	if r := e.reactions(edited); len(r) != 0 || len(e.labels(t)) != 0 {
		t.Errorf("the resync took an edited comment for a command: reactions %v, labels %v", r, e.labels(t))
	}
	log, _ := e.srv.Queue().ApprovalLog(context.Background(), "", 0)
	if len(log) != 1 || log[0].CommentID != lost {
		t.Errorf("approvals = %+v, want carol's recovered one only", log)
	}
	var n int64
	if n, err = e.srv.Queue().Count(context.Background(), "catalogbot_delivery"); err != nil || n < 3 {
		t.Errorf("deliveries stored = %d, %v", n, err)
	}
}

// A command counts only where GitHub shows it as text: an owner's /approve hidden in an HTML comment, <pre>,
// <details>, a quote's lazy line, a code span or a fence that a different fence does not close gets no 👍
// and merges nothing; /approve then /approve cancel in one comment leaves no approval; a plain /approve
// then merges.
func TestCommentHiddenApproveDoesNotMerge(t *testing.T) {
	e := commandEnv(t, store.BackendSQLite)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")
	var hidden []int64
	for _, body := range []string{
		"thanks <!--\n/approve\n-->",
		"<!--\n\n/approve\n\n-->",
		"<pre>\n/approve\n</pre>",
		"<details><summary>notes</summary>\n\n/approve\n\n</details>",
		"> looks fine\n/approve",
		"`see\n/approve\n`",
		"```\n~~~\n/approve\n```",
		"````\n```\n/approve\n````",
		"/approve\n/approve cancel",
	} {
		hidden = append(hidden, e.comment(t, "carol", body))
	}
	last := hidden[len(hidden)-1]
	e.waitReaction(t, last) // the cancel is accepted
	e.waitIdle(t)
	for _, id := range hidden[:len(hidden)-1] {
		if r := e.reactions(id); len(r) != 0 {
			t.Errorf("hidden command %d got reactions %v", id, r)
		}
	}
	if n := len(e.fake.Merges()); n != 0 {
		t.Fatalf("merges = %d: a hidden or cancelled /approve merged", n)
	}
	if got := latestByName(e.fake.CheckRuns("acme", "catalog", e.headSHA))["catalogbot/ownership"]; got.Conclusion != "action_required" {
		t.Errorf("ownership = %s: a hidden or cancelled /approve counted", got.Conclusion)
	}
	log, _ := e.srv.Queue().ApprovalLog(context.Background(), "", 0)
	if len(log) != 1 || log[0].Action != store.ApprovalCancel || log[0].CommentID != last {
		t.Errorf("approvals = %+v, want the cancel of comment %d only", log, last)
	}
	ok := e.comment(t, "carol", "Fine by me.\n\n/approve")
	e.waitReaction(t, ok)
	if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 {
		t.Fatalf("merges = %+v, want one after the visible /approve", merges)
	}
}
