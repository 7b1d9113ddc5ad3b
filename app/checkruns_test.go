package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/google/go-github/v62/github"
)

var checkNames = []string{"catalogbot/ownership", "catalogbot/validate", "catalogbot/crd-safety", "catalogbot/images"}

func findings(n int, file string) []catalog.Finding {
	out := make([]catalog.Finding, n)
	for i := range out {
		sev := catalog.SeverityError
		if i%3 == 0 {
			sev = catalog.SeverityWarning
		}
		out[i] = catalog.Finding{Rule: "channel.multiple-heads", Severity: sev, Position: catalog.Position{File: file, Line: i + 1, Column: 3}, Message: fmt.Sprintf("finding %d", i), Hint: "fix it"}
	}
	return out
}

func TestCheckRunReporterStartAndComplete(t *testing.T) {
	e := newFakeEnv(t, ghapp.RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	head := githubfake.MakeSHA("head")
	rep := ghapp.NewCheckRunReporter(nil)
	ids, err := rep.Start(ctx, c, testOwner, testRepo, head, 12, "j1", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 4 {
		t.Fatalf("Start created %d runs, want 4", len(ids))
	}
	for _, r := range e.fake.CheckRuns(testOwner, testRepo, head) {
		if r.Status != "in_progress" || r.ExternalID != "pr:12/job:j1" {
			t.Errorf("run %s: status %q external_id %q, want in_progress pr:12/job:j1", r.Name, r.Status, r.ExternalID)
		}
	}

	fs := findings(120, "operators/etcd/catalog.yaml")
	fs = append(fs,
		catalog.Finding{Rule: "policy.unreadable", Severity: catalog.SeverityError, Message: "no file here", Hint: "add a policy"},
		catalog.Finding{Rule: "bundle.bad", Severity: catalog.SeverityError, Position: catalog.Position{File: "operators/etcd/bundle.json", Column: 7}, Message: "no line"},
		catalog.Finding{Rule: "ignored", Severity: catalog.SeverityIgnore, Position: catalog.Position{File: "x", Line: 1}, Message: "dropped"},
	)
	res := checks.Result{Check: "validation", Conclusion: checks.Failure, Title: "Validation failed", Summary: "## Validation\n\nThe catalog is invalid.", Findings: fs}
	id := ids["catalogbot/validate"]
	// A fresh reporter (another replica) must find the run's name itself.
	if err := ghapp.NewCheckRunReporter(nil).Complete(ctx, c, testOwner, testRepo, id, res, "```mermaid\nflowchart LR\n```\n"); err != nil {
		t.Fatal(err)
	}
	var run githubfake.CheckRun
	for _, r := range e.fake.CheckRuns(testOwner, testRepo, head) {
		if r.ID == id {
			run = r
		}
	}
	if run.Name != "catalogbot/validate" || run.Status != "completed" || run.Conclusion != "failure" {
		t.Errorf("run = %q %q %q, want catalogbot/validate completed failure", run.Name, run.Status, run.Conclusion)
	}
	if len(run.Annotations) != 121 {
		t.Fatalf("annotations = %d, want 121 (120 + the one without a line)", len(run.Annotations))
	}
	if run.Requests != 4 {
		t.Errorf("requests on the run = %d, want 4 (create, two batches of 50 in progress, completion with the rest)", run.Requests)
	}
	byMsg := map[string]githubfake.Annotation{}
	for _, a := range run.Annotations {
		byMsg[strings.SplitN(a.Message, "\n", 2)[0]] = a
	}
	a7 := byMsg["finding 7"]
	if a7.Path != "operators/etcd/catalog.yaml" || a7.StartLine != 8 || a7.EndLine != 8 || a7.Level != "failure" || a7.StartColumn == nil || *a7.StartColumn != 3 {
		t.Errorf("annotation of finding 7 = %+v, want catalog.yaml:8 col 3 failure", a7)
	}
	if a := byMsg["finding 6"]; a.Level != "warning" {
		t.Errorf("warning finding annotated as %q, want warning", a.Level)
	}
	if a := byMsg["no line"]; a.StartLine != 1 || a.StartColumn != nil {
		t.Errorf("finding without a line: line %d columns %v, want line 1 without columns", a.StartLine, a.StartColumn)
	}
	if _, ok := byMsg["dropped"]; ok {
		t.Error("an ignored finding was annotated")
	}
	if !strings.Contains(run.Summary, "no file here") || !strings.Contains(run.Summary, "```mermaid") || !strings.HasPrefix(run.Summary, "## Validation") {
		t.Errorf("summary lacks the result summary, the file-less finding or the extra markdown:\n%s", run.Summary)
	}
	if !strings.Contains(run.Text, "operators/etcd/catalog.yaml:8:3") {
		t.Errorf("text does not list the findings:\n%.300s", run.Text)
	}
	if len(run.Actions) != 1 || run.Actions[0].Identifier != jobs.RerunActionID {
		t.Errorf("actions = %+v, want the Re-run button", run.Actions)
	}
}

func TestCheckRunReporterLongSummaryIsAccepted(t *testing.T) {
	e := newFakeEnv(t, ghapp.RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	head := githubfake.MakeSHA("head")
	rep := ghapp.NewCheckRunReporter(nil)
	ids, err := rep.Start(ctx, c, testOwner, testRepo, head, 3, "j1", []string{"catalogbot/images"})
	if err != nil {
		t.Fatal(err)
	}
	res := checks.Result{Conclusion: checks.Success, Summary: strings.Repeat("ü", 70000)}
	if err := rep.Complete(ctx, c, testOwner, testRepo, ids["catalogbot/images"], res, strings.Repeat("x", 100)); err != nil {
		t.Fatalf("Complete with a 70,000-character summary: %v", err)
	}
	run := e.fake.CheckRuns(testOwner, testRepo, head)[0]
	if n := utf8.RuneCountInString(run.Summary); n > ghapp.MaxCheckRunOutput || n < ghapp.MaxCheckRunOutput-200 {
		t.Errorf("summary has %d characters, want just under %d", n, ghapp.MaxCheckRunOutput)
	}
	if !utf8.ValidString(run.Summary) || !strings.Contains(run.Summary, "truncated") {
		t.Error("summary is not valid UTF-8 or has no truncation note")
	}
	if run.Title != "Passed" {
		t.Errorf("title = %q, want the default Passed", run.Title)
	}
}

func TestRenderCheckRun(t *testing.T) {
	tests := []struct {
		name            string
		res             checks.Result
		wantConclusion  string
		wantTitle       string
		wantAnnotations int
		wantInSummary   string
	}{
		{"success without findings", checks.Result{Conclusion: checks.Success}, "success", "Passed", 0, ""},
		{"warnings only", checks.Result{Conclusion: checks.Success, Findings: findings(1, "a.yaml")}, "success", "Passed with 1 warning", 1, ""},
		{"errors", checks.Result{Conclusion: checks.Failure, Findings: findings(3, "a.yaml")}, "failure", "2 errors, 1 warning", 3, ""},
		{"could not run", checks.Result{Conclusion: checks.Neutral, Err: "registry timed out"}, "neutral", "Could not reach a verdict", 0, "registry timed out"},
		{"unknown conclusion", checks.Result{Conclusion: "weird"}, "neutral", "Passed", 0, ""},
		{"more than the per-run cap", checks.Result{Conclusion: checks.Failure, Findings: findings(ghapp.MaxAnnotationsPerRun+5, "a.yaml")}, "failure", "", ghapp.MaxAnnotationsPerRun, "5 more findings are not annotated"},
		{"multi-line title", checks.Result{Conclusion: checks.Failure, Title: "a\nb"}, "failure", "a b", 0, ""},
		{"hostile message stays text", checks.Result{Conclusion: checks.Failure, Findings: []catalog.Finding{{Rule: "r", Severity: catalog.SeverityError, Message: "<img src=x>\n# heading"}}}, "failure", "", 0, "&lt;img src=x&gt; # heading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ghapp.RenderCheckRun(tt.res, "")
			if got.Conclusion != tt.wantConclusion {
				t.Errorf("conclusion = %q, want %q", got.Conclusion, tt.wantConclusion)
			}
			if tt.wantTitle != "" && got.Title != tt.wantTitle {
				t.Errorf("title = %q, want %q", got.Title, tt.wantTitle)
			}
			if len(got.Annotations) != tt.wantAnnotations {
				t.Errorf("annotations = %d, want %d", len(got.Annotations), tt.wantAnnotations)
			}
			if !strings.Contains(got.Summary, tt.wantInSummary) {
				t.Errorf("summary %q does not contain %q", got.Summary, tt.wantInSummary)
			}
		})
	}
}

func TestTruncateOutput(t *testing.T) {
	for _, n := range []int{ghapp.MaxCheckRunOutput, ghapp.MaxCheckRunOutput + 1, 200000} {
		s := strings.Repeat("日", n)
		got := ghapp.TruncateOutput(s)
		if c := utf8.RuneCountInString(got); c > ghapp.MaxCheckRunOutput {
			t.Errorf("ghapp.TruncateOutput(%d runes) has %d runes, want at most %d", n, c, ghapp.MaxCheckRunOutput)
		}
		if n == ghapp.MaxCheckRunOutput && got != s {
			t.Errorf("ghapp.TruncateOutput changed a string at the limit")
		}
		if !utf8.ValidString(got) {
			t.Errorf("ghapp.TruncateOutput(%d runes) is not valid UTF-8", n)
		}
	}
}

func TestCheckRunExternalID(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{{jobs.CheckRunExternalID(42, jobs.CheckJobKey(7, time.Unix(1700000000, 5000))), 42, true}, {"pr:42", 42, true}, {"pr:42/x", 0, false},
		{"pr:0/job:1", 0, false}, {"pr:0", 0, false}, {"42", 0, false}, {"pr:x", 0, false}, {"", 0, false}} {
		got, ok := jobs.ParseCheckRunExternalID(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("jobs.ParseCheckRunExternalID(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// A job killed after Start is retried (by another process: a fresh
// reporter): it takes over its runs still in progress instead of creating a
// second set; another PR on the same head and a later job (a re-run) get
// runs of their own.
func TestCheckRunReporterStartResumesInProgressRuns(t *testing.T) {
	e := newFakeEnv(t, ghapp.RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	head := githubfake.MakeSHA("resume")
	first, err := ghapp.NewCheckRunReporter(nil).Start(ctx, c, testOwner, testRepo, head, 5, "j1", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	rep := ghapp.NewCheckRunReporter(nil)
	again, err := rep.Start(ctx, c, testOwner, testRepo, head, 5, "j1", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range first {
		if again[name] != id {
			t.Errorf("%s: retried Start gave run %d, want the in-progress run %d", name, again[name], id)
		}
	}
	// Another PR on the same head gets its own runs.
	other, err := rep.Start(ctx, c, testOwner, testRepo, head, 6, "j2", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range first {
		if other[name] == id || other[name] == 0 {
			t.Errorf("%s: PR 6 got run %d, want one of its own (PR 5 has %d)", name, other[name], id)
		}
	}
	for _, id := range again {
		if err := rep.Complete(ctx, c, testOwner, testRepo, id, checks.Result{Conclusion: checks.Success, Title: "ok"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	// The same job once more (killed after its last report): nothing left to do.
	if done, err := rep.Start(ctx, c, testOwner, testRepo, head, 5, "j1", checkNames); err != nil || len(done) != 0 {
		t.Errorf("Start of a job whose runs are completed = %v, %v; want none", done, err)
	}
	rerun, err := rep.Start(ctx, c, testOwner, testRepo, head, 5, "j3", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range first {
		if rerun[name] == id || rerun[name] == 0 {
			t.Errorf("%s: a re-run (a new job) got run %d, want a new one", name, rerun[name])
		}
	}
	if n := len(e.fake.CheckRuns(testOwner, testRepo, head)); n != 12 {
		t.Errorf("runs on the head = %d, want 12 (PR 5, PR 6, the re-run)", n)
	}
	if _, err := rep.Start(ctx, c, testOwner, testRepo, head, 5, "", checkNames); err == nil {
		t.Error("Start without a job key succeeded")
	}
}

// A job killed after completing some of its runs is retried (by another
// process: a fresh reporter): the retry must give back only the runs still
// in progress and create none, so the head ends with one completed run per
// name.
func TestCheckRunReporterRetryKeepsCompletedRuns(t *testing.T) {
	e := newFakeEnv(t, ghapp.RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	head := githubfake.MakeSHA("partly-done")
	first, err := ghapp.NewCheckRunReporter(nil).Start(ctx, c, testOwner, testRepo, head, 5, "j1", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range checkNames[:2] {
		if err := ghapp.NewCheckRunReporter(nil).Complete(ctx, c, testOwner, testRepo, first[name], checks.Result{Conclusion: checks.Success}, ""); err != nil {
			t.Fatal(err)
		}
	}
	again, err := ghapp.NewCheckRunReporter(nil).Start(ctx, c, testOwner, testRepo, head, 5, "j1", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 || again[checkNames[2]] != first[checkNames[2]] || again[checkNames[3]] != first[checkNames[3]] {
		t.Errorf("retried Start = %v, want only the two runs still in progress %v", again, first)
	}
	if n := len(e.fake.CheckRuns(testOwner, testRepo, head)); n != 4 {
		t.Errorf("runs on the head after the retry = %d, want 4", n)
	}
}

// A check job whose attempt fails for a passing reason (here the PR's head
// is not yet fetchable) leaves its runs in progress, saying it will try
// again, and the next attempt completes those same runs: one run per name.
func TestCheckPRRetryReportsOnTheSameRuns(t *testing.T) {
	var head string
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		var base string
		base, head = commitEtcdPR(t, w, e2ePolicy)
		return base, head // refs/pull/1/head is pushed below, after the first attempt failed
	})
	e.deliver(t, "pull_request", e.prEvent("opened", head))
	deadline := time.Now().Add(60 * time.Second)
	for {
		runs := e.fake.CheckRuns("acme", "catalog", head)
		noted := 0
		for _, r := range runs {
			if r.Status == "completed" {
				t.Fatalf("%s completed after a passing failure: %q %q", r.Name, r.Conclusion, r.Title)
			}
			if strings.Contains(r.Summary, "will try again") {
				noted++
			}
		}
		if noted == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failed attempt did not note the retry on its 4 runs: %+v", runs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.work.push(head, "refs/pull/1/head")
	runs := e.waitRuns(t, head, 4)
	e.waitIdle(t)
	runs = e.fake.CheckRuns("acme", "catalog", head)
	if len(runs) != 4 {
		t.Fatalf("runs on the head = %d, want 4 (the retry reports on the first attempt's runs)", len(runs))
	}
	for _, r := range runs {
		if r.Status != "completed" || strings.HasPrefix(r.Title, "Could not run") || strings.Contains(r.Summary, "will try again") {
			t.Errorf("%s: %s %s %q, want the checks' result", r.Name, r.Status, r.Conclusion, r.Title)
		}
	}
}

// A failed attempt leaves its runs in progress to be completed by the next
// one; when the PR's head has moved by then, the next attempt drops the
// check but still closes those runs as superseded rather than leaving them
// spinning on the old head.
func TestCheckPRRetryClosesRunsOfASupersededHead(t *testing.T) {
	var head string
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		var base string
		base, head = commitEtcdPR(t, w, e2ePolicy)
		return base, head // refs/pull/1/head is never pushed: every attempt on head fails
	})
	e.deliver(t, "pull_request", e.prEvent("opened", head))
	deadline := time.Now().Add(60 * time.Second)
	for noted := 0; noted < 4; {
		noted = 0
		for _, r := range e.fake.CheckRuns("acme", "catalog", head) {
			if strings.Contains(r.Summary, "will try again") {
				noted++
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failed attempt did not note the retry on its 4 runs")
		}
		time.Sleep(50 * time.Millisecond)
	}
	newHead := strings.Repeat("b", 40)
	if err := e.fake.PushPullRequest("acme", "catalog", 1, newHead); err != nil {
		t.Fatal(err)
	}
	for {
		runs := e.fake.CheckRuns("acme", "catalog", head)
		done := 0
		for _, r := range runs {
			if r.Status == "completed" {
				if r.Conclusion != "neutral" || r.Title != "Superseded" || !strings.Contains(r.Summary, newHead) {
					t.Fatalf("%s completed %s %q %q, want neutral Superseded naming %s", r.Name, r.Conclusion, r.Title, r.Summary, newHead)
				}
				done++
			}
		}
		if len(runs) != 4 {
			t.Fatalf("runs on the old head = %d, want the first attempt's 4", len(runs))
		}
		if done == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs of the superseded head left in progress: %+v", runs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A job killed while adding a run's annotations leaves the run in progress
// with some of them; the retry (which reuses that run) adds only the rest,
// so the run ends with each annotation once.
func TestCheckRunReporterCompleteResumesAnnotations(t *testing.T) {
	e := newFakeEnv(t, ghapp.RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	head := githubfake.MakeSHA("head")
	rep := ghapp.NewCheckRunReporter(nil)
	ids, err := rep.Start(ctx, c, testOwner, testRepo, head, 12, "j1", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	id := ids["catalogbot/validate"]
	res := checks.Result{Check: "validation", Conclusion: checks.Failure, Title: "Validation failed", Summary: "invalid",
		Findings: findings(120, "operators/etcd/catalog.yaml")}
	// The killed attempt got its first batch of 50 in.
	r := ghapp.RenderCheckRun(res, "")
	if _, _, err := c.Checks.UpdateCheckRun(ctx, testOwner, testRepo, id, github.UpdateCheckRunOptions{Name: "catalogbot/validate",
		Output: &github.CheckRunOutput{Title: github.String(r.Title), Summary: github.String(r.Summary), Annotations: r.Annotations[:ghapp.MaxAnnotationsPerRequest]}}); err != nil {
		t.Fatal(err)
	}
	if err := rep.Complete(ctx, c, testOwner, testRepo, id, res, ""); err != nil {
		t.Fatal(err)
	}
	for _, run := range e.fake.CheckRuns(testOwner, testRepo, head) {
		if run.ID != id {
			continue
		}
		seen := map[string]int{}
		for _, a := range run.Annotations {
			seen[a.Message]++
		}
		if run.Status != "completed" || len(run.Annotations) != 120 || len(seen) != 120 {
			t.Errorf("run %s with %d annotations (%d distinct), want completed with the 120 findings once each", run.Status, len(run.Annotations), len(seen))
		}
	}
	// Completing it again (another retry) changes nothing.
	if err := rep.Complete(ctx, c, testOwner, testRepo, id, res, ""); err != nil {
		t.Fatal(err)
	}
	for _, run := range e.fake.CheckRuns(testOwner, testRepo, head) {
		if run.ID == id && len(run.Annotations) != 120 {
			t.Errorf("a second completion left %d annotations, want 120", len(run.Annotations))
		}
	}
}
