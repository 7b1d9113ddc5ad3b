package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The merge tables live in the App's database next to River's. They are
// created with CREATE TABLE IF NOT EXISTS by migrateTables, separate from the
// server core's numbered schema, so that the two evolve independently.
//
//   - catalogbot_pr_checked: what the last check of a pull request saw (the
//     head checked, the base commit whose policy applied, the touched
//     packages). The merge evaluation reads it instead of re-running the
//     checks: it is exactly what the checks judged, and it is shared by
//     every replica.
//   - catalogbot_merge_audit: one row per merge the bot made.
var mergeSchema = []string{
	`CREATE TABLE IF NOT EXISTS catalogbot_pr_checked (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		number BIGINT NOT NULL,
		head_sha TEXT NOT NULL,
		base_ref TEXT NOT NULL,
		base_sha TEXT NOT NULL,
		touched TEXT NOT NULL,
		policy TEXT NOT NULL,
		checked_at TEXT NOT NULL,
		PRIMARY KEY (owner, name, number))`,
	`CREATE TABLE IF NOT EXISTS catalogbot_merge_audit (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		number BIGINT NOT NULL,
		merged_sha TEXT NOT NULL,
		merge_commit TEXT NOT NULL,
		author TEXT NOT NULL,
		authorized_by TEXT NOT NULL,
		review_ids TEXT NOT NULL,
		policy_sha TEXT NOT NULL,
		check_run_ids TEXT NOT NULL,
		method TEXT NOT NULL,
		merged_at TEXT NOT NULL,
		PRIMARY KEY (owner, name, number, merged_sha))`,
	mergeLeaseSchema,
}

// CheckedPR is what the last completed check of a pull request saw.
type CheckedPR struct {
	Owner, Repo string
	Number      int
	HeadSHA     string
	BaseRef     string
	// BaseSHA is the base branch commit whose policy the check used.
	BaseSHA string
	Touched []string
	// ExtraOwners are owners of touched packages the policy does not list, read from the base revision
	// with the policy's leave (the reviewers of a bundle root's ci.yaml).
	ExtraOwners map[string][]string
	// Derived, when set, says the head was a catalog update derived from merged bundles (checks.Derivation).
	Derived string
	// AddReviewers are, for touched packages whose base ci.yaml says addReviewers: true, its reviewers.
	AddReviewers map[string][]string
	// Removals are the removals of released content the head makes that the policy's removals allow
	// (checks.AllowedRemovals): a merge records them with who vouched for them.
	Removals []string
	// Policy is the raw .catalogbot.yaml of BaseSHA ("" when it has none).
	Policy    string
	CheckedAt time.Time
}

// AuditEntry is one merge made by the bot.
type AuditEntry struct {
	Repo   string `json:"repo"` // owner/name
	Number int    `json:"number"`
	// MergedSHA is the pull request head that was merged (the checked one);
	// MergeCommit the commit the merge created on the base branch.
	MergedSHA   string `json:"merged_sha"`
	MergeCommit string `json:"merge_commit"`
	Author      string `json:"author"`
	// AuthorizedBy is "author <login>" or "approved by <logins>"; ReviewIDs
	// are the approving reviews that counted.
	AuthorizedBy string  `json:"authorized_by"`
	ReviewIDs    []int64 `json:"review_ids"`
	// ApprovalComments are the /approve comments that counted (their rows in the approval audit).
	ApprovalComments []int64 `json:"approval_comments,omitempty"`
	// Approvers are the logins whose approval of MergedSHA (review or /approve) counted; the images built
	// from the merge state them in their provenance.
	Approvers []string `json:"approvers,omitempty"`
	// PolicySHA is the base commit whose policy allowed the merge.
	PolicySHA   string           `json:"policy_sha"`
	CheckRunIDs map[string]int64 `json:"check_run_ids"`
	Method      string           `json:"method"`
	MergedAt    time.Time        `json:"merged_at"`
}

// MergeStore is the database side of merging, implemented by every queue
// backend (riverBackend, over SQLite or PostgreSQL).
type MergeStore interface {
	SaveChecked(ctx context.Context, c CheckedPR) error
	LoadChecked(ctx context.Context, owner, repo string, number int) (CheckedPR, bool, error)
	AddAudit(ctx context.Context, e AuditEntry) error
	ListAudit(ctx context.Context, repo string, limit int) ([]AuditEntry, error)
}

// Merges is the record of checked pull requests and the merge audit log.
func (q *Queue) Merges() MergeStore { return q.b }

// AuditLog lists the bot's merges, newest first; repo ("owner/name", case
// insensitive) filters them when not empty; limit bounds the rows (0: 1000).
func (q *Queue) AuditLog(ctx context.Context, repo string, limit int) ([]AuditEntry, error) {
	s := q.Merges()
	if limit <= 0 || limit > 100000 {
		limit = 1000
	}
	return s.ListAudit(ctx, repo, limit)
}

// execAll runs stmts in one transaction.
func (b *riverBackend[TTx]) execAll(ctx context.Context, stmts []string) error {
	return b.inTx(ctx, func(tx TTx) error {
		for _, q := range stmts {
			if _, err := b.db.exec(ctx, tx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *riverBackend[TTx]) inTx(ctx context.Context, f func(tx TTx) error) error {
	tx, err := b.db.begin(ctx)
	if err != nil {
		return err
	}
	defer b.db.rollback(context.WithoutCancel(ctx), tx)
	if err := f(tx); err != nil {
		return err
	}
	return b.db.commit(ctx, tx)
}

func (b *riverBackend[TTx]) SaveChecked(ctx context.Context, c CheckedPR) error {
	// The touched column holds a list of packages, or, with extra owners, an object with both (rows
	// written before hold the list).
	var touched []byte
	var err error
	if len(c.ExtraOwners) == 0 && c.Derived == "" && len(c.AddReviewers) == 0 && len(c.Removals) == 0 {
		touched, err = json.Marshal(c.Touched)
	} else {
		touched, err = json.Marshal(storedTouched{Packages: c.Touched, Owners: c.ExtraOwners, Derived: c.Derived, AddReviewers: c.AddReviewers, Removals: c.Removals})
	}
	if err != nil {
		return err
	}
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_pr_checked
			(owner, name, number, head_sha, base_ref, base_sha, touched, policy, checked_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (owner, name, number) DO UPDATE SET head_sha = excluded.head_sha,
				base_ref = excluded.base_ref, base_sha = excluded.base_sha, touched = excluded.touched,
				policy = excluded.policy, checked_at = excluded.checked_at`,
			strings.ToLower(c.Owner), strings.ToLower(c.Repo), c.Number, c.HeadSHA, c.BaseRef, c.BaseSHA,
			string(touched), c.Policy, c.CheckedAt.UTC().Format(time.RFC3339Nano))
		return err
	})
}

func (b *riverBackend[TTx]) LoadChecked(ctx context.Context, owner, repo string, number int) (CheckedPR, bool, error) {
	c := CheckedPR{Owner: owner, Repo: repo, Number: number}
	found := false
	err := b.db.query(ctx, `SELECT head_sha, base_ref, base_sha, touched, policy, checked_at FROM catalogbot_pr_checked
		WHERE owner = $1 AND name = $2 AND number = $3`,
		[]any{strings.ToLower(owner), strings.ToLower(repo), number},
		func(scan func(...any) error) error {
			var touched, at string
			if err := scan(&c.HeadSHA, &c.BaseRef, &c.BaseSHA, &touched, &c.Policy, &at); err != nil {
				return err
			}
			if strings.HasPrefix(strings.TrimSpace(touched), "{") {
				var st storedTouched
				if err := json.Unmarshal([]byte(touched), &st); err != nil {
					return fmt.Errorf("touched packages of %s/%s#%d: %w", owner, repo, number, err)
				}
				c.Touched, c.ExtraOwners, c.Derived, c.AddReviewers, c.Removals = st.Packages, st.Owners, st.Derived, st.AddReviewers, st.Removals
			} else if err := json.Unmarshal([]byte(touched), &c.Touched); err != nil {
				return fmt.Errorf("touched packages of %s/%s#%d: %w", owner, repo, number, err)
			}
			c.CheckedAt, _ = time.Parse(time.RFC3339Nano, at)
			found = true
			return nil
		})
	return c, found, err
}

func (b *riverBackend[TTx]) AddAudit(ctx context.Context, e AuditEntry) error {
	owner, name, ok := strings.Cut(e.Repo, "/")
	if !ok {
		return fmt.Errorf("audit entry: repository %q is not owner/name", e.Repo)
	}
	// The review_ids column holds the list of reviews, or, with /approve comments, an object with both
	// (rows written before hold the list).
	var reviews []byte
	var err error
	if len(e.ApprovalComments) == 0 && len(e.Approvers) == 0 {
		reviews, err = json.Marshal(e.ReviewIDs)
	} else {
		reviews, err = json.Marshal(storedApprovals{Reviews: e.ReviewIDs, Comments: e.ApprovalComments, Approvers: e.Approvers})
	}
	if err != nil {
		return err
	}
	runs, err := json.Marshal(e.CheckRunIDs)
	if err != nil {
		return err
	}
	return b.inTx(ctx, func(tx TTx) error {
		// A retried job records its merge once.
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_merge_audit
			(owner, name, number, merged_sha, merge_commit, author, authorized_by, review_ids, policy_sha,
			 check_run_ids, method, merged_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (owner, name, number, merged_sha) DO NOTHING`,
			owner, name, e.Number, e.MergedSHA, e.MergeCommit, e.Author, e.AuthorizedBy, string(reviews),
			e.PolicySHA, string(runs), e.Method, e.MergedAt.UTC().Format(time.RFC3339Nano))
		return err
	})
}

func (b *riverBackend[TTx]) ListAudit(ctx context.Context, repo string, limit int) ([]AuditEntry, error) {
	q := `SELECT owner, name, number, merged_sha, merge_commit, author, authorized_by, review_ids, policy_sha,
		check_run_ids, method, merged_at FROM catalogbot_merge_audit`
	var args []any
	if repo != "" {
		owner, name, ok := strings.Cut(strings.ToLower(repo), "/")
		if !ok || owner == "" || name == "" {
			return nil, fmt.Errorf("repository %q: want owner/name", repo)
		}
		q += ` WHERE owner = $1 AND name = $2`
		args = append(args, owner, name)
	}
	q += fmt.Sprintf(` ORDER BY merged_at DESC, owner, name, number LIMIT %d`, limit)
	var out []AuditEntry
	err := b.db.query(ctx, q, args, func(scan func(...any) error) error {
		var e AuditEntry
		var owner, name, reviews, runs, at string
		if err := scan(&owner, &name, &e.Number, &e.MergedSHA, &e.MergeCommit, &e.Author, &e.AuthorizedBy,
			&reviews, &e.PolicySHA, &runs, &e.Method, &at); err != nil {
			return err
		}
		e.Repo = owner + "/" + name
		var errs []error
		if strings.HasPrefix(strings.TrimSpace(reviews), "{") {
			var sa storedApprovals
			errs = append(errs, json.Unmarshal([]byte(reviews), &sa))
			e.ReviewIDs, e.ApprovalComments, e.Approvers = sa.Reviews, sa.Comments, sa.Approvers
		} else {
			errs = append(errs, json.Unmarshal([]byte(reviews), &e.ReviewIDs))
		}
		errs = append(errs, json.Unmarshal([]byte(runs), &e.CheckRunIDs))
		t, err := time.Parse(time.RFC3339Nano, at)
		e.MergedAt = t
		if err := errors.Join(append(errs, err)...); err != nil {
			return fmt.Errorf("audit row %s#%d: %w", e.Repo, e.Number, err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// storedTouched is the touched column when it carries extra owners.
type storedTouched struct {
	Packages []string            `json:"packages"`
	Owners   map[string][]string `json:"owners,omitempty"`
	Derived  string              `json:"derived,omitempty"`
	// AddReviewers: the reviewers of touched packages whose ci.yaml asks for review requests.
	AddReviewers map[string][]string `json:"add_reviewers,omitempty"`
	// Removals: the removals of released content the policy's removals allow.
	Removals []string `json:"removals,omitempty"`
}

// storedApprovals is the review_ids column when /approve comments authorized the merge, or the approvers'
// logins are known (rows written before hold only the list of reviews).
type storedApprovals struct {
	Reviews   []int64  `json:"reviews"`
	Comments  []int64  `json:"comments"`
	Approvers []string `json:"approvers,omitempty"`
}
