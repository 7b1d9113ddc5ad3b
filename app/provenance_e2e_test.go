package app

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// The catalog update tests: a community-style repository (bundle directories under operators/, a template
// per package rendered to catalogs/v4.16) whose only owner of etcd is bob and whose maintainer is maria;
// the App merges by squash, as many community repositories do.

// updateTemplateBase is written as community templates often are: a comment, lists at their key's column.
const updateTemplateBase = "# etcd's catalog template\nschema: olm.template.basic\nentries:\n- schema: olm.package\n  name: etcd\n  defaultChannel: stable\n- schema: olm.channel\n  package: etcd\n  name: stable\n  entries:\n  - name: etcdoperator.v1.0.0\n- schema: olm.bundle\n  image: "

// newUpdateEnv seeds main with etcd 1.0.0, its template and the catalog the template renders, and starts
// the App with the ownership and templates checks.
func newUpdateEnv(t *testing.T) (*rebuildEnv, *Server) {
	t.Helper()
	e := newRebuildEnv(t, store.BackendSQLite, func(host, baseRef string) string {
		return bundleImagePolicy(host, baseRef) + "templates:\n  - path: templates/etcd.yaml\n    catalogs: [catalogs/v4.16/etcd/catalog.yaml]\nautomerge: {enabled: true, method: squash}\n"
	})
	e.checks = []checks.Check{checks.Ownership{}, checks.Templates{}}
	srv, _, _ := e.start()
	v1 := e2eBundle("1.0.0", "registry+v1")
	first := map[string]string{"templates/etcd.yaml": updateTemplateBase + e.reg.host + "/acme/etcd-bundle@" + expectedBundleDigest(t, v1, "operators/etcd/1.0.0") + "\n"}
	for k, v := range v1 {
		first[k] = v
	}
	first["catalogs/v4.16/etcd/catalog.yaml"] = renderForTest(t, first, "templates/etcd.yaml")
	e.commitMain(first, "etcd 1.0.0 and its template")
	return e, srv
}

// bundleVersion is etcd at version, replacing replaces.
func bundleVersion(version, replaces string) map[string]string {
	files := e2eBundle(version, "registry+v1")
	csv := "operators/etcd/" + version + "/manifests/etcd.csv.yaml"
	files[csv] = strings.Replace(files[csv], "spec:\n", "spec:\n  replaces: "+replaces+"\n", 1)
	return files
}

// mergeBundle merges a bundle directory into main, delivers the push, and returns the merge commit and the
// catalog update pull request the App then opened or updated.
func (e *rebuildEnv) mergeBundle(files map[string]string, msg string) (string, githubfake.PR) {
	e.t.Helper()
	before, sha := e.commitMain(files, msg)
	e.deliverPush(before, sha)
	if run := e.waitRun(jobs.BundleImageCheckRunName, sha); run.Conclusion != "success" {
		e.t.Fatalf("bundle-image run of %s: %s %q\n%s", msg, run.Conclusion, run.Title, run.Summary)
	}
	var pr githubfake.PR
	for _, p := range e.pullRequests() {
		if p.HeadRef == rebuild.CatalogUpdateBranch("etcd") && p.State == "open" && p.Author == e.fake.BotLogin() {
			pr = p
		}
	}
	if pr.Number == 0 {
		e.t.Fatalf("no catalog update pull request open after %s: %+v", msg, e.pullRequests())
	}
	return sha, pr
}

// syncMain brings the work tree to main as GitHub has it (after a merge the App made).
func (e *rebuildEnv) syncMain() string {
	e.t.Helper()
	runGit(e.t, e.work.dir, "fetch", "-q", e.work.bare, "main")
	runGit(e.t, e.work.dir, "reset", "-q", "--hard", "FETCH_HEAD")
	e.main = runGit(e.t, e.work.dir, "rev-parse", "HEAD")
	return e.main
}

// deliverPR delivers a pull_request event for number as it is now.
func (e *rebuildEnv) deliverPR(number int, action string) {
	e.t.Helper()
	ev, err := e.fake.PullRequestEvent("acme", "catalog", number, action)
	if err != nil {
		e.t.Fatal(err)
	}
	if d, err := e.fake.Deliver(context.Background(), "pull_request", withCloneURL(e.t, ev, e.git.URL("acme", "catalog"))); err != nil || d.StatusCode != 202 {
		e.t.Fatalf("delivering pull_request.%s of #%d: %v %+v", action, number, err, d)
	}
}

// prRun waits for the completed run name of pull request number on sha.
func (e *rebuildEnv) prRun(name string, number int, sha string) githubfake.CheckRun {
	e.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var got *githubfake.CheckRun
		for _, r := range e.fake.CheckRuns("acme", "catalog", sha) {
			if n, ok := jobs.ParseCheckRunExternalID(r.ExternalID); ok && n == number && r.Name == name && r.Status == "completed" && (got == nil || r.ID > got.ID) {
				r := r
				got = &r
			}
		}
		if got != nil {
			return *got
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no completed %s run of #%d on %s after 90s", name, number, jobs.Short(sha))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitMergedPR waits until pull request number is merged and returns its merge commit.
func (e *rebuildEnv) waitMergedPR(number int) string {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p, _ := e.fake.PullRequest("acme", "catalog", number); p.Merged {
			return p.MergeSHA
		}
		if time.Now().After(deadline) {
			var comments []string
			for _, c := range e.fake.Comments("acme", "catalog", number) {
				comments = append(comments, c.Body)
			}
			e.t.Fatalf("#%d was not merged; comments: %q", number, comments)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// forgedCommit makes, in the bare repository, a commit of tree on parent whose author and committer claim to
// be the App's bot, as anyone can write them (dated otherwise: the very same commit would be the App's).
func (e *rebuildEnv) forgedCommit(tree, parent, msg string) string {
	e.t.Helper()
	bot := e.fake.BotLogin()
	cmd := exec.Command("git", "--git-dir", e.git.BarePath("acme", "catalog"), "commit-tree", tree, "-p", parent, "-m", msg)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME="+bot, "GIT_AUTHOR_EMAIL="+bot+"@users.noreply.github.com",
		"GIT_COMMITTER_NAME="+bot, "GIT_COMMITTER_EMAIL="+bot+"@users.noreply.github.com",
		"GIT_AUTHOR_DATE=2001-02-03T04:05:06Z", "GIT_COMMITTER_DATE=2001-02-03T04:05:06Z")
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("git commit-tree: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Two bundles of one package merged one after the other, each catalog update squash-merged in between: the
// second update is built on the default branch (which holds the first update's squashed commit), so it only
// adds, and both merge by themselves as derived from their bundles.
func TestCatalogUpdatesSquashMergedInTurn(t *testing.T) {
	e, _ := newUpdateEnv(t)
	bare := e.git.BarePath("acme", "catalog")
	var mergedImages []string
	for _, tc := range []struct{ version, replaces string }{{"1.1.0", "etcdoperator.v1.0.0"}, {"1.2.0", "etcdoperator.v1.1.0"}} {
		files := bundleVersion(tc.version, tc.replaces)
		img := e.reg.host + "/acme/etcd-bundle@" + expectedBundleDigest(t, files, "operators/etcd/"+tc.version)
		sha, pr := e.mergeBundle(files, "merge etcd "+tc.version)
		if parent := runGit(t, bare, "rev-parse", pr.HeadSHA+"^"); parent != sha {
			t.Fatalf("%s: the update's parent is %s, want the default branch's head %s", tc.version, parent, sha)
		}
		if diff := runGit(t, bare, "diff", "--name-status", sha, pr.HeadSHA); diff != "M\tcatalogs/v4.16/etcd/catalog.yaml\nM\ttemplates/etcd.yaml" {
			t.Errorf("%s: the update changes, compared with main:\n%s", tc.version, diff)
		}
		// The template only gains lines: the reviewer sees the new entries, nothing re-indented.
		for _, l := range strings.Split(runGit(t, bare, "diff", "-U0", sha, pr.HeadSHA, "--", "templates/etcd.yaml"), "\n") {
			if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---") {
				t.Errorf("%s: the update's template diff removes %q", tc.version, l)
			}
		}
		e.deliverPR(pr.Number, "opened")
		own := e.prRun("catalogbot/ownership", pr.Number, pr.HeadSHA)
		if own.Conclusion != "success" || !strings.Contains(own.Title, "derived") {
			t.Fatalf("%s: ownership of the update #%d: %s %q\n%s", tc.version, pr.Number, own.Conclusion, own.Title, own.Summary)
		}
		merge := e.waitMergedPR(pr.Number)
		if parents := strings.Fields(runGit(t, bare, "rev-list", "--parents", "-n", "1", merge)); len(parents) != 2 || parents[1] != sha {
			t.Fatalf("%s: the merge %v is not one squashed commit on %s", tc.version, parents, sha)
		}
		mergedImages = append(mergedImages, img)
		// GitHub announces the squash with a push; the work tree follows main.
		e.deliverPush(sha, merge)
		e.syncMain()
		e.waitImageRun(merge)
	}
	tmpl := runGit(t, bare, "show", "main:templates/etcd.yaml")
	cat := runGit(t, bare, "show", "main:catalogs/v4.16/etcd/catalog.yaml")
	for _, img := range mergedImages {
		if !strings.Contains(tmpl, img) || !strings.Contains(cat, img) {
			t.Errorf("main lacks %s:\n%s\n%s", img, tmpl, cat)
		}
	}
	for _, m := range e.fake.Merges() {
		if m.Method != "squash" {
			t.Errorf("merge %+v is not a squash", m)
		}
	}
}

// Only the App's own catalog update is derived. The same content reached any other way is an ordinary
// pull request judged by ownership: from a fork, on a look-alike branch, opened by a person on the App's
// branch, into another branch than the default one, with a commit that claims the bot's name, or the App's
// own pull request once anyone else pushed a commit to it (which a maintainer may then approve).
func TestCatalogUpdateOnlyFromTheApp(t *testing.T) {
	e, _ := newUpdateEnv(t)
	bare := e.git.BarePath("acme", "catalog")
	bot := e.fake.BotLogin()
	sha, app := e.mergeBundle(bundleVersion("1.1.0", "etcdoperator.v1.0.0"), "merge etcd 1.1.0")
	tree := runGit(t, bare, "rev-parse", app.HeadSHA+"^{tree}")
	msg := runGit(t, bare, "log", "-1", "--format=%B", app.HeadSHA)
	forged := e.forgedCommit(tree, sha, msg)
	if err := e.fake.PushBranch("acme", "catalog", "release", sha); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                    string
		author, repo, ref, head string
		base                    string
	}{
		{"a fork's branch of the same name, its own commit", "mallory", "mallory/catalog", "catalogbot/catalog-update/etcd", forged, ""},
		{"a fork's branch holding the App's commit", "mallory", "mallory/catalog", "catalogbot/catalog-update/etcd", app.HeadSHA, ""},
		{"a fork, opened in the bot's name", bot, "mallory/catalog", "catalogbot/catalog-update/etcd", app.HeadSHA, ""},
		{"a person opens a pull request of the App's branch", "mallory", "", "catalogbot/catalog-update/etcd", app.HeadSHA, ""},
		{"look-alike: another package's branch", bot, "", "catalogbot/catalog-update/etcd-x", app.HeadSHA, ""},
		{"look-alike: capitals", bot, "", "Catalogbot/catalog-update/etcd", app.HeadSHA, ""},
		{"look-alike: a prefix", bot, "", "x/catalogbot/catalog-update/etcd", app.HeadSHA, ""},
		{"look-alike: updates", bot, "", "catalogbot/catalog-updates/etcd", app.HeadSHA, ""},
		{"look-alike: a deeper branch", bot, "", "catalogbot/catalog-update/etcd/2", app.HeadSHA, ""},
		{"the App's branch and name, a commit the App did not make", bot, "", "catalogbot/catalog-update/etcd", forged, ""},
		{"into another branch than the default", bot, "", "catalogbot/catalog-update/etcd", app.HeadSHA, "release"},
	} {
		n, err := e.fake.AddPullRequest("acme", "catalog", githubfake.PR{Author: tc.author, HeadRepo: tc.repo, HeadRef: tc.ref, HeadSHA: tc.head, BaseRef: tc.base, BaseSHA: sha, Title: app.Title, Body: app.Body})
		if err != nil {
			t.Fatal(err)
		}
		runGit(t, bare, "update-ref", "refs/pull/"+strconv.Itoa(n)+"/head", tc.head)
		e.deliverPR(n, "opened")
		own := e.prRun("catalogbot/ownership", n, tc.head)
		if own.Conclusion == "success" || strings.Contains(own.Title, "derived") {
			t.Errorf("%s: ownership of #%d: %s %q\n%s", tc.name, n, own.Conclusion, own.Title, own.Summary)
		}
		// The templates check agrees the content is a faithful render: only who made it differs.
		if tr := e.prRun("catalogbot/templates", n, tc.head); tr.Conclusion != "success" {
			t.Errorf("%s: templates of #%d: %s %q", tc.name, n, tr.Conclusion, tr.Title)
		}
	}

	// The App's own pull request, once someone else pushed a commit to its branch (the very content, in
	// the bot's name): an ordinary pull request. maria, a maintainer, approves it, and it merges on that.
	pushed := e.forgedCommit(tree, app.HeadSHA, "touch up")
	if err := e.fake.PushBranch("acme", "catalog", rebuild.CatalogUpdateBranch("etcd"), pushed); err != nil {
		t.Fatal(err)
	}
	e.deliverPR(app.Number, "synchronize")
	own := e.prRun("catalogbot/ownership", app.Number, pushed)
	if own.Conclusion == "success" || strings.Contains(own.Title, "derived") {
		t.Fatalf("ownership of the App's pull request after a foreign commit: %s %q\n%s", own.Conclusion, own.Title, own.Summary)
	}
	time.Sleep(500 * time.Millisecond)
	for _, m := range e.fake.Merges() {
		t.Fatalf("merged without an owner: %+v", m)
	}
	id, err := e.fake.AddReview("acme", "catalog", app.Number, githubfake.Review{User: "maria", State: "APPROVED"})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := e.fake.PullRequestReviewEvent("acme", "catalog", app.Number, id, "submitted")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.fake.Deliver(context.Background(), "pull_request_review", withCloneURL(t, ev, e.git.URL("acme", "catalog"))); err != nil || d.StatusCode != 202 {
		t.Fatalf("delivering the review: %v %+v", err, d)
	}
	e.waitMergedPR(app.Number)
	for _, m := range e.fake.Merges() {
		if m.Number != app.Number {
			t.Errorf("#%d was merged", m.Number)
		}
	}
}

// A bundle the default branch took out of the template again (an owner held the version back) is never
// derived back in: the App's update still open from before is no longer derived once the removal is on the
// default branch, the App closes it when the branch moves, and the next bundle's update leaves it out.
func TestCatalogUpdateOfABundleTakenOut(t *testing.T) {
	e, _ := newUpdateEnv(t)
	bare := e.git.BarePath("acme", "catalog")
	files := bundleVersion("1.1.0", "etcdoperator.v1.0.0")
	img := e.reg.host + "/acme/etcd-bundle@" + expectedBundleDigest(t, files, "operators/etcd/1.1.0")
	sha, app := e.mergeBundle(files, "merge etcd 1.1.0")
	// maria adds 1.1.0 to the template by hand and takes it out again; the App misses both pushes.
	withIt := runGit(t, bare, "show", app.HeadSHA+":templates/etcd.yaml")
	without := runGit(t, bare, "show", sha+":templates/etcd.yaml")
	e.commitMain(map[string]string{"templates/etcd.yaml": withIt + "\n"}, "add etcd 1.1.0 by hand")
	_, removed := e.commitMain(map[string]string{"templates/etcd.yaml": without + "\n"}, "hold etcd 1.1.0 back")
	e.deliverPR(app.Number, "opened")
	own := e.prRun("catalogbot/ownership", app.Number, app.HeadSHA)
	if own.Conclusion == "success" || strings.Contains(own.Title, "derived") {
		t.Fatalf("ownership of the update of a bundle taken out: %s %q\n%s", own.Conclusion, own.Title, own.Summary)
	}
	// The App sees the branch move: its update has nothing left to add and is closed.
	e.deliverPush(sha, removed)
	e.waitImageRun(removed)
	if p, _ := e.fake.PullRequest("acme", "catalog", app.Number); p.State != "closed" || p.Merged {
		t.Errorf("the update of the bundle taken out: %+v, want closed unmerged", p)
	}
	// The next bundle's update adds it alone, and merges as derived.
	_, next := e.mergeBundle(bundleVersion("1.2.0", "etcdoperator.v1.0.0"), "merge etcd 1.2.0")
	got := runGit(t, bare, "show", next.HeadSHA+":templates/etcd.yaml")
	if strings.Contains(got, img) || !strings.Contains(got, "etcdoperator.v1.2.0") {
		t.Errorf("the next update's template:\n%s", got)
	}
	e.deliverPR(next.Number, "opened")
	e.waitMergedPR(next.Number)
	for _, m := range e.fake.Merges() {
		if m.Number == app.Number {
			t.Errorf("the update of the bundle taken out was merged")
		}
	}
}

// The default branch moves while a catalog update is open (another change merges): the App builds the update
// again on the new head, so the pull request still only adds compared with the default branch, stays derived
// and merges.
func TestCatalogUpdateFollowsTheDefaultBranch(t *testing.T) {
	e, _ := newUpdateEnv(t)
	bare := e.git.BarePath("acme", "catalog")
	_, pr := e.mergeBundle(bundleVersion("1.1.0", "etcdoperator.v1.0.0"), "merge etcd 1.1.0")
	before, moved := e.commitMain(map[string]string{"notes/README.md": "hello\n"}, "merge #12: notes")
	e.deliverPush(before, moved)
	e.waitImageRun(moved)
	p, _ := e.fake.PullRequest("acme", "catalog", pr.Number)
	if p.State != "open" || p.HeadSHA == pr.HeadSHA {
		t.Fatalf("the update was not built again: %+v", p)
	}
	if parent := runGit(t, bare, "rev-parse", p.HeadSHA+"^"); parent != moved {
		t.Fatalf("the update's parent is %s, want the default branch's new head %s", parent, moved)
	}
	if diff := runGit(t, bare, "diff", "--name-status", moved, p.HeadSHA); diff != "M\tcatalogs/v4.16/etcd/catalog.yaml\nM\ttemplates/etcd.yaml" {
		t.Errorf("the update changes, compared with main:\n%s", diff)
	}
	e.deliverPR(pr.Number, "synchronize")
	if own := e.prRun("catalogbot/ownership", pr.Number, p.HeadSHA); own.Conclusion != "success" || !strings.Contains(own.Title, "derived") {
		t.Fatalf("ownership of the update built again: %s %q\n%s", own.Conclusion, own.Title, own.Summary)
	}
	e.waitMergedPR(pr.Number)
}

// A bundle the App's build has no record of is not derived into a template, even by the App's own pull
// request: here the record of etcd 1.1.0's build is gone from the App's database (as for a directory merged
// while the App did not build it) before its update is checked.
func TestCatalogUpdateOfABundleNeverBuilt(t *testing.T) {
	e, _ := newUpdateEnv(t)
	files := bundleVersion("1.1.0", "etcdoperator.v1.0.0")
	img := e.reg.host + "/acme/etcd-bundle@" + expectedBundleDigest(t, files, "operators/etcd/1.1.0")
	_, pr := e.mergeBundle(files, "merge etcd 1.1.0")
	// The server writes to the same database: wait for its transactions as it waits for others' (SQLITE_BUSY
	// under load otherwise).
	db, err := sql.Open("sqlite", e.cfg.SQLitePath()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if res, err := db.Exec(`DELETE FROM catalogbot_bundle_build WHERE image = ?`, img); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%d build records of %s", n, img)
	}
	e.deliverPR(pr.Number, "opened")
	own := e.prRun("catalogbot/ownership", pr.Number, pr.HeadSHA)
	if own.Conclusion == "success" || strings.Contains(own.Title, "derived") {
		t.Fatalf("ownership of an update adding a bundle never built: %s %q\n%s", own.Conclusion, own.Title, own.Summary)
	}
	time.Sleep(500 * time.Millisecond)
	for _, m := range e.fake.Merges() {
		t.Errorf("merged: %+v", m)
	}
}
