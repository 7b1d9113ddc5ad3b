package store

import (
	"context"
	"strings"
	"time"
)

// The rebuild's state lives next to River's tables, one row per repository,
// created with CREATE TABLE IF NOT EXISTS like the merge tables:
//
//   - holder and lease_until (Unix milliseconds) are the lease that
//     serialises the builds of one repository across workers and replicas.
//     A lease rather than PostgreSQL's advisory locks: the same SQL works on
//     SQLite and PostgreSQL, it survives no connection (a killed replica's
//     lease simply expires), and it is never held across a long transaction.
//   - done_sha is the last commit whose build finished (pushed or refused),
//     so a superseded job knows whether the newest commit still needs one.
//   - failing_sha and failures count the failed tries of one commit's
//     build, so that the rebuild bounds its own retries (River's attempt
//     count does not reach the handler).
var rebuildSchema = []string{
	`CREATE TABLE IF NOT EXISTS catalogbot_rebuild (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		holder TEXT NOT NULL,
		lease_until BIGINT NOT NULL,
		done_sha TEXT NOT NULL,
		failing_sha TEXT NOT NULL,
		failures INTEGER NOT NULL,
		PRIMARY KEY (owner, name))`,
}

// RebuildState is a repository's row.
type RebuildState struct {
	Holder     string
	LeaseUntil time.Time
	DoneSHA    string
	FailingSHA string
	Failures   int
}

// RebuildStore is the database side of the rebuild, implemented by every
// queue backend (riverBackend over SQLite or PostgreSQL).
type RebuildStore interface {
	// acquireRebuild takes the repository's lease for holder until until,
	// when it is free, expired at now, or already holder's.
	AcquireRebuild(ctx context.Context, owner, name, holder string, now, until time.Time) (bool, error)
	ReleaseRebuild(ctx context.Context, owner, name, holder string) error
	LoadRebuild(ctx context.Context, owner, name string) (RebuildState, error)
	// finishRebuild records that sha's build finished and clears its failures.
	FinishRebuild(ctx context.Context, owner, name, sha string) error
	// failRebuild counts one more failed try of sha's build and returns the count.
	FailRebuild(ctx context.Context, owner, name, sha string) (int, error)
}

// Rebuilds is the record of catalog image rebuilds and their leases.
func (q *Queue) Rebuilds() RebuildStore { return q.b }

func (b *riverBackend[TTx]) AcquireRebuild(ctx context.Context, owner, name, holder string, now, until time.Time) (bool, error) {
	var got bool
	err := b.inTx(ctx, func(tx TTx) error {
		// On PostgreSQL a concurrent taker waits for the row lock and then
		// re-evaluates the WHERE against the committed row, so exactly one wins;
		// SQLite has a single writer.
		n, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_rebuild
			(owner, name, holder, lease_until, done_sha, failing_sha, failures)
			VALUES ($1, $2, $3, $4, '', '', 0)
			ON CONFLICT (owner, name) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
			WHERE catalogbot_rebuild.lease_until < $5 OR catalogbot_rebuild.holder = excluded.holder`,
			strings.ToLower(owner), strings.ToLower(name), holder, until.UnixMilli(), now.UnixMilli())
		got = n > 0
		return err
	})
	return got, err
}

func (b *riverBackend[TTx]) ReleaseRebuild(ctx context.Context, owner, name, holder string) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `UPDATE catalogbot_rebuild SET holder = '', lease_until = 0
			WHERE owner = $1 AND name = $2 AND holder = $3`, strings.ToLower(owner), strings.ToLower(name), holder)
		return err
	})
}

func (b *riverBackend[TTx]) LoadRebuild(ctx context.Context, owner, name string) (RebuildState, error) {
	var s RebuildState
	err := b.db.query(ctx, `SELECT holder, lease_until, done_sha, failing_sha, failures FROM catalogbot_rebuild
		WHERE owner = $1 AND name = $2`, []any{strings.ToLower(owner), strings.ToLower(name)},
		func(scan func(...any) error) error {
			var until int64
			if err := scan(&s.Holder, &until, &s.DoneSHA, &s.FailingSHA, &s.Failures); err != nil {
				return err
			}
			s.LeaseUntil = time.UnixMilli(until)
			return nil
		})
	return s, err
}

func (b *riverBackend[TTx]) FinishRebuild(ctx context.Context, owner, name, sha string) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `UPDATE catalogbot_rebuild SET done_sha = $3, failing_sha = '', failures = 0
			WHERE owner = $1 AND name = $2`, strings.ToLower(owner), strings.ToLower(name), sha)
		return err
	})
}

func (b *riverBackend[TTx]) FailRebuild(ctx context.Context, owner, name, sha string) (int, error) {
	if err := b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `UPDATE catalogbot_rebuild
			SET failures = CASE WHEN failing_sha = $3 THEN failures + 1 ELSE 1 END, failing_sha = $3
			WHERE owner = $1 AND name = $2`, strings.ToLower(owner), strings.ToLower(name), sha)
		return err
	}); err != nil {
		return 0, err
	}
	s, err := b.LoadRebuild(ctx, owner, name)
	return s.Failures, err
}
