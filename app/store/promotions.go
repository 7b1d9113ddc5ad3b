package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// The catalog promotion's records (app/promotion), created with the other tables (CREATE TABLE IF NOT
// EXISTS, once, when the database is opened):
//
//   - catalogbot_promotion: one row per (repository, from, to, package): what the promotion did with the
//     package — its strategy, its state (skipped, unchanged, failed, committed, open, merged, closed), the
//     pull request and why. A retried or repeated promotion reads it first: a package with a pull request
//     never gets a second one, and one its owners closed stays closed.
//   - catalogbot_promotion_commit: each commit the App created on a promotion branch, with the promotion it
//     is. Only the App writes it: a promotion pull request is the App's (and, with the strategy always,
//     derived) only when every commit on it is here.
//   - catalogbot_promotion_tracking: where the promotion's tracking comment is (the issue or pull request
//     and the comment), so that it is edited, not written again.
var promotionSchema = []string{
	`CREATE TABLE IF NOT EXISTS catalogbot_promotion (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		from_version TEXT NOT NULL,
		to_version TEXT NOT NULL,
		package TEXT NOT NULL,
		strategy TEXT NOT NULL,
		state TEXT NOT NULL,
		pull BIGINT NOT NULL DEFAULT 0,
		reason TEXT NOT NULL DEFAULT '',
		updated_at BIGINT NOT NULL,
		PRIMARY KEY (owner, name, from_version, to_version, package))`,
	`CREATE TABLE IF NOT EXISTS catalogbot_promotion_commit (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		sha TEXT NOT NULL,
		from_version TEXT NOT NULL,
		to_version TEXT NOT NULL,
		package TEXT NOT NULL,
		strategy TEXT NOT NULL,
		base_sha TEXT NOT NULL,
		tree_sha TEXT NOT NULL,
		files TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		PRIMARY KEY (owner, name, sha))`,
	`CREATE TABLE IF NOT EXISTS catalogbot_promotion_tracking (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		from_version TEXT NOT NULL,
		to_version TEXT NOT NULL,
		issue BIGINT NOT NULL,
		comment_id BIGINT NOT NULL,
		PRIMARY KEY (owner, name, from_version, to_version))`,
}

// Promotion states.
const (
	PromotionSkipped   = "skipped"   // the strategy is never, or nothing to promote from: Reason says
	PromotionUnchanged = "unchanged" // the target catalog was there already
	PromotionFailed    = "failed"    // the package's files are malformed: Reason says where
	PromotionCommitted = "committed" // the App's commit is made, its pull request not yet known
	PromotionOpen      = "open"      // Pull is open
	PromotionMerged    = "merged"    // Pull merged
	PromotionClosed    = "closed"    // Pull closed unmerged: the owners declined it
)

// Promotion is one package's row.
type Promotion struct {
	From, To, Package string
	Strategy          string
	State             string
	Pull              int
	Reason            string
	Updated           time.Time
}

// PromotionCommit is one commit the App made for a promotion.
type PromotionCommit struct {
	SHA               string
	From, To, Package string
	Strategy          string
	Base, Tree        string
	Files             []string
	Created           time.Time
}

// PromotionStore keeps the rows above; implemented by every queue backend.
type PromotionStore interface {
	Promotion(ctx context.Context, owner, name, from, to, pkg string) (Promotion, bool, error)
	Promotions(ctx context.Context, owner, name, from, to string) ([]Promotion, error)
	SavePromotion(ctx context.Context, owner, name string, p Promotion) error
	RecordPromotionCommit(ctx context.Context, owner, name string, c PromotionCommit) error
	PromotionCommit(ctx context.Context, owner, name, sha string) (PromotionCommit, bool, error)
	// PromotionTracking is where the tracking comment of from → to is (ok false: nowhere yet).
	PromotionTracking(ctx context.Context, owner, name, from, to string) (issue int, comment int64, ok bool, err error)
	SetPromotionTracking(ctx context.Context, owner, name, from, to string, issue int, comment int64) error
}

// Promotions is the record of catalog promotions.
func (q *Queue) Promotions() PromotionStore { return q.b }

func (b *riverBackend[TTx]) Promotion(ctx context.Context, owner, name, from, to, pkg string) (Promotion, bool, error) {
	ps, err := b.promotions(ctx, ` AND package = $5`, strings.ToLower(owner), strings.ToLower(name), from, to, pkg)
	if err != nil || len(ps) == 0 {
		return Promotion{}, false, err
	}
	return ps[0], true, nil
}

func (b *riverBackend[TTx]) Promotions(ctx context.Context, owner, name, from, to string) ([]Promotion, error) {
	return b.promotions(ctx, ``, strings.ToLower(owner), strings.ToLower(name), from, to)
}

func (b *riverBackend[TTx]) promotions(ctx context.Context, where string, args ...any) ([]Promotion, error) {
	var out []Promotion
	err := b.db.query(ctx, `SELECT from_version, to_version, package, strategy, state, pull, reason, updated_at FROM catalogbot_promotion
		WHERE owner = $1 AND name = $2 AND from_version = $3 AND to_version = $4`+where+` ORDER BY package`, args,
		func(scan func(...any) error) error {
			var p Promotion
			var pull, at int64
			if err := scan(&p.From, &p.To, &p.Package, &p.Strategy, &p.State, &pull, &p.Reason, &at); err != nil {
				return err
			}
			p.Pull, p.Updated = int(pull), time.UnixMilli(at)
			out = append(out, p)
			return nil
		})
	return out, err
}

func (b *riverBackend[TTx]) SavePromotion(ctx context.Context, owner, name string, p Promotion) error {
	if p.Updated.IsZero() {
		p.Updated = time.Now()
	}
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_promotion (owner, name, from_version, to_version, package, strategy, state, pull, reason, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (owner, name, from_version, to_version, package) DO UPDATE SET strategy = excluded.strategy, state = excluded.state,
				pull = excluded.pull, reason = excluded.reason, updated_at = excluded.updated_at`,
			strings.ToLower(owner), strings.ToLower(name), p.From, p.To, p.Package, p.Strategy, p.State, p.Pull, p.Reason, p.Updated.UnixMilli())
		return err
	})
}

func (b *riverBackend[TTx]) RecordPromotionCommit(ctx context.Context, owner, name string, c PromotionCommit) error {
	files, err := json.Marshal(c.Files)
	if err != nil {
		return err
	}
	if c.Created.IsZero() {
		c.Created = time.Now()
	}
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_promotion_commit (owner, name, sha, from_version, to_version, package, strategy, base_sha, tree_sha, files, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (owner, name, sha) DO NOTHING`,
			strings.ToLower(owner), strings.ToLower(name), strings.ToLower(c.SHA), c.From, c.To, c.Package, c.Strategy,
			strings.ToLower(c.Base), strings.ToLower(c.Tree), string(files), c.Created.UnixMilli())
		return err
	})
}

func (b *riverBackend[TTx]) PromotionCommit(ctx context.Context, owner, name, sha string) (PromotionCommit, bool, error) {
	var c PromotionCommit
	found := false
	err := b.db.query(ctx, `SELECT sha, from_version, to_version, package, strategy, base_sha, tree_sha, files, created_at FROM catalogbot_promotion_commit
		WHERE owner = $1 AND name = $2 AND sha = $3`, []any{strings.ToLower(owner), strings.ToLower(name), strings.ToLower(sha)},
		func(scan func(...any) error) error {
			var files string
			var at int64
			if err := scan(&c.SHA, &c.From, &c.To, &c.Package, &c.Strategy, &c.Base, &c.Tree, &files, &at); err != nil {
				return err
			}
			c.Created = time.UnixMilli(at)
			found = true
			return json.Unmarshal([]byte(files), &c.Files)
		})
	return c, found, err
}

func (b *riverBackend[TTx]) PromotionTracking(ctx context.Context, owner, name, from, to string) (int, int64, bool, error) {
	var issue, comment int64
	found := false
	err := b.db.query(ctx, `SELECT issue, comment_id FROM catalogbot_promotion_tracking
		WHERE owner = $1 AND name = $2 AND from_version = $3 AND to_version = $4`, []any{strings.ToLower(owner), strings.ToLower(name), from, to},
		func(scan func(...any) error) error {
			found = true
			return scan(&issue, &comment)
		})
	return int(issue), comment, found, err
}

func (b *riverBackend[TTx]) SetPromotionTracking(ctx context.Context, owner, name, from, to string, issue int, comment int64) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_promotion_tracking (owner, name, from_version, to_version, issue, comment_id)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (owner, name, from_version, to_version) DO UPDATE SET issue = excluded.issue, comment_id = excluded.comment_id`,
			strings.ToLower(owner), strings.ToLower(name), from, to, issue, comment)
		return err
	})
}
