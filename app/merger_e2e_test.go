package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/merge"
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

// TestMergeEvaluationAfterChecks: the real server checks a pull request,
// records what the check saw, and the merge evaluation that follows explains
// in the status comment why it does not merge (validation failed, two
// checks neutral), on SQLite and PostgreSQL.
func TestMergeEvaluationAfterChecks(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := startE2EWith(t, backend, func(w *workRepo) (string, string) {
				base, head := commitEtcdPR(t, w, mergeTestPolicy)
				w.push("HEAD", "refs/pull/1/head")
				return base, head
			})
			e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
			e.waitRuns(t, e.headSHA, 4)
			e.waitIdle(t)

			st := e.srv.Queue().Merges()
			c, ok, err := st.LoadChecked(context.Background(), "acme", "catalog", 1)
			if err != nil || !ok {
				t.Fatalf("no record of the check: %v", err)
			}
			if c.HeadSHA != e.headSHA || c.BaseSHA != e.baseSHA || strings.Join(c.Touched, ",") != "etcd" || !strings.Contains(c.Policy, "automerge") {
				t.Errorf("recorded check = %+v", c)
			}
			deadline := time.Now().Add(30 * time.Second)
			var body string
			for body == "" && time.Now().Before(deadline) {
				for _, cm := range e.fake.Comments("acme", "catalog", 1) {
					if strings.HasPrefix(cm.Body, merge.StatusMarker) {
						body = cm.Body
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			for _, want := range []string{"check catalogbot/validate concluded failure", "check catalogbot/images concluded neutral"} {
				if !strings.Contains(body, want) {
					t.Errorf("status comment %q lacks %q", body, want)
				}
			}
			if n := len(e.fake.Merges()); n != 0 {
				t.Errorf("merges = %d, want 0", n)
			}
		})
	}
}
