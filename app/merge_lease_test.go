package app

import (
	"context"
	"testing"
	"time"
)

// The merge lease on both databases: one holder at a time per repository; the holder may take it again; a
// lease that ended (its replica died) goes to the next; giving it back frees it at once; repositories do not
// share it.
func TestMergeLeaseStore(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			q := openTestQueue(t, backend, testConfig(t), jobHandlers{})
			s := q.Leases()
			const leaseTTL = 2 * time.Minute // as a merge job takes it
			t0 := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
			take := func(repo, holder string, now time.Time) bool {
				t.Helper()
				ok, err := s.TakeLease(ctx, "Acme", repo, holder, now, now.Add(leaseTTL))
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !take("catalog", "a", t0) {
				t.Fatal("a free lease was not taken")
			}
			if take("catalog", "b", t0.Add(time.Second)) {
				t.Error("b took a lease a holds")
			}
			if !take("CATALOG", "a", t0.Add(2*time.Second)) {
				t.Error("a could not take its own lease again")
			}
			if !take("other", "b", t0.Add(time.Second)) {
				t.Error("another repository's lease was busy")
			}
			if !take("catalog", "b", t0.Add(2*time.Second+leaseTTL+time.Millisecond)) {
				t.Error("b could not take a lease that ended (its holder died)")
			}
			if err := s.DropLease(ctx, "acme", "catalog", "a"); err != nil { // a late give-back of a lost lease
				t.Fatal(err)
			}
			if take("catalog", "c", t0.Add(3*time.Second+leaseTTL)) {
				t.Error("a's late give-back freed b's lease")
			}
			if err := s.DropLease(ctx, "acme", "catalog", "b"); err != nil {
				t.Fatal(err)
			}
			if !take("catalog", "c", t0.Add(3*time.Second+leaseTTL)) {
				t.Error("a lease given back was not free")
			}
		})
	}
}
