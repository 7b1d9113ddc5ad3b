package app

import (
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// statusEvent is the status event GitHub sends when a commit status is set.
func (e *e2eEnv) statusEvent(sha, context, state string) map[string]any {
	return map[string]any{
		"sha": sha, "state": state, "context": context, "installation": map[string]any{"id": e2eInstID},
		"repository": map[string]any{"full_name": "acme/catalog", "name": "catalog", "owner": map[string]any{"login": "acme"},
			"clone_url": e.git.URL("acme", "catalog"), "default_branch": "main"},
	}
}

func (e *e2eEnv) checkRunEvent(sha, name string, prs ...int) map[string]any {
	var list []any
	for _, n := range prs {
		list = append(list, map[string]any{"number": n})
	}
	return map[string]any{
		"action": "completed", "installation": map[string]any{"id": e2eInstID},
		"repository": map[string]any{"full_name": "acme/catalog", "name": "catalog", "owner": map[string]any{"login": "acme"},
			"clone_url": e.git.URL("acme", "catalog"), "default_branch": "main"},
		"check_run": map[string]any{"name": name, "head_sha": sha, "status": "completed", "conclusion": "success", "pull_requests": list},
	}
}

// A pull request waiting only for a required external check merges as soon as the check turns green: the
// status event (or another App's check_run completed) asks for the merge evaluation, no resync needed
// (resync is off here). Before, those events were ignored and the merge waited for the next resync.
func TestMergeFollowsExternalChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		green func(e *e2eEnv)
	}{
		{"commit status", func(e *e2eEnv) {
			if err := e.fake.SetStatus("acme", "catalog", e.headSHA, githubfake.Status{Context: "ci/jenkins", State: "success"}); err != nil {
				t.Fatal(err)
			}
			e.deliver(t, "status", e.statusEvent(e.headSHA, "ci/jenkins", "success"))
		}},
		{"another App's check run, fork (no pull request listed)", func(e *e2eEnv) {
			if _, err := e.fake.AddCheckRun("acme", "catalog", githubfake.CheckRun{Name: "ci/jenkins", HeadSHA: e.headSHA, Status: "completed", Conclusion: "success", AppID: 99}); err != nil {
				t.Fatal(err)
			}
			e.deliver(t, "check_run", e.checkRunEvent(e.headSHA, "ci/jenkins"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startOwnerE2E(t)
			if err := e.fake.SetProtection("acme", "catalog", "main", &githubfake.Protection{RequiredContexts: []string{"ci/jenkins"}}); err != nil {
				t.Fatal(err)
			}
			e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
			e.waitRuns(t, e.headSHA, 2)
			e.waitIdle(t)
			if n := len(e.fake.Merges()); n != 0 {
				t.Fatalf("merged %d times before the required check passed", n)
			}
			var said bool
			for _, c := range e.fake.Comments("acme", "catalog", 1) {
				said = said || strings.Contains(c.Body, `required check "ci/jenkins" is missing`)
			}
			if !said {
				t.Errorf("the status comment does not say the required check is missing: %+v", e.fake.Comments("acme", "catalog", 1))
			}
			tc.green(e)
			if merges := e.waitMerged(t, 20*time.Second); len(merges) != 1 || merges[0].HeadSHA != e.headSHA {
				t.Fatalf("merges = %+v after the required check passed, want one of %s", merges, e.headSHA[:8])
			}
		})
	}
}
