package app

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/merge"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// resultPolicy: bob owns etcd and redis; automerge squashes.
const resultPolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
newPackages: anyone
packages:
  etcd: { owners: [bob] }
  redis: { owners: [bob] }
automerge:
  enabled: true
  method: squash
`

// etcdFastChannel adds etcd.v1.1.0 in a file of its own, on a new channel: valid alone.
const etcdFastChannel = `---
schema: olm.channel
package: etcd
name: fast
entries:
  - name: etcd.v1.1.0
    replaces: etcd.v1.0.0
---
schema: olm.bundle
package: etcd
name: etcd.v1.1.0
image: quay.io/acme/etcd-bundle@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.1.0}
`

// openPR commits files on a branch from the base commit, pushes it as pull request n by bob, and delivers
// its opened event; it returns the head.
func (e *e2eEnv) openPR(t *testing.T, n int, files map[string]string) string {
	t.Helper()
	branch := fmt.Sprintf("pr%d", n)
	runGit(t, e.work.dir, "checkout", "-q", "-b", branch, e.baseSHA)
	head := e.work.commit(files, "pull request "+branch)
	e.work.push("HEAD", fmt.Sprintf("refs/pull/%d/head", n))
	if _, err := e.fake.AddPullRequest("acme", "catalog", githubfake.PR{Number: n, Author: "bob", HeadSHA: head, HeadRef: branch, BaseRef: "main", Title: branch}); err != nil {
		t.Fatal(err)
	}
	e.deliverRaw(t, "pull_request", e.prEventOf(t, n, "opened"))
	return head
}

// prEventOf is the fake's pull_request event for pull request n as it is now, with the local clone URL.
func (e *e2eEnv) prEventOf(t *testing.T, n int, action string) []byte {
	t.Helper()
	body, err := e.fake.PullRequestEvent("acme", "catalog", n, action)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(body, []byte(`"https://github.com/acme/catalog.git"`), []byte(`"`+e.git.URL("acme", "catalog")+`"`))
}

func (e *e2eEnv) statusCommentOf(n int) string {
	for _, c := range e.fake.Comments("acme", "catalog", n) {
		if strings.HasPrefix(c.Body, merge.StatusMarker) {
			return c.Body
		}
	}
	return ""
}

// validateMain validates the catalog of the base branch's head in the git server.
func (e *e2eEnv) validateMain(t *testing.T) []catalog.Finding {
	t.Helper()
	ctx := context.Background()
	repo, err := gitfs.Open(e.git.BarePath("acme", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	head, err := repo.Resolve("refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := repo.TreeFS(ctx, head, gitfs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Sub(tree, "catalogs/v4.16")
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(ctx, sub, catalog.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var errs []catalog.Finding
	for _, f := range catalog.Validate(c, catalog.ValidateOptions{}) {
		if f.Severity == catalog.SeverityError {
			errs = append(errs, f)
		}
	}
	return errs
}

// Two pull requests that each pass alone add the same bundle in different files: the first merges (a real
// commit on main), the second is judged as its merge would leave the catalog and gets a finding naming the
// first, never a merge; main stays valid. A third, touching another package and checked before the base
// moved, merges on the moved base without a new check run set.
func TestSemanticConflictNamesTheFirstAndIrrelevantMoveMerges(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": resultPolicy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})

	// #3 (redis) is checked on the first base and held.
	must(t, e.fake.AddLabel("acme", "catalog", 1, "do-not-merge/hold"))
	h3 := e.openPR(t, 3, map[string]string{"catalogs/v4.16/redis/catalog.yaml": strings.ReplaceAll(e2eBase, "etcd", "redis")})
	must(t, e.fake.AddLabel("acme", "catalog", 3, "do-not-merge/hold"))
	e.waitRuns(t, h3, 2)

	// #1 merges.
	must(t, e.fake.RemoveLabel("acme", "catalog", 1, "do-not-merge/hold"))
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	if merges := e.waitMerged(t, 60*time.Second); len(merges) != 1 || merges[0].Number != 1 {
		t.Fatalf("merges = %+v, want #1", merges)
	}
	first := e.fake.Merges()[0].MergeSHA

	// #2 adds the same bundle in another file: it passes alone, never merges, and names #1.
	h2 := e.openPR(t, 2, map[string]string{"catalogs/v4.16/etcd/fast.yaml": etcdFastChannel})
	waitFor(t, "#2's status comment does not name #1", func() bool {
		return strings.Contains(e.statusCommentOf(2), "semantic conflict with #1 ("+jobs.Short(first)+")")
	})
	for name, r := range latestByName(e.fake.CheckRuns("acme", "catalog", h2)) {
		if r.Conclusion != "success" {
			t.Errorf("#2's %s = %s: it should pass alone", name, r.Conclusion)
		}
	}
	t.Logf("#2's status comment:\n%s", e.statusCommentOf(2))
	if c := e.statusCommentOf(2); !strings.Contains(c, "bundle.duplicate") && !strings.Contains(c, "etcd.v1.1.0") {
		t.Errorf("the finding does not say what conflicts:\n%s", c)
	}

	// #3's hold comes off: the base moved only in etcd, so it merges with no new check.
	runs3 := len(e.fake.CheckRuns("acme", "catalog", h3))
	must(t, e.fake.RemoveLabel("acme", "catalog", 3, "do-not-merge/hold"))
	e.deliverRaw(t, "pull_request", e.prEventOf(t, 3, "unlabeled"))
	waitFor(t, "#3 not merged", func() bool { return len(e.fake.Merges()) == 2 })
	e.waitIdle(t)
	if n := len(e.fake.CheckRuns("acme", "catalog", h3)); n != runs3 {
		t.Errorf("#3 was checked again (%d → %d runs) though the base moved only in etcd", runs3, n)
	}
	for _, m := range e.fake.Merges() {
		if m.Number == 2 {
			t.Fatalf("#2 merged: %+v", m)
		}
	}
	if errs := e.validateMain(t); len(errs) != 0 {
		t.Errorf("main is invalid after the merges: %v", errs)
	}
}
