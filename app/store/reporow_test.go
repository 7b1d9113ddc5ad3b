package store

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

// A repository's row is written when it is new, when its installation or clone URL changes and once an hour,
// not by every delivery (each delivery of a repository names it; rewriting it serialised the acknowledgements).
func TestRepositoryRowWrittenWhenItChanges(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			opt := QueueOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if backend == "sqlite" {
				opt.SQLitePath = filepath.Join(t.TempDir(), "q.db")
			} else {
				u := testpg.URL(t)
				opt.DatabaseURL, opt.Schema = u, testpg.FreshSchema(t, u, "reporow_")
			}
			q, err := OpenQueue(ctx, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
			n := 0
			deliver := func(at time.Time, r jobs.InstalledRepo) {
				t.Helper()
				n++
				d := jobs.Delivery{ID: "d" + string(rune('a'+n)), Event: "pull_request", InstallationID: r.InstallationID, Repo: "acme/catalog", ReceivedAt: at}
				if _, err := q.Record(ctx, d, jobs.Plan{UpsertRepos: []jobs.InstalledRepo{r}}); err != nil {
					t.Fatal(err)
				}
			}
			row := func() (int64, string, string) {
				t.Helper()
				var inst int64
				var clone, updated string
				if err := q.b.(interface {
					query(context.Context, string, []any, func(func(...any) error) error) error
				}).query(ctx, `SELECT installation_id, clone_url, updated_at FROM catalogbot_installation_repo WHERE owner = $1 AND name = $2`,
					[]any{"acme", "catalog"}, func(scan func(...any) error) error { return scan(&inst, &clone, &updated) }); err != nil {
					t.Fatal(err)
				}
				return inst, clone, updated
			}
			stamp := func(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }
			r := jobs.InstalledRepo{InstallationID: 1, Owner: "acme", Name: "catalog", CloneURL: "https://github.com/acme/catalog.git"}

			deliver(t0, r)
			if _, _, u := row(); u != stamp(t0) {
				t.Fatalf("new repository: updated_at %s, want %s", u, stamp(t0))
			}
			deliver(t0.Add(10*time.Minute), r)
			r2 := r
			r2.CloneURL = ""
			deliver(t0.Add(20*time.Minute), r2) // an event without a clone URL says nothing new
			if _, _, u := row(); u != stamp(t0) {
				t.Errorf("the same repository again within the hour was written (updated_at %s)", u)
			}
			moved := r
			moved.CloneURL = "https://github.com/acme/catalog-renamed.git"
			deliver(t0.Add(30*time.Minute), moved)
			if _, c, u := row(); c != moved.CloneURL || u != stamp(t0.Add(30*time.Minute)) {
				t.Errorf("a new clone URL was not written: %s at %s", c, u)
			}
			other := moved
			other.InstallationID = 2
			deliver(t0.Add(40*time.Minute), other)
			if i, _, _ := row(); i != 2 {
				t.Errorf("a new installation was not written: %d", i)
			}
			deliver(t0.Add(40*time.Minute+repoRowFresh), other)
			if _, _, u := row(); u != stamp(t0.Add(40*time.Minute+repoRowFresh)) {
				t.Errorf("an hour later the row was not written again (updated_at %s)", u)
			}
		})
	}
}
