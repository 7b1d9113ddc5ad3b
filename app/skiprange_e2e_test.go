package app

import (
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

// A bundle whose olm.skipRange opm's newer releases cannot parse fails its own pull request, through the
// App, on the CSV's line (issue 27.2): the bundle directory is immutable once merged and its catalog update
// would be refused, so the pull request that adds it is where it must fail. bob, etcd's ci.yaml reviewer,
// adds etcd 1.1.0 to the community layout of the preview tests (semver template, catalog of v4.16).
func TestBundlePullRequestUnparsableSkipRange(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		files := map[string]string{".catalogbot.yaml": previewPolicy, "catalogs/v4.16/etcd/catalog.yaml": previewCatalog,
			"operators/etcd/ci.yaml": "reviewers: [bob]\n", "operators/etcd/catalog-templates/semver.yaml": previewTemplate}
		for k, v := range previewBundle("1.0.0", "size") {
			files[k] = v
		}
		base := w.commit(files, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		next := previewBundle("1.1.0", "size")
		csv := "operators/etcd/1.1.0/manifests/etcd.csv.yaml"
		next[csv] = strings.Replace(next[csv], "  name: etcdoperator.v1.1.0\n", "  name: etcdoperator.v1.1.0\n  annotations:\n    olm.skipRange: '>=1.0.0, <1.1.0'\n", 1)
		head := w.commit(next, "add etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.CRDSafety{})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 3))
	if own := runs["catalogbot/ownership"]; own.Conclusion != "success" {
		t.Errorf("ownership = %s (%s): bob reviews etcd", own.Conclusion, own.Title)
	}
	val := runs["catalogbot/validate"]
	if val.Conclusion != "failure" {
		t.Fatalf("validate = %s (%s), want failure\n%s", val.Conclusion, val.Title, val.Summary)
	}
	found := false
	for _, a := range val.Annotations {
		if a.Path == "operators/etcd/1.1.0/manifests/etcd.csv.yaml" && a.StartLine == 6 && a.Level == "failure" &&
			strings.Contains(a.Title+a.Message, "bundle.csv-skiprange") {
			found = true
		}
	}
	if !found {
		t.Errorf("no failure annotation bundle.csv-skiprange on the CSV's line 6: %+v", val.Annotations)
	}
}
