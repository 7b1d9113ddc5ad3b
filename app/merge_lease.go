package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"strings"
	"time"

	"github.com/riverqueue/river"
)

// The merge lease: one merge at a time per repository, across replicas. A merge job takes the repository's
// lease (a row of catalogbot_merge_lease naming the holder and when the lease ends) before it reads the base
// head it judges the merge on, and gives it back after the merge; a replica killed while holding it loses it
// when it ends. While another job holds it, a merge job waits a little and then comes back later.

// mergeLeaseSchema is the lease table, created with the merge tables.
const mergeLeaseSchema = `CREATE TABLE IF NOT EXISTS catalogbot_merge_lease (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		holder TEXT NOT NULL,
		until_at TEXT NOT NULL,
		PRIMARY KEY (owner, name))`

// Lease timing: repoLeaseTTL outlasts a merge job's judgement and merge call (bounded by mergeLease/2);
// leaseWait is how long a job waits for a busy lease before it is snoozed (short: a waiting job holds a
// worker that checks could use).
const (
	repoLeaseTTL = 2 * time.Minute
	leaseWait    = 2 * time.Second
)

// mergeLeaseStore is the database side of the lease (every queue backend).
type mergeLeaseStore interface {
	// takeLease takes the repository's lease for holder until until, when it is free, ended at now, or
	// already holder's.
	takeLease(ctx context.Context, owner, repo, holder string, now, until time.Time) (bool, error)
	dropLease(ctx context.Context, owner, repo, holder string) error
}

func (b *riverBackend[TTx]) takeLease(ctx context.Context, owner, repo, holder string, now, until time.Time) (bool, error) {
	taken := false
	err := b.inTx(ctx, func(tx TTx) error {
		n, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_merge_lease (owner, name, holder, until_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (owner, name) DO UPDATE SET holder = excluded.holder, until_at = excluded.until_at
			WHERE catalogbot_merge_lease.until_at < $5 OR catalogbot_merge_lease.holder = excluded.holder`,
			strings.ToLower(owner), strings.ToLower(repo), holder, dbTime(until), dbTime(now))
		taken = n == 1
		return err
	})
	return taken, err
}

func (b *riverBackend[TTx]) dropLease(ctx context.Context, owner, repo, holder string) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `DELETE FROM catalogbot_merge_lease WHERE owner = $1 AND name = $2 AND holder = $3`,
			strings.ToLower(owner), strings.ToLower(repo), holder)
		return err
	})
}

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
		ok, err := m.lease.takeLease(ctx, owner, repo, holder, now, now.Add(repoLeaseTTL))
		if err != nil {
			return nil, err
		}
		if ok {
			return func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := m.lease.dropLease(rctx, owner, repo, holder); err != nil {
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
