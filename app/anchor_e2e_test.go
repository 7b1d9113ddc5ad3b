package app

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

// Both packages in one file, so that a change inside carol's blob is far from the blob's first line.
const anchorBase = `---
schema: olm.package
name: etcd
defaultChannel: stable
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v1.0.0
---
schema: olm.bundle
package: etcd
name: etcd.v1.0.0
image: quay.io/acme/etcd-bundle@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.0.0}
---
schema: olm.package
name: redis
defaultChannel: stable
---
schema: olm.channel
package: redis
name: stable
entries:
  - name: redis.v1.0.0
---
schema: olm.bundle
package: redis
name: redis.v1.0.0
image: quay.io/acme/redis-bundle@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
properties:
  - type: olm.package
    value: {packageName: redis, version: 1.0.0}
  - type: olm.maxOpenShiftVersion
    value: "4.16"
`

const anchorPolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
packages:
  etcd: { owners: [bob] }
  redis: { owners: [carol] }
`

// hunkLines reads `git diff -U0` and returns, per file, the head lines it adds or changes.
func hunkLines(diff string) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	file := ""
	hunk := regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)
	for _, l := range strings.Split(diff, "\n") {
		if f, ok := strings.CutPrefix(l, "+++ b/"); ok {
			file = f
			out[file] = map[int]bool{}
			continue
		}
		m := hunk.FindStringSubmatch(l)
		if m == nil || file == "" {
			continue
		}
		start, _ := strconv.Atoi(m[1])
		n := 1
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		for i := 0; i < n; i++ {
			out[file][start+i] = true
		}
	}
	return out
}

// Every annotation about changed content lands on a line the pull request changed: bob edits a line deep in
// carol's released bundle; the ownership and immutability annotations are on that line (not on the blob's
// first line), as GitHub's diff hunks of the pull request say.
func TestAnnotationsLandOnChangedLines(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": anchorPolicy, "catalogs/v4.16/catalog.yaml": anchorBase}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/catalog.yaml": strings.Replace(anchorBase, `value: "4.16"`, `value: "4.17"`, 1)}, "bump redis")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 2))
	changed := hunkLines(runGit(t, e.work.dir, "diff", "-U0", e.baseSHA, e.headSHA))
	lines := changed["catalogs/v4.16/catalog.yaml"]
	if len(lines) != 1 {
		t.Fatalf("the pull request's hunks = %v, want one changed line", changed)
	}
	seen := map[string]bool{}
	for name, r := range runs {
		for _, a := range r.Annotations {
			seen[name] = true
			if !changed[a.Path][a.StartLine] {
				t.Errorf("%s annotates %s:%d, a line the pull request did not change (changed: %v): %s", name, a.Path, a.StartLine, changed[a.Path], a.Message)
			}
		}
	}
	for _, name := range []string{"catalogbot/ownership", "catalogbot/validate"} {
		if !seen[name] {
			t.Errorf("%s has no annotation; want one on the changed line", name)
		}
	}
}
