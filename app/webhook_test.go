package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/intake"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
)

const (
	testSHA  = "0123456789abcdef0123456789abcdef01234567"
	testSHA2 = "89abcdef0123456789abcdef0123456789abcdef"
)

func repoJSON() map[string]any {
	return map[string]any{"full_name": "acme/catalog", "name": "catalog", "owner": map[string]any{"login": "acme"},
		"clone_url": "https://github.example/acme/catalog.git", "default_branch": "main"}
}

func prPayload(action string, number int, sha string, extra map[string]any) []byte {
	p := map[string]any{
		"action": action, "number": number, "installation": map[string]any{"id": 42}, "repository": repoJSON(),
		"pull_request": map[string]any{"number": number, "state": "open", "draft": false,
			"head": map[string]any{"sha": sha, "ref": "feature"}, "base": map[string]any{"ref": "main", "sha": testSHA2},
			"user": map[string]any{"login": "alice"}},
	}
	for k, v := range extra {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	return b
}

func postWebhook(t testing.TB, h http.Handler, secret, event, id string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	if secret != "" {
		req.Header.Set("X-Hub-Signature-256", Sign([]byte(secret), body))
	}
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func newTestWebhook(t testing.TB, backend string, secrets ...string) (*intake.Webhook, *store.Queue, *Metrics) {
	t.Helper()
	q := openTestQueue(t, backend, testConfig(t), jobHandlers{})
	var ss []Secret
	for _, s := range secrets {
		ss = append(ss, NewSecret([]byte(s)))
	}
	m := NewMetrics()
	wh, err := newWebhook(ss, q, m, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return wh, q, m
}

func TestWebhookSignatures(t *testing.T) {
	body := prPayload("opened", 7, testSHA, nil)
	tests := []struct {
		name       string
		secrets    []string
		signWith   string // "" sends no signature
		header     string // overrides the signature header when set
		wantStatus int
		wantStored int64
	}{
		{"good signature", []string{"one"}, "one", "", http.StatusAccepted, 1},
		{"bad signature", []string{"one"}, "two", "", http.StatusUnauthorized, 0},
		{"missing signature", []string{"one"}, "", "", http.StatusUnauthorized, 0},
		{"rotation: old secret", []string{"new", "old"}, "old", "", http.StatusAccepted, 1},
		{"rotation: new secret", []string{"new", "old"}, "new", "", http.StatusAccepted, 1},
		{"sha1 only", []string{"one"}, "", "sha1=0000000000000000000000000000000000000000", http.StatusUnauthorized, 0},
		{"short hex", []string{"one"}, "", "sha256=00ff", http.StatusUnauthorized, 0},
		{"not hex", []string{"one"}, "", "sha256=" + strings.Repeat("zz", 32), http.StatusUnauthorized, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh, q, _ := newTestWebhook(t, store.BackendSQLite, tt.secrets...)
			req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
			if tt.signWith != "" {
				req.Header.Set("X-Hub-Signature-256", Sign([]byte(tt.signWith), body))
			}
			if tt.header != "" {
				req.Header.Set("X-Hub-Signature-256", tt.header)
			}
			req.Header.Set("X-GitHub-Event", "pull_request")
			req.Header.Set("X-GitHub-Delivery", "delivery-1")
			rec := httptest.NewRecorder()
			wh.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d (%s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if got := countRows(t, q, "catalogbot_delivery"); got != tt.wantStored {
				t.Errorf("deliveries stored = %d, want %d", got, tt.wantStored)
			}
			if got := countRows(t, q, "river_job"); got != tt.wantStored {
				t.Errorf("jobs = %d, want %d", got, tt.wantStored)
			}
		})
	}
}

func TestNewWebhookRefusesEmptySecret(t *testing.T) {
	if _, err := newWebhook(nil, nil, NewMetrics(), testLogger(t)); err == nil {
		t.Error("NewWebhook(no secrets) = nil error, want an error")
	}
	if _, err := newWebhook([]Secret{NewSecret(nil)}, nil, NewMetrics(), testLogger(t)); err == nil {
		t.Error("NewWebhook(empty secret) = nil error, want an error")
	}
}

func TestWebhookBodyLimit(t *testing.T) {
	wh, q, _ := newTestWebhook(t, store.BackendSQLite, "s")
	body := make([]byte, intake.MaxWebhookBody+1)
	rec := postWebhook(t, wh, "s", "pull_request", "big", body)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413", rec.Code)
	}
	if got := countRows(t, q, "catalogbot_delivery"); got != 0 {
		t.Errorf("deliveries = %d, want 0", got)
	}
}

func TestWebhookDuplicateAndUnknown(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			wh, q, _ := newTestWebhook(t, backend, "s")
			body := prPayload("synchronize", 7, testSHA, nil)
			if rec := postWebhook(t, wh, "s", "pull_request", "d-1", body); rec.Code != http.StatusAccepted {
				t.Fatalf("first delivery: status %d, want 202 (%s)", rec.Code, rec.Body)
			}
			// GitHub's redelivery keeps the delivery id: a no-op.
			if rec := postWebhook(t, wh, "s", "pull_request", "d-1", body); rec.Code != http.StatusOK {
				t.Errorf("redelivery: status %d, want 200", rec.Code)
			}
			// Unknown events are acknowledged and recorded, with no job.
			if rec := postWebhook(t, wh, "s", "star", "d-2", []byte(`{"action":"created"}`)); rec.Code != http.StatusAccepted {
				t.Errorf("unknown event: status %d, want 202", rec.Code)
			}
			if got := countRows(t, q, "catalogbot_delivery"); got != 2 {
				t.Errorf("deliveries = %d, want 2", got)
			}
			if got := countRows(t, q, "river_job"); got != 1 {
				t.Errorf("jobs = %d, want 1", got)
			}
		})
	}
}

func TestWebhookBadRequests(t *testing.T) {
	wh, q, _ := newTestWebhook(t, store.BackendSQLite, "s")
	tests := []struct {
		name, event, id string
		body            []byte
		want            int
	}{
		{"not json", "pull_request", "d1", []byte("{"), http.StatusBadRequest},
		{"no delivery id", "pull_request", "", prPayload("opened", 1, testSHA, nil), http.StatusBadRequest},
		{"no event", "", "d2", prPayload("opened", 1, testSHA, nil), http.StatusBadRequest},
		{"id with spaces", "pull_request", "a b", prPayload("opened", 1, testSHA, nil), http.StatusBadRequest},
	}
	for _, tt := range tests {
		if rec := postWebhook(t, wh, "s", tt.event, tt.id, tt.body); rec.Code != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, rec.Code, tt.want)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/webhook", nil)
	rec := httptest.NewRecorder()
	wh.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", rec.Code)
	}
	if got := countRows(t, q, "catalogbot_delivery"); got != 0 {
		t.Errorf("deliveries = %d, want 0", got)
	}
}

// failingStore stands for a database that fails mid-transaction.
type failingStore struct{}

func (failingStore) Record(context.Context, jobs.Delivery, jobs.Plan) (bool, error) {
	return false, errors.New("disk full")
}

func TestWebhookStoreFailure(t *testing.T) {
	// Through the real queue: the transaction fails after the job insert.
	wh, q, _ := newTestWebhook(t, store.BackendSQLite, "s")
	q.SetBeforeCommit(func() error { return errors.New("crash before commit") })
	body := prPayload("opened", 3, testSHA, nil)
	if rec := postWebhook(t, wh, "s", "pull_request", "d1", body); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("status = %d, want 503", rec.Code)
	}
	for _, table := range []string{"catalogbot_delivery", "river_job"} {
		if got := countRows(t, q, table); got != 0 {
			t.Errorf("%s = %d rows, want 0", table, got)
		}
	}
	// GitHub's redelivery then succeeds.
	q.SetBeforeCommit(nil)
	if rec := postWebhook(t, wh, "s", "pull_request", "d1", body); rec.Code != http.StatusAccepted {
		t.Errorf("redelivery: status = %d, want 202", rec.Code)
	}
	wh2, err := newWebhook([]Secret{NewSecret([]byte("s"))}, failingStore{}, NewMetrics(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if rec := postWebhook(t, wh2, "s", "pull_request", "d1", body); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("failing store: status = %d, want 503", rec.Code)
	}
}

func TestRouteEvent(t *testing.T) {
	inst := map[string]any{"id": 42}
	mk := func(m map[string]any) []byte {
		m["installation"] = inst
		if _, ok := m["repository"]; !ok {
			m["repository"] = repoJSON()
		}
		b, _ := json.Marshal(m)
		return b
	}
	check := func(sha string, n int) []any {
		return []any{jobs.CheckPRArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", Number: n, HeadSHA: sha,
			CloneURL: "https://github.example/acme/catalog.git"}}
	}
	tests := []struct {
		name  string
		event string
		body  []byte
		want  []any // job args, Reason ignored
	}{
		{"pr opened", "pull_request", prPayload("opened", 7, testSHA, nil), check(testSHA, 7)},
		{"pr synchronize", "pull_request", prPayload("synchronize", 7, testSHA, nil), check(testSHA, 7)},
		{"pr ready", "pull_request", prPayload("ready_for_review", 7, testSHA, nil), []any{jobs.MergeArgs{InstallationID: 42, Owner: "acme", Repo: "catalog",
			Number: 7, CloneURL: "https://github.example/acme/catalog.git", Reason: "pull_request.ready_for_review"}}},
		{"pr back to draft", "pull_request", prPayload("converted_to_draft", 7, testSHA, nil), []any{jobs.MergeArgs{InstallationID: 42, Owner: "acme", Repo: "catalog",
			Number: 7, CloneURL: "https://github.example/acme/catalog.git", Reason: "pull_request.converted_to_draft"}}},
		{"pr assigned", "pull_request", prPayload("assigned", 7, testSHA, nil), nil},
		{"pr edited title", "pull_request", prPayload("edited", 7, testSHA, map[string]any{"changes": map[string]any{"title": map[string]any{"from": "x"}}}), nil},
		{"pr edited base", "pull_request", prPayload("edited", 7, testSHA, map[string]any{"changes": map[string]any{"base": map[string]any{"ref": map[string]any{"from": "old"}}}}), check(testSHA, 7)},
		{"pr draft", "pull_request", mk(map[string]any{"action": "opened", "pull_request": map[string]any{"number": 7, "state": "open", "draft": true, "head": map[string]any{"sha": testSHA}}}), check(testSHA, 7)},
		{"pr bad sha", "pull_request", prPayload("opened", 7, "HEAD", nil), nil},
		{"suite requested", "check_suite", mk(map[string]any{"action": "requested", "check_suite": map[string]any{"head_sha": testSHA,
			"pull_requests": []any{map[string]any{"number": 3}, map[string]any{"number": 4}}}}), append(check(testSHA, 3), check(testSHA, 4)...)},
		{"suite fork (no PRs)", "check_suite", mk(map[string]any{"action": "rerequested", "check_suite": map[string]any{"head_sha": testSHA}}), nil},
		{"suite completed", "check_suite", mk(map[string]any{"action": "completed", "check_suite": map[string]any{"head_sha": testSHA,
			"pull_requests": []any{map[string]any{"number": 3}}, "app": map[string]any{"slug": "ci"}}}),
			[]any{jobs.MergeArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", Number: 3, CloneURL: "https://github.example/acme/catalog.git",
				Reason: "check_suite.completed: ci", After: "external:" + testSHA}}},
		{"external run completed, fork", "check_run", mk(map[string]any{"action": "completed", "check_run": map[string]any{"name": "ci/test",
			"head_sha": testSHA}}),
			[]any{jobs.MergeArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", HeadSHA: testSHA, CloneURL: "https://github.example/acme/catalog.git",
				Reason: "check_run.completed: ci/test"}}},
		{"our run completed", "check_run", mk(map[string]any{"action": "completed", "check_run": map[string]any{"name": "catalogbot/validate",
			"head_sha": testSHA, "pull_requests": []any{map[string]any{"number": 3}}}}), nil},
		{"status success", "status", mk(map[string]any{"sha": testSHA, "state": "success", "context": "ci/jenkins"}),
			[]any{jobs.MergeArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", HeadSHA: testSHA, CloneURL: "https://github.example/acme/catalog.git",
				Reason: "status: ci/jenkins"}}},
		{"status pending", "status", mk(map[string]any{"sha": testSHA, "state": "pending", "context": "ci/jenkins"}), nil},
		{"run rerequested", "check_run", mk(map[string]any{"action": "rerequested", "check_run": map[string]any{"name": "catalogbot/validate",
			"head_sha": testSHA, "external_id": "pr:9"}}), check(testSHA, 9)},
		{"run action", "check_run", mk(map[string]any{"action": "requested_action", "check_run": map[string]any{"name": "catalogbot/images",
			"head_sha": testSHA, "external_id": "pr:11"}, "requested_action": map[string]any{"identifier": "recheck"}}), check(testSHA, 11)},
		{"other app's run", "check_run", mk(map[string]any{"action": "rerequested", "check_run": map[string]any{"name": "ci/build",
			"head_sha": testSHA, "external_id": "pr:9"}}), nil},
		{"image run rerequested", "check_run", mk(map[string]any{"action": "rerequested", "check_run": map[string]any{"name": jobs.RebuildCheckRunName,
			"head_sha": testSHA, "external_id": "rebuild"}}),
			[]any{jobs.RebuildArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", Ref: "refs/heads/main", SHA: testSHA, CloneURL: "https://github.example/acme/catalog.git", Rerun: true}}},
		{"image run bad sha", "check_run", mk(map[string]any{"action": "rerequested", "check_run": map[string]any{"name": jobs.RebuildCheckRunName,
			"head_sha": "main", "external_id": "rebuild"}}), nil},
		{"run without external id", "check_run", mk(map[string]any{"action": "rerequested", "check_run": map[string]any{"name": "catalogbot/validate",
			"head_sha": testSHA, "pull_requests": []any{map[string]any{"number": 5}}}}), check(testSHA, 5)},
		{"review", "pull_request_review", mk(map[string]any{"action": "submitted", "review": map[string]any{"id": 5, "state": "approved",
			"user": map[string]any{"login": "bob"}}, "pull_request": map[string]any{"number": 7, "state": "open", "head": map[string]any{"sha": testSHA}}}),
			[]any{jobs.ReviewArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", Number: 7, HeadSHA: testSHA, ReviewID: 5, Reviewer: "bob", State: "approved", Action: "submitted"},
				jobs.CheckPRArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", Number: 7, HeadSHA: testSHA, CloneURL: "https://github.example/acme/catalog.git"}}},
		{"push default", "push", mk(map[string]any{"ref": "refs/heads/main", "after": testSHA}),
			[]any{jobs.RebuildArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", Ref: "refs/heads/main", SHA: testSHA, CloneURL: "https://github.example/acme/catalog.git"},
				jobs.MergeArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", CloneURL: "https://github.example/acme/catalog.git", Base: testSHA, BaseRef: "main", Reason: "push"},
				// The push lists no commits: it may change the policy, which the promotion job compares.
				jobs.PromoteArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", CloneURL: "https://github.example/acme/catalog.git", DefaultBranch: "main", After: testSHA}}},
		{"push other branch", "push", mk(map[string]any{"ref": "refs/heads/feature", "after": testSHA}), nil},
		{"push delete", "push", mk(map[string]any{"ref": "refs/heads/main", "after": testSHA, "deleted": true}), nil},
		{"merge group", "merge_group", mk(map[string]any{"action": "checks_requested", "merge_group": map[string]any{"head_sha": testSHA,
			"head_ref": "refs/heads/gh-readonly-queue/main/pr-3-" + testSHA, "base_sha": testSHA, "base_ref": "refs/heads/main"}}),
			[]any{jobs.MergeGroupArgs{InstallationID: 42, Owner: "acme", Repo: "catalog", HeadSHA: testSHA, HeadRef: "refs/heads/gh-readonly-queue/main/pr-3-" + testSHA,
				BaseSHA: testSHA, BaseRef: "refs/heads/main", CloneURL: "https://github.example/acme/catalog.git"}}},
		{"merge group destroyed", "merge_group", mk(map[string]any{"action": "destroyed", "merge_group": map[string]any{"head_sha": testSHA,
			"head_ref": "refs/heads/gh-readonly-queue/main/pr-3", "base_sha": testSHA, "base_ref": "refs/heads/main"}}), nil},
		{"merge group bad ref", "merge_group", mk(map[string]any{"action": "checks_requested", "merge_group": map[string]any{"head_sha": testSHA,
			"head_ref": "--upload-pack=x", "base_sha": testSHA, "base_ref": "refs/heads/main"}}), nil},
		{"unknown", "star", mk(map[string]any{"action": "created"}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p, err := intake.Route("", tt.event, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			var got []any
			for _, j := range p.Jobs {
				switch a := j.Args.(type) {
				case jobs.CheckPRArgs:
					a.Reason = ""
					got = append(got, a)
				default:
					got = append(got, a)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("jobs = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("job %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestRouteInstallationEvents(t *testing.T) {
	repos := []any{map[string]any{"full_name": "acme/a"}, map[string]any{"full_name": "acme/b"}}
	body := func(m map[string]any) []byte {
		m["installation"] = map[string]any{"id": 9}
		b, _ := json.Marshal(m)
		return b
	}

	_, p, err := intake.Route("i", "installation", body(map[string]any{"action": "created", "repositories": repos}))
	if err != nil || len(p.UpsertRepos) != 2 || p.UpsertRepos[1] != (jobs.InstalledRepo{InstallationID: 9, Owner: "acme", Name: "b"}) {
		t.Errorf("installation.created plan = %+v, %v", p, err)
	}
	_, p, _ = intake.Route("i", "installation", body(map[string]any{"action": "deleted"}))
	if p.RemoveInstID != 9 {
		t.Errorf("installation.deleted RemoveInstID = %d, want 9", p.RemoveInstID)
	}
	_, p, _ = intake.Route("i", "installation_repositories", body(map[string]any{"action": "removed", "repositories_removed": repos[:1]}))
	if len(p.RemoveRepos) != 1 || p.RemoveRepos[0].Name != "a" || len(p.UpsertRepos) != 0 {
		t.Errorf("installation_repositories.removed plan = %+v", p)
	}

	// Through the queue: install, then remove one repository.
	wh, q, _ := newTestWebhook(t, store.BackendSQLite, "s")
	postWebhook(t, wh, "s", "installation", "i1", body(map[string]any{"action": "created", "repositories": repos}))
	postWebhook(t, wh, "s", "installation_repositories", "i2", body(map[string]any{"action": "removed", "repositories_removed": repos[:1]}))
	got, err := q.InstalledRepos(context.Background())
	if err != nil || len(got) != 1 || got[0].Name != "b" {
		t.Errorf("InstalledRepos = %+v, %v; want acme/b only", got, err)
	}
	// A pull_request event fills the clone URL in.
	postWebhook(t, wh, "s", "pull_request", "p1", prPayload("closed", 1, testSHA, nil))
	got, _ = q.InstalledRepos(context.Background())
	if len(got) != 2 || got[1].CloneURL == "" {
		t.Errorf("InstalledRepos after a pull_request event = %+v, want acme/catalog with its clone URL", got)
	}
}
