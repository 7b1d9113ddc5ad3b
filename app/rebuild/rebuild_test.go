package rebuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/servertest"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// workRepo is a git work tree on main with a fixed identity.
type workRepo struct {
	t   testing.TB
	dir string
}

func newWorkRepo(t testing.TB) *workRepo {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	return &workRepo{t: t, dir: dir}
}

// runGit runs git in dir with no user or system configuration.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return servertest.Git(t, dir, args...)
}

// commit writes files (path → content) and commits them.
func (w *workRepo) commit(files map[string]string, msg string) string {
	w.t.Helper()
	for p, c := range files {
		full := filepath.Join(w.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	runGit(w.t, w.dir, "add", "-A")
	runGit(w.t, w.dir, "commit", "-q", "--allow-empty", "-m", msg)
	return runGit(w.t, w.dir, "rev-parse", "HEAD")
}

var backendNames = []string{store.BackendSQLite, store.BackendPostgres}

// openTestQueue is a queue with no workers on backend (PostgreSQL skips
// when it is not reachable), for the rebuild's and updates' tables.
func openTestQueue(t testing.TB, backend string) *store.Queue {
	t.Helper()
	opt := store.QueueOptions{SQLitePath: filepath.Join(t.TempDir(), "q.db"), River: &river.Config{}, Log: testLogger(t)}
	if backend == store.BackendPostgres {
		opt.DatabaseURL = testpg.URL(t)
		opt.Schema = testpg.FreshSchema(t, opt.DatabaseURL, "cbtest_")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := store.OpenQueue(ctx, opt)
	if err != nil {
		t.Fatalf("store.OpenQueue: %v", err)
	}
	t.Cleanup(q.Close)
	return q
}

func TestSummariseRebuild(t *testing.T) {
	res := summarise("abc", []targetResult{
		{Catalog: "a", Image: "q.io/x/a:latest", Pushed: []string{"q.io/x/a:latest", "q.io/x/a:abc"}, Digest: "sha256:1", Platforms: []string{"linux/amd64"}},
		{Catalog: "b", Image: "q.io/x/b:latest", Problem: "no base image"},
	}, nil, 3)
	if res.Conclusion != checks.Failure || res.Title != "Pushed 1, not pushed 1" ||
		!strings.Contains(res.Summary, "`sha256:1`") || !strings.Contains(res.Summary, "**`b` was not pushed:** no base image") {
		t.Errorf("summary: %s %q\n%s", res.Conclusion, res.Title, res.Summary)
	}
	if got := pushTags("latest", "abc"); fmt.Sprint(got) != "[latest abc]" {
		t.Errorf("pushTags = %v", got)
	}
}

// releaseStore takes every lease and records whether the release of one was
// bounded in time.
type releaseStore struct {
	store.RebuildStore
	released chan bool // whether the release's context had a deadline
}

func (s releaseStore) AcquireRebuild(context.Context, string, string, string, time.Time, time.Time) (bool, error) {
	return true, nil
}

func (s releaseStore) ReleaseRebuild(ctx context.Context, _, _, _ string) error {
	_, ok := ctx.Deadline()
	s.released <- ok
	return nil
}

type noClients struct{}

func (noClients) Installation(context.Context, int64) (*github.Client, error) {
	return nil, errors.New("no GitHub here")
}
func (noClients) InstallationToken(context.Context, int64) (string, error) {
	return "", errors.New("no GitHub here")
}

// TestRebuildReleaseBounded: the lease is released even when the job's
// context is done, and that database call has a deadline of its own (a
// database that hangs must not hold the worker forever).
func TestRebuildReleaseBounded(t *testing.T) {
	s := releaseStore{released: make(chan bool, 1)}
	rb := &Rebuilder{log: testLogger(t), store: s, gh: noClients{}, lease: time.Minute, wait: time.Second, now: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rb.handle(ctx, jobs.RebuildArgs{Owner: "acme", Repo: "catalog", Ref: "refs/heads/main", SHA: strings.Repeat("a", 40)}, ""); err == nil {
		t.Error("handle without GitHub succeeded")
	}
	select {
	case bounded := <-s.released:
		if !bounded {
			t.Error("the lease was released with a context without deadline")
		}
	default:
		t.Error("the lease was not released")
	}
}

// TestRebuildRetryTakesOverItsLease: a build killed while holding the
// repository's lease leaves it unexpired; the retry of that job (same key)
// takes it over at once, where any other job waits for it to expire.
func TestRebuildRetryTakesOverItsLease(t *testing.T) {
	q := openTestQueue(t, store.BackendSQLite)
	ctx := context.Background()
	s := q.Rebuilds()
	now := time.Now()
	if ok, err := s.AcquireRebuild(ctx, "acme", "catalog", "job:42.1700000000000000", now, now.Add(time.Hour)); err != nil || !ok {
		t.Fatalf("the killed attempt's lease: %v %v", ok, err)
	}
	rb := &Rebuilder{log: testLogger(t), store: s, gh: noClients{}, lease: time.Minute, wait: time.Second, now: time.Now}
	a := jobs.RebuildArgs{Owner: "acme", Repo: "catalog", Ref: "refs/heads/main", SHA: strings.Repeat("a", 40)}

	// Another job finds the lease taken and snoozes.
	_, err := rb.handle(ctx, a, "43.1700000000000000")
	var snooze *river.JobSnoozeError
	if !errors.As(err, &snooze) {
		t.Errorf("another job with the lease held: %v, want a snooze", err)
	}
	// The same job goes on (here to GitHub, which this test does not have).
	_, err = rb.handle(ctx, a, "42.1700000000000000")
	if errors.As(err, &snooze) || err == nil || !strings.Contains(err.Error(), "no GitHub here") {
		t.Errorf("the retried job: %v, want it past the lease, failing on GitHub", err)
	}
}
