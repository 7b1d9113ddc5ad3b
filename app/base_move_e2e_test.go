package app

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

// baseMovePolicy: bob owns etcd and redis; no automerge, so that only the base moves the test makes move main.
const baseMovePolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
newPackages: anyone
packages:
  etcd: { owners: [bob] }
  redis: { owners: [bob] }
`

// moveMain commits files on main's head in the git server, moves main in the fake GitHub, and delivers the
// push event GitHub sends; it returns the new head.
func (e *e2eEnv) moveMain(t *testing.T, files map[string]string, msg string) string {
	t.Helper()
	before, ok := e.fake.BranchSHA("acme", "catalog", "main")
	if !ok {
		t.Fatal("main has no head in the fake")
	}
	runGit(t, e.work.dir, "checkout", "-q", "-B", "main-work", before)
	after := e.work.commit(files, msg)
	e.work.push("HEAD", "refs/heads/main")
	must(t, e.fake.SetBranch("acme", "catalog", "main", after))
	e.deliverPush(t, before, after)
	return after
}

// moveMainTo delivers the push event of main moving to after (a merge the fake made).
func (e *e2eEnv) moveMainTo(t *testing.T, after string) {
	t.Helper()
	e.deliverPush(t, e.baseSHA, after)
}

// deliverPush delivers the push event GitHub sends for main moving from before to after.
func (e *e2eEnv) deliverPush(t *testing.T, before, after string) {
	t.Helper()
	raw, err := e.fake.PushEvent("acme", "catalog", "main", before, after, "maria")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["repository"].(map[string]any)["clone_url"] = e.git.URL("acme", "catalog")
	d, err := e.fake.Deliver(context.Background(), "push", m)
	if err != nil {
		t.Fatal(err)
	}
	if d.StatusCode != http.StatusAccepted && d.StatusCode != http.StatusOK {
		t.Fatalf("push delivery answered %d (%s)", d.StatusCode, d.Status)
	}
}

// A push to the base branch re-checks the open pull requests whose touched packages it changed, and only
// those: #1 (etcd) is checked again when main changes etcd's folder, #2 (redis) keeps its check runs; a push
// that changes neither package re-checks neither; one that changes the policy re-checks both.
func TestBasePushRechecksOnlyAffectedPullRequests(t *testing.T) {
	for _, backend := range []string{store.BackendSQLite, store.BackendPostgres} {
		t.Run(backend, func(t *testing.T) {
			e := startE2EWith(t, backend, func(w *workRepo) (string, string) {
				base := w.commit(map[string]string{".catalogbot.yaml": baseMovePolicy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
				w.push("HEAD", "refs/heads/main")
				runGit(t, w.dir, "checkout", "-q", "-b", "pr")
				head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
				w.push("HEAD", "refs/pull/1/head")
				return base, head
			}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
			h1 := e.headSHA
			e.deliver(t, "pull_request", e.prEvent("opened", h1))
			h2 := e.openPR(t, 2, map[string]string{"catalogs/v4.16/redis/catalog.yaml": strings.ReplaceAll(e2eBase, "etcd", "redis")})
			e.waitRuns(t, h1, 2)
			e.waitRuns(t, h2, 2)
			e.waitIdle(t)
			sets := func(sha string) int { return len(e.fake.CheckRuns("acme", "catalog", sha)) }
			runs1, runs2 := sets(h1), sets(h2)

			// main changes etcd's folder: #1 is checked again, #2 is not.
			e.moveMain(t, map[string]string{"catalogs/v4.16/etcd/notes.yaml": "---\nschema: olm.deprecations\npackage: etcd\nentries: []\n"}, "etcd notes")
			e.waitRuns(t, h1, 2*runs1)
			e.waitIdle(t)
			if n := sets(h1); n != 2*runs1 {
				t.Errorf("#1 (etcd) has %d runs after main changed etcd, want %d (one new set)", n, 2*runs1)
			}
			if n := sets(h2); n != runs2 {
				t.Errorf("#2 (redis) has %d runs after main changed only etcd, want %d: a base push re-checked a pull request it did not affect", n, runs2)
			}
			for name, r := range latestByName(e.fake.CheckRuns("acme", "catalog", h1)) {
				if r.Status != "completed" || r.Conclusion != "success" {
					t.Errorf("#1's re-check %s: %s %s", name, r.Status, r.Conclusion)
				}
			}

			// main changes another package: neither is checked again.
			e.moveMain(t, map[string]string{"catalogs/v4.16/other/catalog.yaml": strings.ReplaceAll(e2eBase, "etcd", "other")}, "other package")
			e.waitIdle(t)
			if n1, n2 := sets(h1), sets(h2); n1 != 2*runs1 || n2 != runs2 {
				t.Errorf("after a push that changed neither package: #1 %d runs (want %d), #2 %d (want %d)", n1, 2*runs1, n2, runs2)
			}

			// main changes the policy: both are checked again.
			e.moveMain(t, map[string]string{".catalogbot.yaml": baseMovePolicy + "# reviewed\n"}, "policy")
			e.waitRuns(t, h2, 2*runs2)
			e.waitRuns(t, h1, 3*runs1)
			e.waitIdle(t)
			if n1, n2 := sets(h1), sets(h2); n1 != 3*runs1 || n2 != 2*runs2 {
				t.Errorf("after a policy change: #1 %d runs (want %d), #2 %d (want %d)", n1, 3*runs1, n2, 2*runs2)
			}
		})
	}
}

// heldOwnership is the ownership check whose first run waits until release is closed (after saying so on
// started), so that a test can move the base while a pull request's first check is running.
type heldOwnership struct {
	checks.Ownership
	once             *sync.Once
	started, release chan struct{}
}

func (h heldOwnership) Run(ctx context.Context, pr *checks.PullRequest) (checks.Result, error) {
	first := false
	h.once.Do(func() { first = true })
	if first {
		close(h.started)
		select {
		case <-h.release:
		case <-ctx.Done():
			return checks.Result{}, ctx.Err()
		}
	}
	return h.Ownership.Run(ctx, pr)
}

// A push to the base branch while a pull request's first check is running (it read the old base) checks the
// pull request again on the new base: the running check records the base it read before judging, so the
// push's job compares with it as with any finished check.
func TestBasePushWhileTheFirstCheckRuns(t *testing.T) {
	for _, backend := range []string{store.BackendSQLite, store.BackendPostgres} {
		t.Run(backend, func(t *testing.T) {
			held := heldOwnership{once: &sync.Once{}, started: make(chan struct{}), release: make(chan struct{})}
			e := startE2EWith(t, backend, func(w *workRepo) (string, string) {
				base := w.commit(map[string]string{".catalogbot.yaml": baseMovePolicy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
				w.push("HEAD", "refs/heads/main")
				runGit(t, w.dir, "checkout", "-q", "-b", "pr")
				head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
				w.push("HEAD", "refs/pull/1/head")
				return base, head
			}, held, checks.Validation{})
			h1 := e.headSHA
			e.deliver(t, "pull_request", e.prEvent("opened", h1))
			select {
			case <-held.started:
			case <-time.After(90 * time.Second):
				t.Fatal("the first check never started")
			}
			// The policy changes while the first check runs on the old one.
			newBase := e.moveMain(t, map[string]string{".catalogbot.yaml": baseMovePolicy + "# reviewed\n"}, "policy")
			time.Sleep(200 * time.Millisecond) // let the push's job look at the queue while the check still runs
			close(held.release)
			e.waitRuns(t, h1, 4)
			e.waitIdle(t)
			runs := e.fake.CheckRuns("acme", "catalog", h1)
			if len(runs) != 4 {
				t.Fatalf("#1 has %d check runs, want 4 (its first check and one re-check on the new base)", len(runs))
			}
			c, ok, err := e.srv.Queue().Merges().LoadChecked(context.Background(), "acme", "catalog", 1)
			if err != nil || !ok {
				t.Fatalf("LoadChecked: %v %v", ok, err)
			}
			if c.BaseSHA != newBase {
				t.Errorf("the last check of #1 judged base %s, want the new base %s", c.BaseSHA, newBase)
			}
		})
	}
}

// A push to the base branch after a pull request's first check fetched the base but before it recorded what it
// read (its reviews request held here) checks the pull request again: nothing recorded tells what the running
// check saw, and it fetched the old base. Without the re-check, its verdict on the old policy would stand.
func TestBasePushBeforeTheFirstCheckRecordsItsBase(t *testing.T) {
	for _, backend := range []string{store.BackendSQLite, store.BackendPostgres} {
		t.Run(backend, func(t *testing.T) {
			e := startE2EWith(t, backend, func(w *workRepo) (string, string) {
				base := w.commit(map[string]string{".catalogbot.yaml": baseMovePolicy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
				w.push("HEAD", "refs/heads/main")
				runGit(t, w.dir, "checkout", "-q", "-b", "pr")
				head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
				w.push("HEAD", "refs/pull/1/head")
				return base, head
			}, checks.Ownership{}, checks.Validation{})
			started, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			e.gate.set(func(r *http.Request) {
				if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/pulls/1/reviews") {
					return
				}
				first := false
				once.Do(func() { first = true })
				if first {
					close(started)
					<-release
				}
			})
			h1 := e.headSHA
			e.deliver(t, "pull_request", e.prEvent("opened", h1))
			select {
			case <-started:
			case <-time.After(90 * time.Second):
				t.Fatal("the first check never asked for the reviews")
			}
			newBase := e.moveMain(t, map[string]string{".catalogbot.yaml": baseMovePolicy + "# reviewed\n"}, "policy")
			// The push's job judges the move while the first check is held (were it slower than this, it
			// would find the check recorded on the old base and re-check it all the same).
			time.Sleep(500 * time.Millisecond)
			close(release)
			e.waitRuns(t, h1, 4)
			e.waitIdle(t)
			if runs := e.fake.CheckRuns("acme", "catalog", h1); len(runs) != 4 {
				t.Errorf("#1 has %d check runs, want 4 (its first check and one re-check on the new base)", len(runs))
			}
			c, ok, err := e.srv.Queue().Merges().LoadChecked(context.Background(), "acme", "catalog", 1)
			if err != nil || !ok {
				t.Fatalf("LoadChecked: %v %v", ok, err)
			}
			if c.BaseSHA != newBase {
				t.Errorf("the last check of #1 judged base %s, want the new base %s", c.BaseSHA, newBase)
			}
		})
	}
}
