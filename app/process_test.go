package app

import (
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/store"
)

// TestPipelineInvalidPolicy: the base branch's policy does not parse, so
// nothing can be checked. Every run says so (neutral, never a pass) and the
// job is not retried.
func TestPipelineInvalidPolicy(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		base, head := commitEtcdPR(t, w, "version: 1\nowners: {\n")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := e.waitRuns(t, e.headSHA, 4)
	e.waitIdle(t)
	if got := len(e.fake.CheckRuns("acme", "catalog", e.headSHA)); got != 4 {
		t.Errorf("check runs = %d, want 4 (no retry)", got)
	}
	for _, r := range runs {
		if r.Conclusion != "neutral" || !strings.Contains(r.Summary, ".catalogbot.yaml") {
			t.Errorf("%s: %q %q, want neutral naming .catalogbot.yaml", r.Name, r.Conclusion, r.Summary)
		}
		if strings.Contains(r.Summary, "try again") {
			t.Errorf("%s promises a retry for a permanent failure: %q", r.Name, r.Summary)
		}
	}
}
