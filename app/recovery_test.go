package app

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
)

// TestRecoveryResync: a PR whose webhook never arrived is found by the
// resync and checked once; a second pass finds nothing to do.
func TestRecoveryResync(t *testing.T) {
	e := startE2E(t, store.BackendSQLite)
	// An event we do not act on still records the repository and its clone URL.
	e.deliver(t, "pull_request", e.prEvent("assigned", e.headSHA))
	ctx := context.Background()
	if err := e.srv.recovery.Resync(ctx); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	e.waitRuns(t, e.headSHA, 4)
	if err := e.srv.recovery.Resync(ctx); err != nil {
		t.Fatalf("second Resync: %v", err)
	}
	// The head has all its runs: no second check job (other kinds may follow).
	if got := countJobs(t, e.srv.Queue(), jobs.KindCheckPR); got != 1 {
		t.Errorf("check jobs after a second resync = %d, want 1\n%s", got, dumpJobs(e.srv.Queue()))
	}
}

// TestRecoveryRedeliver: a delivery GitHub could not hand over (we were
// down) is redelivered on request and then checked.
func TestRecoveryRedeliver(t *testing.T) {
	e := startE2E(t, store.BackendSQLite)
	payload, _ := json.Marshal(e.prEvent("opened", e.headSHA))
	failed := e.fake.AddDelivery(githubfakeDelivery("pull_request", "opened", payload, http.StatusServiceUnavailable))
	if err := e.srv.recovery.Redeliver(context.Background()); err != nil {
		t.Fatalf("Redeliver: %v", err)
	}
	e.fake.Wait()
	e.waitRuns(t, e.headSHA, 4)
	var redelivered bool
	for _, d := range e.fake.Deliveries() {
		if d.GUID == failed.GUID && d.Redelivery && d.StatusCode == http.StatusAccepted {
			redelivered = true
		}
	}
	if !redelivered {
		t.Errorf("no successful redelivery of %s among %+v", failed.GUID, e.fake.Deliveries())
	}
}

// countJobs counts the jobs of one kind in a SQLite queue.
func countJobs(t *testing.T, q *store.Queue, kind string) int64 {
	t.Helper()
	var n int64
	if err := q.Query(context.Background(), `SELECT count(*) FROM river_job WHERE kind = $1`, []any{kind},
		func(scan func(...any) error) error { return scan(&n) }); err != nil {
		t.Fatal(err)
	}
	return n
}
