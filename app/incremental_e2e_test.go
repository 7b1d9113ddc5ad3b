package app

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A check of a catalog with many packages reads only the touched package's
// files: the second check of the pull request learns which package every
// other file holds from the file summary index (by git blob), through the
// real server against the fake GitHub, as it runs in production.
func TestChecksReadOnlyTouchedPackages(t *testing.T) {
	const others = 40
	var otherHead string
	e := startE2EWith(t, "sqlite", func(w *workRepo) (string, string) {
		files := map[string]string{}
		for i := range others {
			p := fmt.Sprintf("pkg%02d", i)
			files["catalogs/v4.16/"+p+"/catalog.yaml"] = "---\nschema: olm.package\nname: " + p + "\n"
		}
		w.commit(files, "other packages")
		base, head := commitEtcdPR(t, w, e2ePolicy)
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 4))
	if v := runs["catalogbot/validate"]; v.Conclusion != "failure" || !strings.Contains(v.Summary, "packages checked: `etcd`") {
		t.Errorf("first check: validate %q, want failure on etcd only:\n%s", v.Conclusion, v.Summary)
	}
	first := indexLookups(t, e.url)
	if first["miss"] < others {
		t.Errorf("first check: %d index misses, want every other package's file (%d) summarized once", first["miss"], others)
	}

	// A new head: the other packages' files are known by blob and not read again.
	runGit(t, e.work.dir, "checkout", "-q", "pr")
	otherHead = e.work.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "revert to base content")
	e.work.push("HEAD", "refs/pull/1/head")
	if err := e.fake.PushPullRequest("acme", "catalog", 1, otherHead); err != nil {
		t.Fatal(err)
	}
	e.deliver(t, "pull_request", e.prEvent("synchronize", otherHead))
	runs = latestByName(e.waitRuns(t, otherHead, 4))
	e.waitIdle(t)
	if v := runs["catalogbot/validate"]; v.Conclusion != "success" {
		t.Errorf("second check: validate %q, want success:\n%s", v.Conclusion, v.Summary)
	}
	second := indexLookups(t, e.url)
	if hits := second["hit"] - first["hit"]; hits < others {
		t.Errorf("second check: %d index hits, want the %d unchanged files of other packages", hits, others)
	}
	// The one file new to the index: etcd's, back to its base content, which the first check read only as the
	// base side of a changed file.
	if misses := second["miss"] - first["miss"]; misses > 1 {
		t.Errorf("second check: %d index misses, want at most 1 (etcd's base content)", misses)
	}
}

var indexLookupLine = regexp.MustCompile(`(?m)^catalogbot_file_index_lookups_total\{result="(hit|miss)"\} ([0-9.e+]+)$`)

// indexLookups reads the file summary index's lookups from /metrics.
func indexLookups(t *testing.T, base string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range indexLookupLine.FindAllStringSubmatch(scrape(t, base), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		out[m[1]] = int(v)
	}
	return out
}
