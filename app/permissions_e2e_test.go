package app

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// ownerPolicy: bob, the author, owns etcd; automerge is on.
const ownerPolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
packages:
  etcd: { owners: [bob] }
automerge:
  enabled: true
  method: squash
`

func startOwnerE2E(t *testing.T) *e2eEnv {
	t.Helper()
	return startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": ownerPolicy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
}

func (e *e2eEnv) waitMerged(t *testing.T, within time.Duration) []githubfake.Merge {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(e.fake.Merges()) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	return e.fake.Merges()
}

// An installation without Administration: read cannot read branch protection: the merge evaluation goes on
// without it (GitHub's merge still enforces the protection) instead of retrying the 403 for ever.
func TestMergeWithoutAdministrationPermission(t *testing.T) {
	e := startOwnerE2E(t)
	e.fake.DenyPermission(e2eInstID, "administration")
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 || merges[0].HeadSHA != e.headSHA {
		t.Fatalf("merges = %+v, want the owner's pull request merged although branch protection cannot be read", merges)
	}
	e.waitIdle(t)
}

// The App manifest requests exactly what the App uses: every endpoint the App called in these flows (check,
// approval, merge) needs a permission the manifest grants at that access or more; and every permission the
// manifest asks for is one some endpoint needs (members: team owners, metadata: always granted).
func TestManifestPermissionsCoverTheEndpointsCalled(t *testing.T) {
	var requests []githubfake.Request
	e := startOwnerE2E(t)
	// A required check that is a commit status: the merge evaluation reads the head's statuses only then.
	must(t, e.fake.SetProtection("acme", "catalog", "main", &githubfake.Protection{RequiredContexts: []string{"ci/external"}}))
	must(t, e.fake.SetStatus("acme", "catalog", e.headSHA, githubfake.Status{Context: "ci/external", State: "success"}))
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	if len(e.waitMerged(t, 30*time.Second)) != 1 {
		t.Fatal("the owner's pull request did not merge")
	}
	e.waitIdle(t)
	requests = append(requests, e.fake.Requests()...)
	a := startApprovalE2E(t, store.BackendSQLite)
	a.deliver(t, "pull_request", a.prEvent("opened", a.headSHA))
	a.waitOwnership(t, a.headSHA, "action_required")
	a.review(t, "carol", "APPROVED")
	if len(a.waitMerged(t, 30*time.Second)) != 1 {
		t.Fatal("the approved pull request did not merge")
	}
	a.waitIdle(t)
	requests = append(requests, a.fake.Requests()...)
	// The comment commands: a refusal's reply, a reaction, labels, a commenter's permission.
	c := commandEnv(t, store.BackendSQLite)
	c.deliver(t, "pull_request", c.prEvent("opened", c.headSHA))
	c.waitOwnership(t, c.headSHA, "action_required")
	c.waitReply(t, c.comment(t, "dave", "/approve"), jobs.CmdApprove)
	c.waitReaction(t, c.comment(t, "dave", "/retest"))
	c.waitReaction(t, c.comment(t, "bob", "/hold"))
	c.waitReaction(t, c.comment(t, "bob", "/hold cancel"))
	c.waitIdle(t)
	requests = append(requests, c.fake.Requests()...)

	raw, err := os.ReadFile(filepath.Join("..", "deploy", "github-app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Permissions map[string]string `json:"default_permissions"`
	}
	if err := yaml.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	rank := map[string]int{"read": 1, "write": 2}
	needed := map[string]string{}
	for _, r := range requests {
		perm, access, ok := githubfake.RoutePermission(r.Route)
		if !ok {
			if strings.HasPrefix(r.Route, "GET /repos") || strings.HasPrefix(r.Route, "POST /repos") {
				t.Errorf("the fake knows no permission for %s", r.Route)
			}
			continue
		}
		if rank[access] > rank[needed[perm]] {
			needed[perm] = access
		}
		if rank[manifest.Permissions[perm]] < rank[access] {
			t.Errorf("%s needs %s: %s; the manifest grants %q", r.Route, perm, access, manifest.Permissions[perm])
		}
	}
	var unused []string
	for perm := range manifest.Permissions {
		// merge_queues is what subscribes the App to merge_group events: no endpoint needs it.
		// issues is the promotion's (its tracking issue): TestPromotionOfTwentyPackages holds its calls to the manifest.
		if _, ok := needed[perm]; !ok && perm != "metadata" && perm != "members" && perm != "merge_queues" && perm != "issues" {
			unused = append(unused, perm)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		t.Errorf("the manifest asks for %v, which no endpoint the App called needs (needed: %v)", unused, needed)
	}
}
