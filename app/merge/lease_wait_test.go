package merge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/jobs"
)

// While another merge of the repository holds its lease, an evaluation waits and is snoozed without a single
// GitHub request (a replica killed holding the lease keeps it busy for minutes); once the lease is free it reads
// the facts and merges.
func TestEvaluationWaitsForTheLeaseWithoutRequests(t *testing.T) {
	e := newMergeEnv(t, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	if ok, err := e.q.Leases().TakeLease(ctx, testOwner, testRepo, "killed-replica", now, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("taking the lease: %v %v", ok, err)
	}
	before := len(e.fake.Requests())
	err := e.m.Evaluate(ctx, jobs.MergeArgs{InstallationID: testInstID, Owner: testOwner, Repo: testRepo, Number: 1, Reason: "test"})
	var snooze *river.JobSnoozeError
	if !errors.As(err, &snooze) {
		t.Fatalf("Evaluate with the lease held elsewhere: %v, want a snooze", err)
	}
	if n := len(e.fake.Requests()) - before; n > 1 { // the installation token at most
		t.Errorf("%d GitHub requests while the lease was busy, want none: %+v", n, e.fake.Requests()[before:])
	}
	if err := e.q.Leases().DropLease(ctx, testOwner, testRepo, "killed-replica"); err != nil {
		t.Fatal(err)
	}
	e.evaluate(t)
	if len(e.fake.Merges()) != 1 {
		t.Fatalf("merges after the lease came free: %+v", e.fake.Merges())
	}
}
