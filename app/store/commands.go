package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
)

// The comment commands' tables, created next to the merge tables (CREATE TABLE IF NOT EXISTS, see audit.go):
//
//   - catalogbot_pr_head: when catalogbot saw which head on a pull request (a pull_request delivery at its
//     receipt, a check job, a command job, the resync). An /approve binds to the head of the time of its
//     comment: this log tells whether the current head was already the head then.
//   - catalogbot_command_approval: every /approve and /approve cancel accepted, with who, the head SHA and
//     the comment. Rows are never changed or deleted: the table is the audit of approvals given by command,
//     and the approval mechanism reads it next to the reviews.
//   - catalogbot_comment_command: each command of a comment once handled (its outcome), so that a redelivery,
//     a retried job and the resync handle it once; it also counts the /retest of the past hour.
//   - catalogbot_pr_fence: the hold fence of a pull request. /hold bumps hold_gen after its label is on; a
//     merge claims the pull request (merging_since) only if hold_gen is what it was when the merge
//     evaluation read the labels, so no merge starts after a hold is acknowledged.
//   - catalogbot_review_request: each reviewer asked for a review because a ci.yaml says addReviewers (or
//     whom GitHub refused to ask), once per pull request.
var commandSchema = []string{
	`CREATE TABLE IF NOT EXISTS catalogbot_pr_head (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		number BIGINT NOT NULL,
		head_sha TEXT NOT NULL,
		seen_at TEXT NOT NULL,
		PRIMARY KEY (owner, name, number, seen_at, head_sha))`,
	`CREATE TABLE IF NOT EXISTS catalogbot_command_approval (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		number BIGINT NOT NULL,
		comment_id BIGINT NOT NULL,
		login TEXT NOT NULL,
		head_sha TEXT NOT NULL,
		action TEXT NOT NULL,
		commented_at TEXT NOT NULL,
		recorded_at TEXT NOT NULL,
		PRIMARY KEY (owner, name, number, comment_id))`,
	`CREATE TABLE IF NOT EXISTS catalogbot_comment_command (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		number BIGINT NOT NULL,
		comment_id BIGINT NOT NULL,
		command TEXT NOT NULL,
		outcome TEXT NOT NULL,
		handled_at TEXT NOT NULL,
		PRIMARY KEY (owner, name, number, comment_id, command))`,
	`CREATE TABLE IF NOT EXISTS catalogbot_pr_fence (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		number BIGINT NOT NULL,
		hold_gen BIGINT NOT NULL,
		merging_since TEXT NOT NULL,
		PRIMARY KEY (owner, name, number))`,
	`CREATE TABLE IF NOT EXISTS catalogbot_review_request (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		number BIGINT NOT NULL,
		login TEXT NOT NULL,
		requested_at TEXT NOT NULL,
		PRIMARY KEY (owner, name, number, login))`,
}

// CommandApproval is one /approve or /approve cancel: who, on which head, by which comment.
type CommandApproval struct {
	Repo      string    `json:"repo"` // owner/name
	Number    int       `json:"number"`
	CommentID int64     `json:"comment_id"`
	Login     string    `json:"login"`
	HeadSHA   string    `json:"head_sha"`
	Action    string    `json:"action"` // approve, cancel
	At        time.Time `json:"commented_at"`
	Recorded  time.Time `json:"recorded_at"`
}

// CommandStore is the database side of the comment commands (every queue backend).
type CommandStore interface {
	SawHead(ctx context.Context, h jobs.HeadSeen, at time.Time) error
	HeadLog(ctx context.Context, owner, repo string, number int) ([]HeadAt, error)
	AddCommandApproval(ctx context.Context, a CommandApproval) error
	CommandApprovals(ctx context.Context, owner, repo string, number int) ([]CommandApproval, error)
	ListCommandApprovals(ctx context.Context, repo string, limit int) ([]CommandApproval, error)
	CommandHandled(ctx context.Context, owner, repo string, number int, commentID int64, command string) (bool, error)
	MarkCommand(ctx context.Context, owner, repo string, number int, commentID int64, command, outcome string, at time.Time) error
	CommandsSince(ctx context.Context, owner, repo string, number int, command, outcome string, since time.Time) (int, error)
	HoldGen(ctx context.Context, owner, repo string, number int) (int64, error)
	BumpHold(ctx context.Context, owner, repo string, number int) (mergingSince time.Time, err error)
	ClaimMerge(ctx context.Context, owner, repo string, number int, gen int64, at time.Time) (bool, error)
	ReleaseMerge(ctx context.Context, owner, repo string, number int) error
	MergingSince(ctx context.Context, owner, repo string, number int) (time.Time, error)
	ReviewsRequested(ctx context.Context, owner, repo string, number int) ([]string, error)
	MarkReviewRequested(ctx context.Context, owner, repo string, number int, login string, at time.Time) error
}

// HeadAt is one row of the head log.
type HeadAt struct {
	SHA string
	At  time.Time
}

// Commands is the record of comment commands: the head log, approvals, holds and merge claims.
func (q *Queue) Commands() CommandStore { return q.b }

// ApprovalLog lists the approvals given and withdrawn by comment command, newest first; repo ("owner/name")
// filters them when not empty; limit bounds the rows (0: 1000).
func (q *Queue) ApprovalLog(ctx context.Context, repo string, limit int) ([]CommandApproval, error) {
	s := q.Commands()
	if limit <= 0 || limit > 100000 {
		limit = 1000
	}
	return s.ListCommandApprovals(ctx, repo, limit)
}

// dbTime writes times of fixed width (UTC, nanoseconds), so that the database orders them as strings.
func dbTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }

// sawHead appends to the head log unless the newest row of the pull request already says the same.
func (b *riverBackend[TTx]) SawHead(ctx context.Context, h jobs.HeadSeen, at time.Time) error {
	if !jobs.IsSHA(strings.ToLower(h.HeadSHA)) || h.Number <= 0 {
		return nil
	}
	return b.inTx(ctx, func(tx TTx) error { return b.sawHeadTx(ctx, tx, h, at) })
}

func (b *riverBackend[TTx]) sawHeadTx(ctx context.Context, tx TTx, h jobs.HeadSeen, at time.Time) error {
	// A row is added only when the newest row up to at names another head (or there is none): rows differ
	// only where the head changed. An observation older than the newest row (a delivery that took longer)
	// is placed at its own time.
	_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_pr_head (owner, name, number, head_sha, seen_at)
		SELECT CAST($1 AS TEXT), CAST($2 AS TEXT), CAST($3 AS BIGINT), CAST($4 AS TEXT), CAST($5 AS TEXT)
		WHERE NOT EXISTS (SELECT 1 FROM catalogbot_pr_head h
			WHERE h.owner = $1 AND h.name = $2 AND h.number = $3 AND h.head_sha = $4 AND h.seen_at <= $5
			AND NOT EXISTS (SELECT 1 FROM catalogbot_pr_head g
				WHERE g.owner = $1 AND g.name = $2 AND g.number = $3 AND g.seen_at > h.seen_at AND g.seen_at <= $5
				AND g.head_sha <> $4))
		ON CONFLICT DO NOTHING`,
		strings.ToLower(h.Owner), strings.ToLower(h.Repo), h.Number, strings.ToLower(h.HeadSHA), dbTime(at))
	return err
}

// maxHeadLog bounds the rows of one pull request's head log read back.
const maxHeadLog = 10000

func (b *riverBackend[TTx]) HeadLog(ctx context.Context, owner, repo string, number int) ([]HeadAt, error) {
	var out []HeadAt
	err := b.db.query(ctx, fmt.Sprintf(`SELECT head_sha, seen_at FROM catalogbot_pr_head
		WHERE owner = $1 AND name = $2 AND number = $3 ORDER BY seen_at LIMIT %d`, maxHeadLog),
		[]any{strings.ToLower(owner), strings.ToLower(repo), number},
		func(scan func(...any) error) error {
			var h HeadAt
			var at string
			if err := scan(&h.SHA, &at); err != nil {
				return err
			}
			t, err := time.Parse(time.RFC3339Nano, at)
			if err != nil {
				return fmt.Errorf("head log of %s/%s#%d: %w", owner, repo, number, err)
			}
			h.At = t
			out = append(out, h)
			return nil
		})
	return out, err
}

func (b *riverBackend[TTx]) AddCommandApproval(ctx context.Context, a CommandApproval) error {
	owner, name, ok := strings.Cut(a.Repo, "/")
	if !ok {
		return fmt.Errorf("approval: repository %q is not owner/name", a.Repo)
	}
	return b.inTx(ctx, func(tx TTx) error {
		// A retried job records its comment once.
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_command_approval
			(owner, name, number, comment_id, login, head_sha, action, commented_at, recorded_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
			strings.ToLower(owner), strings.ToLower(name), a.Number, a.CommentID, a.Login, strings.ToLower(a.HeadSHA),
			a.Action, dbTime(a.At), dbTime(a.Recorded))
		return err
	})
}

func (b *riverBackend[TTx]) scanApprovals(ctx context.Context, q string, args []any) ([]CommandApproval, error) {
	var out []CommandApproval
	err := b.db.query(ctx, q, args, func(scan func(...any) error) error {
		var a CommandApproval
		var owner, name, at, rec string
		if err := scan(&owner, &name, &a.Number, &a.CommentID, &a.Login, &a.HeadSHA, &a.Action, &at, &rec); err != nil {
			return err
		}
		a.Repo = owner + "/" + name
		var err1, err2 error
		a.At, err1 = time.Parse(time.RFC3339Nano, at)
		a.Recorded, err2 = time.Parse(time.RFC3339Nano, rec)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("approval row %s#%d comment %d: bad time", a.Repo, a.Number, a.CommentID)
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

const approvalColumns = `owner, name, number, comment_id, login, head_sha, action, commented_at, recorded_at`

func (b *riverBackend[TTx]) CommandApprovals(ctx context.Context, owner, repo string, number int) ([]CommandApproval, error) {
	out, err := b.scanApprovals(ctx, `SELECT `+approvalColumns+` FROM catalogbot_command_approval
		WHERE owner = $1 AND name = $2 AND number = $3 ORDER BY comment_id LIMIT 10000`,
		[]any{strings.ToLower(owner), strings.ToLower(repo), number})
	return out, err
}

func (b *riverBackend[TTx]) ListCommandApprovals(ctx context.Context, repo string, limit int) ([]CommandApproval, error) {
	q := `SELECT ` + approvalColumns + ` FROM catalogbot_command_approval`
	var args []any
	if repo != "" {
		owner, name, ok := strings.Cut(strings.ToLower(repo), "/")
		if !ok || owner == "" || name == "" {
			return nil, fmt.Errorf("repository %q: want owner/name", repo)
		}
		q += ` WHERE owner = $1 AND name = $2`
		args = append(args, owner, name)
	}
	// Comment ids grow with time on GitHub: newest first.
	q += fmt.Sprintf(` ORDER BY comment_id DESC LIMIT %d`, limit)
	return b.scanApprovals(ctx, q, args)
}

func (b *riverBackend[TTx]) CommandHandled(ctx context.Context, owner, repo string, number int, commentID int64, command string) (bool, error) {
	found := false
	err := b.db.query(ctx, `SELECT 1 FROM catalogbot_comment_command
		WHERE owner = $1 AND name = $2 AND number = $3 AND comment_id = $4 AND command = $5`,
		[]any{strings.ToLower(owner), strings.ToLower(repo), number, commentID, command},
		func(scan func(...any) error) error {
			var one int
			found = true
			return scan(&one)
		})
	return found, err
}

func (b *riverBackend[TTx]) MarkCommand(ctx context.Context, owner, repo string, number int, commentID int64, command, outcome string, at time.Time) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_comment_command
			(owner, name, number, comment_id, command, outcome, handled_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT DO NOTHING`,
			strings.ToLower(owner), strings.ToLower(repo), number, commentID, command, outcome, dbTime(at))
		return err
	})
}

// commandsSince counts the commands of a pull request with that outcome handled since since.
func (b *riverBackend[TTx]) CommandsSince(ctx context.Context, owner, repo string, number int, command, outcome string, since time.Time) (int, error) {
	n := 0
	err := b.db.query(ctx, `SELECT handled_at FROM catalogbot_comment_command
		WHERE owner = $1 AND name = $2 AND number = $3 AND command = $4 AND outcome = $5 ORDER BY comment_id DESC LIMIT 1000`,
		[]any{strings.ToLower(owner), strings.ToLower(repo), number, command, outcome},
		func(scan func(...any) error) error {
			var at string
			if err := scan(&at); err != nil {
				return err
			}
			if t, err := time.Parse(time.RFC3339Nano, at); err == nil && !t.Before(since) {
				n++
			}
			return nil
		})
	return n, err
}

func (b *riverBackend[TTx]) HoldGen(ctx context.Context, owner, repo string, number int) (int64, error) {
	var gen int64
	err := b.db.query(ctx, `SELECT hold_gen FROM catalogbot_pr_fence WHERE owner = $1 AND name = $2 AND number = $3`,
		[]any{strings.ToLower(owner), strings.ToLower(repo), number},
		func(scan func(...any) error) error { return scan(&gen) })
	return gen, err
}

func (b *riverBackend[TTx]) ensureFence(ctx context.Context, tx TTx, owner, repo string, number int) error {
	_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_pr_fence (owner, name, number, hold_gen, merging_since)
		VALUES ($1, $2, $3, 0, '') ON CONFLICT DO NOTHING`, strings.ToLower(owner), strings.ToLower(repo), number)
	return err
}

// bumpHold moves the hold generation on and returns when a merge in flight claimed the pull request (zero:
// none). The update takes the row's lock, so it orders itself with claimMerge.
func (b *riverBackend[TTx]) BumpHold(ctx context.Context, owner, repo string, number int) (time.Time, error) {
	var since time.Time
	err := b.inTx(ctx, func(tx TTx) error {
		if err := b.ensureFence(ctx, tx, owner, repo, number); err != nil {
			return err
		}
		if _, err := b.db.exec(ctx, tx, `UPDATE catalogbot_pr_fence SET hold_gen = hold_gen + 1
			WHERE owner = $1 AND name = $2 AND number = $3`, strings.ToLower(owner), strings.ToLower(repo), number); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	// Read after the commit: a claim that committed before the bump is visible now; one after it failed.
	since, err = b.MergingSince(ctx, owner, repo, number)
	return since, err
}

// claimMerge marks a merge in flight, only if no hold came since gen was read.
func (b *riverBackend[TTx]) ClaimMerge(ctx context.Context, owner, repo string, number int, gen int64, at time.Time) (bool, error) {
	claimed := false
	err := b.inTx(ctx, func(tx TTx) error {
		if err := b.ensureFence(ctx, tx, owner, repo, number); err != nil {
			return err
		}
		n, err := b.db.exec(ctx, tx, `UPDATE catalogbot_pr_fence SET merging_since = $5
			WHERE owner = $1 AND name = $2 AND number = $3 AND hold_gen = $4`,
			strings.ToLower(owner), strings.ToLower(repo), number, gen, dbTime(at))
		claimed = n == 1
		return err
	})
	return claimed, err
}

func (b *riverBackend[TTx]) ReleaseMerge(ctx context.Context, owner, repo string, number int) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `UPDATE catalogbot_pr_fence SET merging_since = ''
			WHERE owner = $1 AND name = $2 AND number = $3`, strings.ToLower(owner), strings.ToLower(repo), number)
		return err
	})
}

func (b *riverBackend[TTx]) MergingSince(ctx context.Context, owner, repo string, number int) (time.Time, error) {
	var at string
	err := b.db.query(ctx, `SELECT merging_since FROM catalogbot_pr_fence WHERE owner = $1 AND name = $2 AND number = $3`,
		[]any{strings.ToLower(owner), strings.ToLower(repo), number},
		func(scan func(...any) error) error { return scan(&at) })
	if err != nil || at == "" {
		return time.Time{}, err
	}
	t, _ := time.Parse(time.RFC3339Nano, at)
	return t, nil
}

func (b *riverBackend[TTx]) ReviewsRequested(ctx context.Context, owner, repo string, number int) ([]string, error) {
	var out []string
	err := b.db.query(ctx, `SELECT login FROM catalogbot_review_request WHERE owner = $1 AND name = $2 AND number = $3 LIMIT 1000`,
		[]any{strings.ToLower(owner), strings.ToLower(repo), number},
		func(scan func(...any) error) error {
			var l string
			if err := scan(&l); err != nil {
				return err
			}
			out = append(out, l)
			return nil
		})
	return out, err
}

func (b *riverBackend[TTx]) MarkReviewRequested(ctx context.Context, owner, repo string, number int, login string, at time.Time) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_review_request (owner, name, number, login, requested_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
			strings.ToLower(owner), strings.ToLower(repo), number, strings.ToLower(login), dbTime(at))
		return err
	})
}

// Actions of the approval rows.
const (
	ApprovalApprove = "approve"
	ApprovalCancel  = "cancel"
)
