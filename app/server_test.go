package app

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
)

// blockingReview holds a job until its context ends, like a job caught by a shutdown.
type blockingReview struct{ started chan struct{} }

func (b blockingReview) HandleReview(ctx context.Context, _ jobs.ReviewArgs) error {
	close(b.started)
	<-ctx.Done()
	return ctx.Err()
}

// The review is a plain comment: it is recorded for the merge evaluation but
// asks for no new check, so the review job is the only one queued.
func reviewPayload() []byte {
	b, _ := json.Marshal(map[string]any{"action": "submitted", "installation": map[string]any{"id": 1}, "repository": repoJSON(),
		"review":       map[string]any{"id": 5, "state": "commented", "user": map[string]any{"login": "bob"}},
		"pull_request": map[string]any{"number": 7, "state": "open", "head": map[string]any{"sha": testSHA}}})
	return b
}

// TestServerShutdownReleasesJobs: a job still running when the grace period
// ends is cancelled and stays in the queue for a later run.
func TestServerShutdownReleasesJobs(t *testing.T) {
	cfg := testConfig(t)
	cfg.ShutdownTimeout = 500 * time.Millisecond
	br := blockingReview{started: make(chan struct{})}
	srv, err := NewServer(context.Background(), cfg, testLogger(t), withGitHubDeps(&githubDeps{}), WithChecks(), withReviewHandler(br))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before Run = %d, want 503", rec.Code)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	waitReady(t, base)

	code, err := postSigned(base+"/webhook", "s3cret", "review-1", "pull_request_review", reviewPayload())
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("review delivery = %d, %v; want 202", code, err)
	}
	select {
	case <-br.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the review job did not start")
	}
	m := scrape(t, base)
	for _, name := range []string{"catalogbot_webhook_deliveries_received_total", "catalogbot_queue_depth",
		"catalogbot_queue_oldest_available_seconds", "catalogbot_webhook_ack_seconds", "go_goroutines",
		"catalogbot_parse_cache_lookups_total", "catalogbot_parse_cache_budget_bytes", "catalogbot_parse_cache_bytes",
		"catalogbot_file_index_lookups_total", "catalogbot_file_index_entries"} {
		if !strings.Contains(m, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Logf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after shutdown")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("shutdown took %s, want about the 500ms grace period", d)
	}

	// Reopen the database: the job is still there, to be retried.
	q := openTestQueueAt(t, cfg)
	st, err := q.Stats(context.Background())
	if err != nil || st.Depth != 1 {
		t.Errorf("queue after shutdown = %+v, %v; want the cancelled job kept (depth 1)", st, err)
	}
}

// openTestQueueAt opens the SQLite queue of an existing configuration.
func openTestQueueAt(t *testing.T, cfg *Config) *store.Queue {
	t.Helper()
	rc, err := newRiverConfig(cfg, jobHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := store.OpenQueue(context.Background(), store.QueueOptions{SQLitePath: cfg.SQLitePath(), River: rc, Log: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	return q
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("/readyz never answered 200")
}

// TestServersHaveOwnRegistries: two servers in one process register the
// same metrics without clashing.
func TestServersHaveOwnRegistries(t *testing.T) {
	for range 2 {
		srv, err := NewServer(context.Background(), testConfig(t), testLogger(t), withGitHubDeps(&githubDeps{}), WithChecks())
		if err != nil {
			t.Fatal(err)
		}
		srv.Close()
	}
}
