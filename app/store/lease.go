package store

import (
	"context"
	"strings"
	"time"
)

// mergeLeaseSchema is the lease table, created with the merge tables.
const mergeLeaseSchema = `CREATE TABLE IF NOT EXISTS catalogbot_merge_lease (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		holder TEXT NOT NULL,
		until_at TEXT NOT NULL,
		PRIMARY KEY (owner, name))`

// Leases is the merge lease of each repository.
func (q *Queue) Leases() LeaseStore { return q.b }

// LeaseStore is the database side of the lease (every queue backend).
type LeaseStore interface {
	// TakeLease takes the repository's lease for holder until until, when it is free, ended at now, or
	// already holder's.
	TakeLease(ctx context.Context, owner, repo, holder string, now, until time.Time) (bool, error)
	DropLease(ctx context.Context, owner, repo, holder string) error
	// LeaseBusy says whether the repository's lease is held at now (by anyone).
	LeaseBusy(ctx context.Context, owner, repo string, now time.Time) (bool, error)
}

func (b *riverBackend[TTx]) LeaseBusy(ctx context.Context, owner, repo string, now time.Time) (bool, error) {
	busy := false
	err := b.db.query(ctx, `SELECT 1 FROM catalogbot_merge_lease WHERE owner = $1 AND name = $2 AND until_at >= $3`,
		[]any{strings.ToLower(owner), strings.ToLower(repo), dbTime(now)}, func(scan func(...any) error) error {
			busy = true
			return nil
		})
	return busy, err
}

func (b *riverBackend[TTx]) TakeLease(ctx context.Context, owner, repo, holder string, now, until time.Time) (bool, error) {
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

func (b *riverBackend[TTx]) DropLease(ctx context.Context, owner, repo, holder string) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `DELETE FROM catalogbot_merge_lease WHERE owner = $1 AND name = $2 AND holder = $3`,
			strings.ToLower(owner), strings.ToLower(repo), holder)
		return err
	})
}
