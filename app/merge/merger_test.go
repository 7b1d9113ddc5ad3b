package merge

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/policy"
)

const mergeTestPolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
packages:
  etcd: { owners: [bob] }
automerge:
  enabled: true
  method: squash
  holdLabels: [do-not-merge/hold]
`

var ourRunNames = []string{"catalogbot/ownership", "catalogbot/validate", "catalogbot/crd-safety", "catalogbot/images"}

// mergeEnv is a Merger against the fake GitHub and a SQLite queue that is
// not started (jobs it enqueues stay waiting, to be counted).
type mergeEnv struct {
	fake    *githubfake.Fake
	m       *Merger
	q       *store.Queue
	head    string
	base    string
	beforeM func() // runs just before the merge request reaches the fake
	beforeC func() // runs just before a new comment reaches the fake
}

// hookClients hands out installation clients whose requests pass through a hook.
type hookClients struct {
	inner *ghapp.GitHub
	env   *mergeEnv
}

func (h hookClients) Installation(ctx context.Context, id int64) (*github.Client, error) {
	c, err := h.inner.Installation(ctx, id)
	if err != nil {
		return nil, err
	}
	hc := c.Client()
	hc.Transport = hookTransport{rt: hc.Transport, env: h.env}
	out := github.NewClient(hc)
	out.BaseURL = c.BaseURL
	return out, nil
}

func (h hookClients) InstallationToken(ctx context.Context, id int64) (string, error) {
	return h.inner.InstallationToken(ctx, id)
}

type hookTransport struct {
	rt  http.RoundTripper
	env *mergeEnv
}

func (t hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/merge") && t.env.beforeM != nil {
		t.env.beforeM()
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/comments") && t.env.beforeC != nil {
		t.env.beforeC()
	}
	return t.rt.RoundTrip(r)
}

// newMergeEnv opens PR 1 of acme/catalog by author on a checked head with
// our four runs successful.
func newMergeEnv(t *testing.T, author string) *mergeEnv {
	t.Helper()
	fe := newFakeEnv(t, ghapp.RetryPolicy{})
	env := &mergeEnv{fake: fe.fake, head: githubfake.MakeSHA("head 1"), base: ""}
	base, _ := fe.fake.BranchSHA(testOwner, testRepo, "main")
	env.base = base
	if _, err := fe.fake.AddPullRequest(testOwner, testRepo, githubfake.PR{Number: 1, Author: author, HeadSHA: env.head, BaseRef: "main"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range ourRunNames {
		if _, err := fe.fake.AddCheckRun(testOwner, testRepo, githubfake.CheckRun{AppID: testAppID, Name: n, HeadSHA: env.head,
			Status: "completed", Conclusion: "success"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := store.OpenQueue(ctx, store.QueueOptions{SQLitePath: filepath.Join(t.TempDir(), "catalogbot.db"), Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	m := NewMerger(q, hookClients{inner: fe.gh, env: env}, func(*github.Client) policy.TeamResolver { return nil },
		func() []string { return ourRunNames }, testLogger(t), testAppID, nil, catalog.Limits{})
	m.retryDelay = time.Millisecond
	rc := &river.Config{Workers: river.NewWorkers(), Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}}}
	if err := river.AddWorkerSafely(rc.Workers, m.Worker()); err != nil {
		t.Fatal(err)
	}
	if err := river.AddWorkerSafely(rc.Workers, river.WorkFunc(func(context.Context, *river.Job[jobs.CheckPRArgs]) error { return nil })); err != nil {
		t.Fatal(err)
	}
	if err := q.Register(rc); err != nil {
		t.Fatal(err)
	}
	if err := m.store.SaveChecked(ctx, store.CheckedPR{Owner: testOwner, Repo: testRepo, Number: 1, HeadSHA: env.head,
		BaseRef: "main", BaseSHA: base, Touched: []string{"etcd"}, Policy: mergeTestPolicy, CheckedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	env.m, env.q = m, q
	return env
}

func (e *mergeEnv) evaluate(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.m.Evaluate(ctx, jobs.MergeArgs{InstallationID: testInstID, Owner: testOwner, Repo: testRepo, Number: 1, Reason: "test"}); err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
}

func (e *mergeEnv) statusComment() string {
	for _, c := range e.fake.Comments(testOwner, testRepo, 1) {
		if strings.HasPrefix(c.Body, StatusMarker) {
			return c.Body
		}
	}
	return ""
}

func (e *mergeEnv) waitingJobs(t *testing.T) int64 {
	t.Helper()
	st, err := e.q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Depth
}

func TestMergeSucceedsAndIsAudited(t *testing.T) {
	e := newMergeEnv(t, "bob")
	e.evaluate(t)
	ms := e.fake.Merges()
	if len(ms) != 1 {
		t.Fatalf("merges = %d, want 1", len(ms))
	}
	if ms[0].RequestSHA != e.head || ms[0].Method != "squash" {
		t.Errorf("merge request sha %q method %q, want %q squash", ms[0].RequestSHA, ms[0].Method, e.head)
	}
	log, err := e.q.AuditLog(context.Background(), "ACME/catalog", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 {
		t.Fatalf("audit rows = %d, want 1", len(log))
	}
	a := log[0]
	if a.Repo != "acme/catalog" || a.Number != 1 || a.MergedSHA != e.head || a.MergeCommit != ms[0].MergeSHA ||
		a.Author != "bob" || a.AuthorizedBy != "author bob" || a.PolicySHA != e.base || len(a.CheckRunIDs) != 4 || a.Method != "squash" {
		t.Errorf("audit row = %+v", a)
	}
	if c := e.statusComment(); c != "" {
		t.Errorf("status comment left after the merge: %q", c)
	}
	// Evaluating again (a late event) changes nothing.
	e.evaluate(t)
	if got := len(e.fake.Merges()); got != 1 {
		t.Errorf("merges after a second evaluation = %d, want 1", got)
	}
	if log, _ := e.q.AuditLog(context.Background(), "", 0); len(log) != 1 {
		t.Errorf("audit rows after a second evaluation = %d, want 1", len(log))
	}
}

// An evaluation that decided "not yet" on facts read before another evaluation merged (or someone closed)
// the pull request must not leave its "will not merge" comment on it: the last writer sees the merge and
// takes the comment back (CI once saw a draft's comment outlive the merge of the ready pull request).
func TestStatusCommentWrittenAfterMergeIsTakenBack(t *testing.T) {
	e := newMergeEnv(t, "mallory") // owns nothing: the evaluation blocks and writes the comment
	e.beforeC = func() {
		e.beforeC = nil
		must(t, e.fake.ClosePullRequest(testOwner, testRepo, 1))
	}
	e.evaluate(t)
	if c := e.statusComment(); c != "" {
		t.Errorf("a closed pull request keeps the status comment written on older facts:\n%s", c)
	}
	if n := len(e.fake.Comments(testOwner, testRepo, 1)); n != 0 {
		t.Errorf("%d comments left: %+v", n, e.fake.Comments(testOwner, testRepo, 1))
	}
}

func TestMergeBlocked(t *testing.T) {
	tests := []struct {
		name   string
		author string
		setup  func(t *testing.T, e *mergeEnv)
		// resolve, when set, clears the blocker: the PR then merges and the comment goes.
		resolve func(t *testing.T, e *mergeEnv)
		want    string
	}{
		{
			name: "pushed after the check", author: "bob",
			setup: func(t *testing.T, e *mergeEnv) {
				must(t, e.fake.PushPullRequest(testOwner, testRepo, 1, githubfake.MakeSHA("head 2")))
			},
			want: "the head moved to",
		},
		{
			name: "stale approval", author: "alice",
			setup: func(t *testing.T, e *mergeEnv) {
				_, err := e.fake.AddReview(testOwner, testRepo, 1, githubfake.Review{User: "bob", State: "APPROVED", CommitID: githubfake.MakeSHA("older")})
				must(t, err)
			},
			resolve: func(t *testing.T, e *mergeEnv) {
				_, err := e.fake.AddReview(testOwner, testRepo, 1, githubfake.Review{User: "bob", State: "APPROVED", CommitID: e.head})
				must(t, err)
			},
			want: `@alice does not own package "etcd"`,
		},
		{
			name: "hold label", author: "bob",
			setup: func(t *testing.T, e *mergeEnv) {
				must(t, e.fake.AddLabel(testOwner, testRepo, 1, "do-not-merge/hold"))
			},
			resolve: func(t *testing.T, e *mergeEnv) {
				gh, err := e.m.gh.Installation(context.Background(), testInstID)
				must(t, err)
				_, _, err = gh.Issues.ReplaceLabelsForIssue(context.Background(), testOwner, testRepo, 1, []string{"lgtm"})
				must(t, err)
			},
			want: `the hold label "do-not-merge/hold" is set`,
		},
		{
			name: "required external check pending", author: "bob",
			setup: func(t *testing.T, e *mergeEnv) {
				must(t, e.fake.SetProtection(testOwner, testRepo, "main", &githubfake.Protection{RequiredContexts: []string{"ci/e2e"}}))
				must(t, e.fake.SetStatus(testOwner, testRepo, e.head, githubfake.Status{Context: "ci/e2e", State: "pending"}))
			},
			resolve: func(t *testing.T, e *mergeEnv) {
				must(t, e.fake.SetStatus(testOwner, testRepo, e.head, githubfake.Status{Context: "ci/e2e", State: "success"}))
			},
			want: `required check "ci/e2e" is pending`,
		},
		{
			name: "required ruleset check missing", author: "bob",
			setup: func(t *testing.T, e *mergeEnv) {
				must(t, e.fake.SetRulesetChecks(testOwner, testRepo, "main", []githubfake.RequiredCheck{{Context: "ci/lint"}}, false))
			},
			want: `required check "ci/lint" is missing`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMergeEnv(t, tt.author)
			tt.setup(t, e)
			e.evaluate(t)
			if got := len(e.fake.Merges()); got != 0 {
				t.Fatalf("merges = %d, want 0", got)
			}
			c := e.statusComment()
			if !strings.Contains(c, tt.want) {
				t.Errorf("status comment = %q, want it to say %q", c, tt.want)
			}
			e.evaluate(t) // edited, never repeated
			n := 0
			for _, c := range e.fake.Comments(testOwner, testRepo, 1) {
				if strings.HasPrefix(c.Body, StatusMarker) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("status comments = %d, want 1", n)
			}
			if tt.resolve == nil {
				return
			}
			tt.resolve(t, e)
			e.evaluate(t)
			if got := len(e.fake.Merges()); got != 1 {
				t.Fatalf("merges once resolved = %d, want 1", got)
			}
			if c := e.statusComment(); c != "" {
				t.Errorf("status comment left once resolved: %q", c)
			}
		})
	}
}

// TestMergeHeadMovedDuringMerge: a commit lands between the decision and the
// merge request. The request carries the checked SHA, GitHub answers 409,
// nothing is merged and the new head is queued for a check.
func TestMergeHeadMovedDuringMerge(t *testing.T) {
	e := newMergeEnv(t, "bob")
	newHead := githubfake.MakeSHA("head 2")
	var once sync.Once
	e.beforeM = func() { once.Do(func() { must(t, e.fake.PushPullRequest(testOwner, testRepo, 1, newHead)) }) }
	before := e.waitingJobs(t)
	e.evaluate(t)
	if got := len(e.fake.Merges()); got != 0 {
		t.Fatalf("merges = %d, want 0 (a commit pushed after the check must not be merged)", got)
	}
	if got := e.waitingJobs(t); got != before+1 {
		t.Errorf("waiting jobs = %d, want %d (a check of the new head)", got, before+1)
	}
	if c := e.statusComment(); !strings.Contains(c, "the head moved to "+newHead[:7]) {
		t.Errorf("status comment = %q", c)
	}
}

// TestMergeNotMergeableRetriesThenComments: GitHub keeps answering 405; the
// merge is tried a bounded number of times, then the comment names the reason.
func TestMergeNotMergeableRetriesThenComments(t *testing.T) {
	e := newMergeEnv(t, "bob")
	must(t, e.fake.SetConflicts(testOwner, testRepo, 1, true))
	e.evaluate(t)
	if got := len(e.fake.Merges()); got != 0 {
		t.Fatalf("merges = %d, want 0", got)
	}
	tries := 0
	for _, r := range e.fake.Requests() {
		if r.Method == http.MethodPut && strings.HasSuffix(r.Path, "/merge") {
			tries++
		}
	}
	if tries != e.m.mergeRetries+1 {
		t.Errorf("merge requests = %d, want %d", tries, e.m.mergeRetries+1)
	}
	if c := e.statusComment(); !strings.Contains(c, "GitHub refused the merge") || !strings.Contains(c, "not mergeable") {
		t.Errorf("status comment = %q", c)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
