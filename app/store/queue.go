package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// Queue backends.
const (
	BackendSQLite   = "sqlite"
	BackendPostgres = "postgres"
)

// QueueStats describe the backlog, for /metrics.
type QueueStats struct {
	// Depth counts jobs not yet finished (available, scheduled, retryable, running, pending).
	Depth int64
	// OldestAvailable is how long the oldest job ready to run has waited.
	OldestAvailable time.Duration
}

// QueueOptions configure OpenQueue.
type QueueOptions struct {
	// DatabaseURL selects PostgreSQL (postgres://...); empty selects SQLite.
	DatabaseURL string
	// Schema is the PostgreSQL schema (created if missing); "" uses the search_path.
	Schema string
	// SQLitePath is the database file for the SQLite backend.
	SQLitePath string
	// River is the client configuration (workers, queues, periodic jobs,
	// timeouts). The schema is set from Schema. Nil opens the database
	// alone: Register gives the workers once every feature is built.
	River *river.Config
	Log   *slog.Logger
}

// Queue is the durable delivery log and the job queue (River) in one
// database, so that a delivery and its jobs are written in one transaction.
type Queue struct {
	backend string
	b       queueBackend
	started atomic.Bool
	log     *slog.Logger
}

// queueBackend is Queue's work for one database driver. River's client is
// generic over the driver's transaction type; this hides it.
type queueBackend interface {
	// register builds River's client from the one registration list of workers and periodic jobs.
	register(cfg *river.Config) error
	record(ctx context.Context, d jobs.Delivery, p jobs.Plan) (duplicate bool, err error)
	insert(ctx context.Context, jobs []river.InsertManyParams) error
	start(ctx context.Context) error
	stop(ctx context.Context) error
	ping(ctx context.Context) error
	stats(ctx context.Context) (QueueStats, error)
	installedRepos(ctx context.Context) ([]jobs.InstalledRepo, error)
	count(ctx context.Context, table string) (int64, error)
	close()
	// setBeforeCommit installs a test hook run just before commit.
	setBeforeCommit(func() error)
	query(ctx context.Context, q string, args []any, row func(scan func(...any) error) error) error
	MergeStore
	CommandStore
	RebuildStore
	UpdateStore
	LeaseStore
	PromotionStore
}

// OpenQueue connects to the database and runs River's migrations and ours;
// with opt.River it also registers the workers (Register), not started.
func OpenQueue(ctx context.Context, opt QueueOptions) (*Queue, error) {
	log := opt.Log
	if log == nil {
		log = slog.Default()
	}
	q := &Queue{backend: BackendSQLite, log: log}
	var err error
	if opt.DatabaseURL != "" {
		q.backend = BackendPostgres
		q.b, err = openPostgres(ctx, opt.DatabaseURL, opt.Schema, log)
	} else {
		q.b, err = openSQLite(ctx, opt.SQLitePath, log)
	}
	if err != nil {
		return nil, err
	}
	if opt.River != nil {
		if err := q.Register(opt.River); err != nil {
			q.Close()
			return nil, err
		}
	}
	return q, nil
}

// errNotRegistered: the queue takes and works jobs only once its workers are registered.
var errNotRegistered = errors.New("the job queue has no workers registered yet (store.Queue.Register)")

// Register builds the job queue's client from rc, the one list of every job kind's worker and the
// periodic jobs, once every feature that works a job is built on the open database. It is called
// once, before the first Record, Insert or Start.
func (q *Queue) Register(rc *river.Config) error {
	cfg := *rc
	cfg.Logger = slog.New(shutdownQuiet{q.log.Handler()}).With("component", "river")
	return q.b.register(&cfg)
}

// Backend names the database in use: "sqlite" or "postgres".
func (q *Queue) Backend() string { return q.backend }

// Record stores a delivery, the repositories it teaches us and its jobs in
// one transaction. A delivery ID seen before is a no-op: duplicate is true
// and nothing is written.
func (q *Queue) Record(ctx context.Context, d jobs.Delivery, p jobs.Plan) (duplicate bool, err error) {
	return q.b.record(ctx, d, p)
}

// Insert enqueues jobs outside any delivery (resync, tests). Unique jobs
// already queued are skipped by River.
func (q *Queue) Insert(ctx context.Context, jobs []river.InsertManyParams) error {
	if len(jobs) == 0 {
		return nil
	}
	return q.b.insert(ctx, jobs)
}

// Start starts working jobs.
func (q *Queue) Start(ctx context.Context) error {
	if err := q.b.start(ctx); err != nil {
		return err
	}
	q.started.Store(true)
	return nil
}

// Stop lets running jobs finish until ctx is done, then cancels them: a
// cancelled job is retried later, by this or another replica.
func (q *Queue) Stop(ctx context.Context) error {
	q.started.Store(false)
	return q.b.stop(ctx)
}

// Ready reports whether the database answers and the workers run.
func (q *Queue) Ready(ctx context.Context) error {
	if !q.started.Load() {
		return errors.New("the job queue is not started")
	}
	return q.b.ping(ctx)
}

// Query runs a read-only statement (placeholders $1, $2...) and calls row for each row of its result: for
// tests and diagnostics that look at the tables themselves.
func (q *Queue) Query(ctx context.Context, stmt string, args []any, row func(scan func(...any) error) error) error {
	return q.b.query(ctx, stmt, args, row)
}

// Count counts the rows of one of the database's tables.
func (q *Queue) Count(ctx context.Context, table string) (int64, error) { return q.b.count(ctx, table) }

// SetBeforeCommit installs a hook run just before a delivery's transaction commits (tests: a crash
// there); nil removes it.
func (q *Queue) SetBeforeCommit(f func() error) { q.b.setBeforeCommit(f) }

// Stats reads the backlog.
func (q *Queue) Stats(ctx context.Context) (QueueStats, error) { return q.b.stats(ctx) }

// InstalledRepos lists the repositories recorded from installation events
// and deliveries.
func (q *Queue) InstalledRepos(ctx context.Context) ([]jobs.InstalledRepo, error) {
	return q.b.installedRepos(ctx)
}

// Close releases the database. Stop first.
func (q *Queue) Close() { q.b.close() }

// txDB is the little a backend needs from its database, with SQL written
// with $1, $2... placeholders.
type txDB[TTx any] interface {
	begin(ctx context.Context) (TTx, error)
	exec(ctx context.Context, tx TTx, q string, args ...any) (int64, error)
	commit(ctx context.Context, tx TTx) error
	rollback(ctx context.Context, tx TTx)
	query(ctx context.Context, q string, args []any, row func(scan func(...any) error) error) error
	ping(ctx context.Context) error
	close()
}

type riverBackend[TTx any] struct {
	client       *river.Client[TTx] // nil until register
	driver       riverdriver.Driver[TTx]
	schema       string
	db           txDB[TTx]
	statsSQL     string
	beforeCommit func() error
}

func (b *riverBackend[TTx]) setBeforeCommit(f func() error) { b.beforeCommit = f }

func (b *riverBackend[TTx]) register(cfg *river.Config) error {
	if b.client != nil {
		return errors.New("the job queue's workers are registered already")
	}
	cfg.Schema = b.schema
	client, err := river.NewClient(b.driver, cfg)
	if err != nil {
		return fmt.Errorf("configuring the job queue: %w", err)
	}
	b.client = client
	return nil
}

// repoRowFresh is how long a repository's row, once written with the same installation and clone URL, is
// not written again: every delivery of a repository names it, and rewriting one row from every delivery
// made a repository's acknowledgements wait on each other's locks and commits (about 2.2x their cost on
// PostgreSQL, BenchmarkRecordDelivery). Nothing reads updated_at but this.
const repoRowFresh = time.Hour

// freshRepos are the repositories of p whose rows already say what p would write, written less than
// repoRowFresh before the delivery; read outside the delivery's transaction (a plain read takes no lock).
// A plan that forgets repositories or an installation writes every row.
func (b *riverBackend[TTx]) freshRepos(ctx context.Context, d jobs.Delivery, p jobs.Plan) map[jobs.InstalledRepo]bool {
	if p.RemoveInstID != 0 || len(p.RemoveRepos) > 0 || len(p.UpsertRepos) == 0 {
		return nil
	}
	fresh := map[jobs.InstalledRepo]bool{}
	for _, r := range p.UpsertRepos {
		_ = b.db.query(ctx, `SELECT installation_id, clone_url, updated_at FROM catalogbot_installation_repo WHERE owner = $1 AND name = $2`,
			[]any{r.Owner, r.Name}, func(scan func(...any) error) error {
				var inst int64
				var clone, updated string
				if err := scan(&inst, &clone, &updated); err != nil {
					return err
				}
				at, err := time.Parse(time.RFC3339Nano, updated)
				if err == nil && inst == r.InstallationID && (r.CloneURL == "" || r.CloneURL == clone) &&
					d.ReceivedAt.Sub(at) < repoRowFresh && !at.After(d.ReceivedAt.Add(time.Minute)) {
					fresh[r] = true
				}
				return nil
			})
	}
	return fresh
}

func (b *riverBackend[TTx]) record(ctx context.Context, d jobs.Delivery, p jobs.Plan) (bool, error) {
	fresh := b.freshRepos(ctx, d, p)
	tx, err := b.db.begin(ctx)
	if err != nil {
		return false, fmt.Errorf("recording delivery %s: %w", d.ID, err)
	}
	committed := false
	defer func() {
		if !committed {
			b.db.rollback(context.WithoutCancel(ctx), tx)
		}
	}()
	n, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_delivery (id, event, action, installation_id, repo, jobs, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
		d.ID, d.Event, d.Action, d.InstallationID, d.Repo, len(p.Jobs), d.ReceivedAt.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return false, fmt.Errorf("recording delivery %s: %w", d.ID, err)
	}
	if n == 0 {
		return true, nil
	}
	if p.RemoveInstID != 0 {
		if _, err := b.db.exec(ctx, tx, `DELETE FROM catalogbot_installation_repo WHERE installation_id = $1`, p.RemoveInstID); err != nil {
			return false, fmt.Errorf("forgetting installation %d: %w", p.RemoveInstID, err)
		}
	}
	for _, r := range p.RemoveRepos {
		if _, err := b.db.exec(ctx, tx, `DELETE FROM catalogbot_installation_repo WHERE owner = $1 AND name = $2`, r.Owner, r.Name); err != nil {
			return false, fmt.Errorf("forgetting repository %s/%s: %w", r.Owner, r.Name, err)
		}
	}
	for _, r := range p.UpsertRepos {
		if fresh[r] {
			continue
		}
		if _, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_installation_repo (owner, name, installation_id, clone_url, updated_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (owner, name) DO UPDATE SET installation_id = excluded.installation_id,
				clone_url = CASE WHEN excluded.clone_url = '' THEN catalogbot_installation_repo.clone_url ELSE excluded.clone_url END,
				updated_at = excluded.updated_at`,
			r.Owner, r.Name, r.InstallationID, r.CloneURL, d.ReceivedAt.UTC().Format(time.RFC3339Nano)); err != nil {
			return false, fmt.Errorf("recording repository %s/%s: %w", r.Owner, r.Name, err)
		}
	}
	for _, h := range p.Heads {
		if err := b.sawHeadTx(ctx, tx, h, d.ReceivedAt); err != nil {
			return false, fmt.Errorf("recording the head of %s/%s#%d: %w", h.Owner, h.Repo, h.Number, err)
		}
	}
	if len(p.Jobs) > 0 {
		if b.client == nil {
			return false, errNotRegistered
		}
		if _, err := b.client.InsertManyTx(ctx, tx, p.Jobs); err != nil {
			return false, fmt.Errorf("enqueueing the jobs of delivery %s: %w", d.ID, err)
		}
	}
	if b.beforeCommit != nil {
		if err := b.beforeCommit(); err != nil {
			return false, err
		}
	}
	if err := b.db.commit(ctx, tx); err != nil {
		return false, fmt.Errorf("committing delivery %s: %w", d.ID, err)
	}
	committed = true
	return false, nil
}

func (b *riverBackend[TTx]) insert(ctx context.Context, jobs []river.InsertManyParams) error {
	if b.client == nil {
		return errNotRegistered
	}
	_, err := b.client.InsertMany(ctx, jobs)
	return err
}

func (b *riverBackend[TTx]) start(ctx context.Context) error {
	if b.client == nil {
		return errNotRegistered
	}
	return b.client.Start(ctx)
}

func (b *riverBackend[TTx]) stop(ctx context.Context) error {
	if b.client == nil {
		return nil
	}
	err := b.client.Stop(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	// Jobs still run after the grace period: cancel them so that they are
	// released (retried later) instead of lost with the process.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return b.client.StopAndCancel(cctx)
}

func (b *riverBackend[TTx]) ping(ctx context.Context) error { return b.db.ping(ctx) }

func (b *riverBackend[TTx]) stats(ctx context.Context) (QueueStats, error) {
	var s QueueStats
	var age float64
	err := b.db.query(ctx, b.statsSQL, nil, func(scan func(...any) error) error {
		return scan(&s.Depth, &age)
	})
	s.OldestAvailable = time.Duration(age * float64(time.Second))
	return s, err
}

func (b *riverBackend[TTx]) installedRepos(ctx context.Context) ([]jobs.InstalledRepo, error) {
	var out []jobs.InstalledRepo
	err := b.db.query(ctx, `SELECT installation_id, owner, name, clone_url FROM catalogbot_installation_repo ORDER BY owner, name`, nil,
		func(scan func(...any) error) error {
			var r jobs.InstalledRepo
			if err := scan(&r.InstallationID, &r.Owner, &r.Name, &r.CloneURL); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
	return out, err
}

// count counts the rows of one of our or River's tables (tests, checks).
func (b *riverBackend[TTx]) count(ctx context.Context, table string) (int64, error) {
	switch table {
	case "catalogbot_delivery", "catalogbot_installation_repo", "river_job":
	default:
		return 0, fmt.Errorf("unknown table %q", table)
	}
	var n int64
	err := b.db.query(ctx, "SELECT count(*) FROM "+table, nil, func(scan func(...any) error) error { return scan(&n) })
	return n, err
}

func (b *riverBackend[TTx]) close() { b.db.close() }

// Our schema, applied in order after River's; the index is the version.
// Each dialect lists the same changes.
var (
	sqliteSchema = []string{
		`CREATE TABLE catalogbot_delivery (
			id TEXT PRIMARY KEY,
			event TEXT NOT NULL,
			action TEXT NOT NULL,
			installation_id INTEGER NOT NULL,
			repo TEXT NOT NULL,
			jobs INTEGER NOT NULL,
			received_at TEXT NOT NULL)`,
		`CREATE TABLE catalogbot_installation_repo (
			owner TEXT NOT NULL,
			name TEXT NOT NULL,
			installation_id INTEGER NOT NULL,
			clone_url TEXT NOT NULL,
			updated_at TEXT NOT NULL,
			PRIMARY KEY (owner, name))`,
	}
	postgresSchema = []string{
		`CREATE TABLE catalogbot_delivery (
			id TEXT PRIMARY KEY,
			event TEXT NOT NULL,
			action TEXT NOT NULL,
			installation_id BIGINT NOT NULL,
			repo TEXT NOT NULL,
			jobs INTEGER NOT NULL,
			received_at TEXT NOT NULL)`,
		`CREATE TABLE catalogbot_installation_repo (
			owner TEXT NOT NULL,
			name TEXT NOT NULL,
			installation_id BIGINT NOT NULL,
			clone_url TEXT NOT NULL,
			updated_at TEXT NOT NULL,
			PRIMARY KEY (owner, name))`,
	}
)

// migrateOurs applies the missing steps of our schema in one transaction.
// Replicas that start together are serialised by the caller (PostgreSQL:
// lockMigrations; SQLite: one process per file).
func migrateOurs[TTx any](ctx context.Context, db txDB[TTx], steps []string) error {
	tx, err := db.begin(ctx)
	if err != nil {
		return err
	}
	defer db.rollback(context.WithoutCancel(ctx), tx)
	if _, err := db.exec(ctx, tx, `CREATE TABLE IF NOT EXISTS catalogbot_schema (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	// The version is read inside the transaction through exec's row count:
	// delete-and-reinsert keeps exactly one row.
	version := 0
	for v := len(steps); v > 0; v-- {
		n, err := db.exec(ctx, tx, `UPDATE catalogbot_schema SET version = version WHERE version = $1`, v)
		if err != nil {
			return err
		}
		if n > 0 {
			version = v
			break
		}
	}
	for i := version; i < len(steps); i++ {
		if _, err := db.exec(ctx, tx, steps[i]); err != nil {
			return fmt.Errorf("schema step %d: %w", i+1, err)
		}
	}
	if version < len(steps) {
		if _, err := db.exec(ctx, tx, `DELETE FROM catalogbot_schema`); err != nil {
			return err
		}
		if _, err := db.exec(ctx, tx, `INSERT INTO catalogbot_schema (version) VALUES ($1)`, len(steps)); err != nil {
			return err
		}
	}
	return db.commit(ctx, tx)
}

func migrateRiver[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], schema string, log *slog.Logger) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: log})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating River's schema: %w", err)
	}
	return nil
}

// --- SQLite ---------------------------------------------------------------

type sqliteDB struct{ db *sql.DB }

var dollarParam = regexp.MustCompile(`\$(\d+)`)

// SQLite numbers parameters ?1, ?2...
func sqliteSQL(q string) string { return dollarParam.ReplaceAllString(q, "?$1") }

func (s sqliteDB) begin(ctx context.Context) (*sql.Tx, error) { return s.db.BeginTx(ctx, nil) }
func (s sqliteDB) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, sqliteSQL(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
func (s sqliteDB) commit(_ context.Context, tx *sql.Tx) error { return tx.Commit() }
func (s sqliteDB) rollback(_ context.Context, tx *sql.Tx)     { _ = tx.Rollback() }
func (s sqliteDB) query(ctx context.Context, q string, args []any, row func(func(...any) error) error) error {
	rows, err := s.db.QueryContext(ctx, sqliteSQL(q), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
func (s sqliteDB) ping(ctx context.Context) error { return s.db.PingContext(ctx) }
func (s sqliteDB) close()                         { _ = s.db.Close() }

func openSQLite(ctx context.Context, path string, log *slog.Logger) (queueBackend, error) {
	if path == "" {
		return nil, errors.New("no SQLite database path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the data directory: %w", err)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	// SQLite allows one writer; River's own advice is a single connection,
	// which also makes database/sql queue callers instead of failing busy.
	db.SetMaxOpenConns(1)
	sdb := sqliteDB{db}
	driver := riversqlite.New(db)
	if err := migrateRiver(ctx, driver, "", log); err != nil {
		db.Close()
		return nil, err
	}
	if err := migrateOurs[*sql.Tx](ctx, sdb, sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrating catalogbot's schema: %w", err)
	}
	b := &riverBackend[*sql.Tx]{driver: driver, db: sdb}
	// Deliveries write the head log: its table exists before the first one.
	if err := b.migrateTables(ctx); err != nil {
		db.Close()
		return nil, err
	}
	b.statsSQL = `SELECT
		count(*),
		COALESCE((julianday('now') - julianday(min(CASE WHEN state = 'available' THEN scheduled_at END))) * 86400.0, 0)
		FROM river_job WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'pending')`
	return b, nil
}

// --- PostgreSQL -----------------------------------------------------------

type pgDB struct{ pool *pgxpool.Pool }

func (p pgDB) begin(ctx context.Context) (pgx.Tx, error) { return p.pool.Begin(ctx) }
func (p pgDB) exec(ctx context.Context, tx pgx.Tx, q string, args ...any) (int64, error) {
	tag, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
func (p pgDB) commit(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) }
func (p pgDB) rollback(ctx context.Context, tx pgx.Tx)     { _ = tx.Rollback(ctx) }
func (p pgDB) query(ctx context.Context, q string, args []any, row func(func(...any) error) error) error {
	rows, err := p.pool.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
func (p pgDB) ping(ctx context.Context) error { return p.pool.Ping(ctx) }
func (p pgDB) close()                         { p.pool.Close() }

func openPostgres(ctx context.Context, dbURL, schema string, log *slog.Logger) (queueBackend, error) {
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		// pgx's message may quote the URL, password included.
		return nil, errors.New("the database URL does not parse as a PostgreSQL connection string")
	}
	if schema != "" {
		if !ValidSchemaName(schema) {
			return nil, fmt.Errorf("database schema %q: use letters, digits and _ only", schema)
		}
		pcfg.ConnConfig.RuntimeParams["search_path"] = schema
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	fail := func(err error) (queueBackend, error) { pool.Close(); return nil, err }
	if err := pool.Ping(ctx); err != nil {
		return fail(fmt.Errorf("connecting to PostgreSQL at %s: %w", pcfg.ConnConfig.Host, err))
	}
	// Replicas started together would race on an empty schema: CREATE
	// SCHEMA IF NOT EXISTS and River's CREATE TABLE/TYPE fail with a
	// duplicate key in the catalog when two sessions run them at once.
	unlock, err := lockMigrations(ctx, pool, schema)
	if err != nil {
		return fail(err)
	}
	b, err := newPostgresBackend(ctx, pool, schema, log)
	unlock() // before fail: closing the pool waits for the lock's connection
	if err != nil {
		return fail(err)
	}
	return b, nil
}

// newPostgresBackend migrates and builds the backend; the caller holds
// lockMigrations.
func newPostgresBackend(ctx context.Context, pool *pgxpool.Pool, schema string, log *slog.Logger) (*riverBackend[pgx.Tx], error) {
	if err := migratePostgres(ctx, pool, schema, log); err != nil {
		return nil, err
	}
	b := &riverBackend[pgx.Tx]{driver: riverpgxv5.New(pool), schema: schema, db: pgDB{pool}, statsSQL: `SELECT
		count(*),
		COALESCE(EXTRACT(EPOCH FROM now() - min(scheduled_at) FILTER (WHERE state = 'available')), 0)::float8
		FROM river_job WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'pending')`}
	// The tables beside River's are made with CREATE TABLE IF NOT EXISTS,
	// which races the same way: create them here, under the lock.
	if err := b.migrateTables(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// migrateTables creates the tables beside River's (merge, commands, rebuild,
// catalog updates, promotions), once, when the database is opened: every store of the
// queue finds them.
func (b *riverBackend[TTx]) migrateTables(ctx context.Context) error {
	for _, t := range []struct {
		what  string
		stmts []string
	}{{"merge", mergeSchema}, {"rebuild", rebuildSchema}, {"command", commandSchema}, {"catalog update", updateSchema}, {"promotion", promotionSchema}} {
		if err := b.execAll(ctx, t.stmts); err != nil {
			return fmt.Errorf("creating the %s tables: %w", t.what, err)
		}
	}
	return nil
}

func (b *riverBackend[TTx]) query(ctx context.Context, q string, args []any, row func(scan func(...any) error) error) error {
	return b.db.query(ctx, q, args, row)
}

// migratePostgres creates the schema, then runs River's migrations and ours.
// The caller holds lockMigrations.
func migratePostgres(ctx context.Context, pool *pgxpool.Pool, schema string, log *slog.Logger) error {
	if schema != "" {
		if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema); err != nil {
			return fmt.Errorf("creating schema %s: %w", schema, err)
		}
	}
	if err := migrateRiver(ctx, riverpgxv5.New(pool), schema, log); err != nil {
		return err
	}
	if err := migrateOurs[pgx.Tx](ctx, pgDB{pool}, postgresSchema); err != nil {
		return fmt.Errorf("migrating catalogbot's schema: %w", err)
	}
	return nil
}

// migrationLockKey is the advisory lock key of the migrations of one schema
// ("" is the search_path's): replicas of one deployment share it, other
// deployments on the same server (other schemas) do not wait for it.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("catalogbot migrations\x00" + schema))
	return int64(h.Sum64())
}

// lockMigrations takes a session-level advisory lock on a connection of its
// own, waiting while another replica migrates (bounded by ctx), and returns
// its release. A replica that dies holding it releases it with its
// connection.
func lockMigrations(ctx context.Context, pool *pgxpool.Pool, schema string) (unlock func(), err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("locking the schema for migration: %w", err)
	}
	key := migrationLockKey(schema)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		conn.Release()
		return nil, fmt.Errorf("waiting for another replica's migration of the schema: %w", err)
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			// The session may still hold the lock: closing it releases it.
			conn.Conn().Close(uctx)
		}
		conn.Release()
	}, nil
}

// shutdownQuiet lowers to DEBUG the errors River logs because its context was cancelled (its maintenance
// goroutines report the shutdown itself as "Error starting transaction: context canceled"): a clean stop
// must not end with an ERROR line that an operator would chase.
type shutdownQuiet struct{ slog.Handler }

func (h shutdownQuiet) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		cancelled := false
		r.Attrs(func(a slog.Attr) bool {
			if strings.Contains(a.Value.String(), context.Canceled.Error()) {
				cancelled = true
				return false
			}
			return true
		})
		if cancelled {
			if !h.Handler.Enabled(ctx, slog.LevelDebug) {
				return nil
			}
			r.Level = slog.LevelDebug
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h shutdownQuiet) WithAttrs(as []slog.Attr) slog.Handler {
	return shutdownQuiet{h.Handler.WithAttrs(as)}
}
func (h shutdownQuiet) WithGroup(g string) slog.Handler { return shutdownQuiet{h.Handler.WithGroup(g)} }

// ValidSchemaName tells whether s may name a PostgreSQL schema unquoted.
func ValidSchemaName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
