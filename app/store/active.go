package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/catalogbot/catalogbot/app/jobs"
)

// maxActiveScanned bounds the check jobs read by ActiveChecks.
const maxActiveScanned = 10000

// ActiveCheck is a check job of a pull request head that waits or runs.
type ActiveCheck struct {
	Number  int
	HeadSHA string // lower case
	// Rerun is the job's re-run key (jobs.BaseRecheckKey for a re-check asked for by a base move).
	Rerun string
	// Running: the job has started (it may have read the base branch before its latest move); otherwise it
	// waits (available, scheduled, pending, or retryable: the next attempt fetches again) and will read the
	// base as it is when it runs.
	Running bool
}

// ActiveChecks lists the check jobs of owner/repo that wait or run. At most maxActiveScanned jobs of all
// repositories are looked at.
func (q *Queue) ActiveChecks(ctx context.Context, owner, repo string) ([]ActiveCheck, error) {
	var out []ActiveCheck
	// River keeps a job's args as JSONB: binary in SQLite (json() gives the text back), text to pgx.
	args := "args"
	if q.backend == BackendSQLite {
		args = "json(args)"
	}
	err := q.b.query(ctx, `SELECT `+args+`, state FROM river_job WHERE kind = $1
		AND state IN ('available', 'scheduled', 'retryable', 'pending', 'running') LIMIT $2`,
		[]any{jobs.KindCheckPR, maxActiveScanned}, func(scan func(...any) error) error {
			var raw []byte
			var state string
			if err := scan(&raw, &state); err != nil {
				return err
			}
			var a jobs.CheckPRArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil // not one this version reads: it does not count as under way
			}
			if strings.EqualFold(a.Owner, owner) && strings.EqualFold(a.Repo, repo) {
				out = append(out, ActiveCheck{Number: a.Number, HeadSHA: strings.ToLower(a.HeadSHA), Rerun: a.Rerun, Running: state == "running"})
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("reading the check jobs under way: %w", err)
	}
	return out, nil
}
