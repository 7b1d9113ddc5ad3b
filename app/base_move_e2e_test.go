package app

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

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
