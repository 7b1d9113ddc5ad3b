package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

// postgresURL returns a reachable test database URL or skips.
func postgresURL(t testing.TB) string {
	t.Helper()
	return testpg.URL(t)
}

// freshSchema names a schema for one test and drops it afterwards.
func freshSchema(t testing.TB, dbURL string) string {
	t.Helper()
	return testpg.FreshSchema(t, dbURL, "cbtest_")
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testConfig is a valid configuration without GitHub credentials.
func testConfig(t testing.TB) *Config {
	dir := t.TempDir()
	c := &Config{AppID: 1, WebhookSecrets: []Secret{NewSecret([]byte("s3cret"))}, DataDir: dir, Workers: 2}
	c.fillDefaults()
	c.ResyncInterval, c.RedeliverInterval = 0, 0 // no periodic jobs unless a test asks
	return c
}

// backends lists the queue backends a test runs on: SQLite always,
// PostgreSQL when reachable.
var backendNames = []string{store.BackendSQLite, store.BackendPostgres}

// openTestQueue opens a queue on backend with the given job handlers
// (zero handlers: jobs are registered but the queue is not meant to run).
func openTestQueue(t testing.TB, backend string, cfg *Config, h jobHandlers) *store.Queue {
	t.Helper()
	rc, err := newRiverConfig(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	opt := store.QueueOptions{SQLitePath: filepath.Join(cfg.DataDir, "q.db"), River: rc, Log: testLogger(t)}
	if backend == store.BackendPostgres {
		opt.DatabaseURL = postgresURL(t)
		opt.Schema = freshSchema(t, opt.DatabaseURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := store.OpenQueue(ctx, opt)
	if err != nil {
		t.Fatalf("store.OpenQueue(%s): %v", backend, err)
	}
	t.Cleanup(q.Close)
	return q
}

func countRows(t testing.TB, q *store.Queue, table string) int64 {
	t.Helper()
	n, err := q.Count(context.Background(), table)
	if err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func checkJob(sha string) river.InsertManyParams {
	return river.InsertManyParams{Args: jobs.CheckPRArgs{InstallationID: 1, Owner: "o", Repo: "r", Number: 1, HeadSHA: sha}}
}

func TestQueueRecord(t *testing.T) {
	sha1, sha2 := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			q := openTestQueue(t, backend, testConfig(t), jobHandlers{})
			ctx := context.Background()
			d := jobs.Delivery{ID: "d1", Event: "pull_request", ReceivedAt: time.Now()}
			repo := jobs.InstalledRepo{InstallationID: 1, Owner: "o", Name: "r", CloneURL: "https://example.com/o/r.git"}

			dup, err := q.Record(ctx, d, jobs.Plan{Jobs: []river.InsertManyParams{checkJob(sha1)}, UpsertRepos: []jobs.InstalledRepo{repo}})
			if err != nil || dup {
				t.Fatalf("first Record = %v, %v; want false, nil", dup, err)
			}
			dup, err = q.Record(ctx, d, jobs.Plan{Jobs: []river.InsertManyParams{checkJob(sha2)}})
			if err != nil || !dup {
				t.Fatalf("Record of the same delivery = %v, %v; want true, nil", dup, err)
			}
			// Another delivery about the same head: stored, but no second job.
			d2 := jobs.Delivery{ID: "d2", Event: "check_suite", ReceivedAt: time.Now()}
			if _, err := q.Record(ctx, d2, jobs.Plan{Jobs: []river.InsertManyParams{checkJob(sha1)}}); err != nil {
				t.Fatal(err)
			}
			if got := countRows(t, q, "catalogbot_delivery"); got != 2 {
				t.Errorf("deliveries = %d, want 2", got)
			}
			if got := countRows(t, q, "river_job"); got != 1 {
				t.Errorf("jobs = %d, want 1 (same repo, PR and head)", got)
			}
			repos, err := q.InstalledRepos(ctx)
			if err != nil || len(repos) != 1 || repos[0] != repo {
				t.Errorf("InstalledRepos = %v, %v; want [%v]", repos, err, repo)
			}
			st, err := q.Stats(ctx)
			if err != nil || st.Depth != 1 {
				t.Errorf("Stats = %+v, %v; want depth 1", st, err)
			}
			if st.OldestAvailable < 0 || st.OldestAvailable > time.Minute {
				t.Errorf("OldestAvailable = %s, want between 0 and 1m", st.OldestAvailable)
			}
		})
	}
}

// TestQueueRecordAtomic fails the transaction after the delivery row and the
// job are written: neither may remain, and the same delivery is accepted
// afterwards.
func TestQueueRecordAtomic(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			q := openTestQueue(t, backend, testConfig(t), jobHandlers{})
			ctx := context.Background()
			d := jobs.Delivery{ID: "d1", Event: "pull_request", ReceivedAt: time.Now()}
			p := jobs.Plan{Jobs: []river.InsertManyParams{checkJob("1111111111111111111111111111111111111111")},
				UpsertRepos: []jobs.InstalledRepo{{InstallationID: 1, Owner: "o", Name: "r"}}}
			boom := errors.New("crash between enqueue and commit")
			q.SetBeforeCommit(func() error { return boom })
			if _, err := q.Record(ctx, d, p); !errors.Is(err, boom) {
				t.Fatalf("Record = %v, want %v", err, boom)
			}
			for _, table := range []string{"catalogbot_delivery", "river_job", "catalogbot_installation_repo"} {
				if got := countRows(t, q, table); got != 0 {
					t.Errorf("%s rows after a failed Record = %d, want 0", table, got)
				}
			}
			q.SetBeforeCommit(nil)
			if dup, err := q.Record(ctx, d, p); err != nil || dup {
				t.Fatalf("Record after the failure = %v, %v; want false, nil", dup, err)
			}
			if got := countRows(t, q, "river_job"); got != 1 {
				t.Errorf("jobs = %d, want 1", got)
			}
		})
	}
}

// TestQueueMigrateTwice opens the same database twice (a restart): the
// migrations must be idempotent.
func TestQueueMigrateTwice(t *testing.T) {
	cfg := testConfig(t)
	for i := range 2 {
		rc, err := newRiverConfig(cfg, jobHandlers{})
		if err != nil {
			t.Fatal(err)
		}
		q, err := store.OpenQueue(context.Background(), store.QueueOptions{SQLitePath: filepath.Join(cfg.DataDir, "q.db"), River: rc, Log: testLogger(t)})
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		q.Close()
	}
}

// TestQueueConcurrentMigrations starts several replicas at the same moment
// on an empty PostgreSQL schema, as the pods of a Deployment do: every one
// must come up (the schema, River's tables, ours, the merge's and the
// rebuild's are created once).
func TestQueueConcurrentMigrations(t *testing.T) {
	dbURL := postgresURL(t)
	cfg := testConfig(t)
	const replicas, rounds = 3, 4
	for round := range rounds {
		schema := freshSchema(t, dbURL)
		opts := make([]store.QueueOptions, replicas)
		for i := range opts {
			rc, err := newRiverConfig(cfg, jobHandlers{})
			if err != nil {
				t.Fatal(err)
			}
			opts[i] = store.QueueOptions{DatabaseURL: dbURL, Schema: schema, River: rc, Log: testLogger(t)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		errs := make([]error, replicas)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range opts {
			wg.Go(func() {
				<-start
				q, err := store.OpenQueue(ctx, opts[i])
				if err != nil {
					errs[i] = err
					return
				}
				q.Close() // store.OpenQueue made every table of ours, under the migration lock
			})
		}
		close(start)
		wg.Wait()
		cancel()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: replica %d of %d starting together on an empty schema: %v", round+1, i+1, replicas, err)
			}
		}
	}
}
