package store

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/internal/testpg"
	"github.com/riverqueue/river"
)

// ActiveChecks reads the check jobs River holds on both backends. River's SQLite driver keeps a job's args as
// binary JSONB, which the query must turn back into text: read raw, every job was skipped as unreadable, and
// a base move never saw a check running.
func TestActiveChecksReadsRiversJobs(t *testing.T) {
	for _, backend := range []string{BackendSQLite, BackendPostgres} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			opt := QueueOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if backend == BackendSQLite {
				opt.SQLitePath = filepath.Join(t.TempDir(), "q.db")
			} else {
				u := testpg.URL(t)
				opt.DatabaseURL, opt.Schema = u, testpg.FreshSchema(t, u, "active_")
			}
			q, err := OpenQueue(ctx, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			workers := river.NewWorkers()
			river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[jobs.CheckPRArgs]) error { return nil }))
			if err := q.Register(&river.Config{Workers: workers}); err != nil { // not started: the jobs wait
				t.Fatal(err)
			}
			err = q.Insert(ctx, []river.InsertManyParams{
				{Args: jobs.CheckPRArgs{InstallationID: 1, Owner: "acme", Repo: "catalog", Number: 7, HeadSHA: "ABCDEF0123", Rerun: jobs.BaseRecheckKey("0123456789abcdef0123456789abcdef01234567")}},
				{Args: jobs.CheckPRArgs{InstallationID: 1, Owner: "acme", Repo: "other", Number: 8, HeadSHA: "beef"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := q.ActiveChecks(ctx, "ACME", "catalog")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("ActiveChecks = %+v, want the one check job of acme/catalog", got)
			}
			c := got[0]
			if c.Number != 7 || c.HeadSHA != "abcdef0123" || c.Running {
				t.Errorf("ActiveChecks = %+v, want #7 at abcdef0123, waiting", c)
			}
			if b, ok := jobs.RecheckedBase(c.Rerun); !ok || b != "0123456789abcdef0123456789abcdef01234567" {
				t.Errorf("re-run key %q does not name the re-checked base", c.Rerun)
			}
		})
	}
}
