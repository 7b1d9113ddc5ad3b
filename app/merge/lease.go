package merge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"time"

	"github.com/riverqueue/river"
)

// The merge lease: one merge at a time per repository, across replicas. A merge job takes the repository's
// lease (a row of catalogbot_merge_lease naming the holder and when the lease ends) before it reads the base
// head it judges the merge on, and gives it back after the merge; a replica killed while holding it loses it
// when it ends. While another job holds it, a merge job waits a little and then comes back later.

// Lease timing: repoLeaseTTL outlasts a merge job's judgement and merge call (bounded by mergeLease/2);
// leaseWait is how long a job waits for a busy lease before it is snoozed (short: a waiting job holds a
// worker that checks could use).
const (
	repoLeaseTTL = 2 * time.Minute
	leaseWait    = 2 * time.Second
)

// mergeLeaseHolder names one merge job's hold on a lease.
func mergeLeaseHolder() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// acquireLease waits up to leaseWait for the repository's merge lease; it returns the function that gives
// it back, or a snooze error for the job when the lease stays busy.
func (m *Merger) acquireLease(ctx context.Context, owner, repo string) (release func(), err error) {
	holder := mergeLeaseHolder()
	deadline := m.now().Add(leaseWait)
	for {
		now := m.now()
		ok, err := m.lease.TakeLease(ctx, owner, repo, holder, now, now.Add(repoLeaseTTL))
		if err != nil {
			return nil, err
		}
		if ok {
			return func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := m.lease.DropLease(rctx, owner, repo, holder); err != nil {
					m.log.Warn("giving the merge lease back (it ends by itself)", "repo", owner+"/"+repo, "err", err)
				}
			}, nil
		}
		if now.After(deadline) {
			m.stats.leaseWaits.Add(1)
			j, _ := rand.Int(rand.Reader, big.NewInt(2000))
			return nil, river.JobSnooze(time.Second + time.Duration(j.Int64())*time.Millisecond)
		}
		j, _ := rand.Int(rand.Reader, big.NewInt(150))
		t := time.NewTimer(50*time.Millisecond + time.Duration(j.Int64())*time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// waitLeaseFree waits up to leaseWait while another merge of the repository holds its lease, reading only the
// database; it returns a snooze error for the job when the lease stays busy. The evaluation calls it before it
// reads anything from GitHub: facts read while a merge is under way would be read again under the lease, and a
// replica killed holding the lease keeps it busy for up to repoLeaseTTL, through which every evaluation of the
// repository would otherwise read its facts every few seconds.
func (m *Merger) waitLeaseFree(ctx context.Context, owner, repo string) error {
	deadline := m.now().Add(leaseWait)
	for {
		busy, err := m.lease.LeaseBusy(ctx, owner, repo, m.now())
		if err != nil || !busy {
			return err
		}
		if m.now().After(deadline) {
			m.stats.leaseWaits.Add(1)
			j, _ := rand.Int(rand.Reader, big.NewInt(2000))
			return river.JobSnooze(time.Second + time.Duration(j.Int64())*time.Millisecond)
		}
		j, _ := rand.Int(rand.Reader, big.NewInt(150))
		t := time.NewTimer(50*time.Millisecond + time.Duration(j.Int64())*time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
