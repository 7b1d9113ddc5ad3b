package app

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
)

// TestRecoveryResync: a PR whose webhook never arrived is found by the
// resync and checked once; a second pass finds nothing to do.
func TestRecoveryResync(t *testing.T) {
	e := startE2E(t, BackendSQLite)
	// An event we do not act on still records the repository and its clone URL.
	e.deliver(t, "pull_request", e.prEvent("labeled", e.headSHA))
	ctx := context.Background()
	if err := e.srv.recovery.Resync(ctx); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	e.waitRuns(t, e.headSHA, 4)
	e.waitIdle(t)
	if err := e.srv.recovery.Resync(ctx); err != nil {
		t.Fatalf("second Resync: %v", err)
	}
	e.waitIdle(t)
	if got := len(e.fake.CheckRuns("acme", "catalog", e.headSHA)); got != 4 {
		t.Errorf("check runs after a second resync = %d, want 4", got)
	}
}

// TestRecoveryRedeliver: a delivery GitHub could not hand over (we were
// down) is redelivered on request and then checked.
func TestRecoveryRedeliver(t *testing.T) {
	e := startE2E(t, BackendSQLite)
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
