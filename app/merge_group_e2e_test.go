package app

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// waitGroupRuns waits until every check run on the group's head is completed, and returns them by name.
func (e *e2eEnv) waitGroupRuns(t *testing.T, sha string, want int) map[string]githubfake.CheckRun {
	t.Helper()
	var got map[string]githubfake.CheckRun
	waitFor(t, "the merge group's check runs did not complete", func() bool {
		got = latestByName(e.fake.CheckRuns("acme", "catalog", sha))
		done := 0
		for _, r := range got {
			if r.Status == "completed" {
				done++
			}
		}
		return done == want
	})
	return got
}

// A repository with a merge queue: catalogbot answers merge_group.checks_requested with the same check runs
// on the group's head as on a pull request. A group of one valid pull request passes; a group of two that
// each pass alone but add the same bundle in different files fails catalogbot/validate on the group head.
func TestMergeGroupChecks(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": strings.Replace(resultPolicy, "enabled: true", "enabled: false", 1),
			"catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	prRuns := e.waitRuns(t, e.headSHA, 2)
	h2 := e.openPR(t, 2, map[string]string{"catalogs/v4.16/etcd/fast.yaml": etcdFastChannel})
	e.waitRuns(t, h2, 2)

	deliverGroup := func(numbers ...int) githubfake.MergeGroup {
		g, ev, err := e.fake.QueueMergeGroup("acme", "catalog", numbers...)
		if err != nil {
			t.Fatal(err)
		}
		e.deliverRaw(t, "merge_group", bytes.ReplaceAll(ev, []byte(`"https://github.com/acme/catalog.git"`), []byte(`"`+e.git.URL("acme", "catalog")+`"`)))
		return g
	}
	one := deliverGroup(1)
	runs := e.waitGroupRuns(t, one.HeadSHA, 2)
	var names, want []string
	for n, r := range runs {
		names = append(names, n)
		if r.Conclusion != "success" {
			t.Errorf("group of #1: %s = %s (%s)\n%s", n, r.Conclusion, r.Title, r.Summary)
		}
	}
	for _, r := range prRuns {
		if !slices.Contains(want, r.Name) {
			want = append(want, r.Name)
		}
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("runs on the group head = %v, want the pull request's %v", names, want)
	}

	both := deliverGroup(1, 2)
	runs = e.waitGroupRuns(t, both.HeadSHA, 2)
	if v := runs["catalogbot/validate"]; v.Conclusion != "failure" || !strings.Contains(v.Summary+v.Title+annotationText(v), "etcd.v1.1.0") {
		t.Errorf("group of #1 and #2: validate = %s (%s), want a failure naming etcd.v1.1.0\n%s", v.Conclusion, v.Title, v.Summary)
	}
	if o := runs["catalogbot/ownership"]; o.Conclusion != "success" {
		t.Errorf("group ownership = %s", o.Conclusion)
	}
	if n := len(e.fake.Merges()); n != 0 {
		t.Errorf("merges = %d: a merge group check merged", n)
	}
}

func annotationText(r githubfake.CheckRun) string {
	var b strings.Builder
	for _, a := range r.Annotations {
		b.WriteString(a.Message + "\n")
	}
	return b.String()
}
