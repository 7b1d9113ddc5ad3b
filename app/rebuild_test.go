package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/internal/servertest"
)

// countingRegistry is go-containerregistry's in-process registry with a
// middleware that counts what clients upload, and can hold blob uploads
// (to stop a server in the middle of a push).
type countingRegistry struct {
	srv  *httptest.Server
	host string
	h    http.Handler

	mu          sync.Mutex
	blobUploads int            // finished blob uploads (PUT …/blobs/uploads/…)
	blobBytes   int64          // blob bytes received (PATCH and PUT bodies)
	tagPuts     map[string]int // "repo:tag" → manifest PUTs by tag
	hold        chan struct{}  // while set, blob uploads wait for it to close
	held        chan struct{}  // signalled when an upload waits
	down        atomic.Bool    // while set, the acme repositories answer 503
	refuseSigs  atomic.Bool    // while set, signature tags (*.sig) are refused with 403
	referrers   atomic.Bool    // while set, the OCI 1.1 referrers API is answered (else 404, as before OCI 1.1)
}

func newCountingRegistry(t testing.TB) *countingRegistry {
	t.Helper()
	c := &countingRegistry{h: ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)), tagPuts: map[string]int{}, held: make(chan struct{}, 64)}
	c.srv = httptest.NewServer(c)
	t.Cleanup(c.srv.Close)
	c.host = strings.TrimPrefix(c.srv.URL, "http://")
	return c
}

type countingBody struct {
	io.ReadCloser
	n *int64
	c *countingRegistry
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.mu.Lock()
	*b.n += int64(n)
	b.c.mu.Unlock()
	return n, err
}

func (c *countingRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if c.down.Load() && strings.HasPrefix(p, "/v2/acme/") {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	if !c.referrers.Load() && strings.Contains(p, "/referrers/") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if c.refuseSigs.Load() && r.Method == http.MethodPut && strings.Contains(p, "/manifests/") && strings.HasSuffix(p, ".sig") {
		http.Error(w, "signatures not accepted", http.StatusForbidden)
		return
	}
	switch {
	case strings.Contains(p, "/blobs/uploads/") && (r.Method == http.MethodPatch || r.Method == http.MethodPut):
		c.mu.Lock()
		hold := c.hold
		if r.Method == http.MethodPut {
			c.blobUploads++
		}
		c.mu.Unlock()
		if hold != nil {
			c.held <- struct{}{}
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		r.Body = countingBody{ReadCloser: r.Body, n: &c.blobBytes, c: c}
	case strings.Contains(p, "/manifests/") && r.Method == http.MethodPut:
		repo, ref, _ := strings.Cut(strings.TrimPrefix(p, "/v2/"), "/manifests/")
		if !strings.HasPrefix(ref, "sha256:") {
			c.mu.Lock()
			c.tagPuts[repo+":"+ref]++
			c.mu.Unlock()
		}
	}
	c.h.ServeHTTP(w, r)
}

func (c *countingRegistry) counts() (uploads int, bytes int64, tags map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tags = map[string]int{}
	for k, v := range c.tagPuts {
		tags[k] = v
	}
	return c.blobUploads, c.blobBytes, tags
}

func (c *countingRegistry) setHold(ch chan struct{}) {
	c.mu.Lock()
	c.hold = ch
	c.mu.Unlock()
}

// rebuildEnv is a catalog repository on a real git server, known to the
// fake GitHub, with a registry holding the base image; servers started on it
// share one database.
type rebuildEnv struct {
	t       *testing.T
	fake    *githubfake.Fake
	git     *gitServer
	work    *workRepo
	reg     *countingRegistry
	baseRef string
	cfg     *Config
	main    string // the head of main
	// tune adjusts each server's Rebuilder (tests of its limits).
	tune func(*rebuild.Rebuilder)
	// checks are the pull request checks of the server (default: validation).
	checks []checks.Check
}

func rebuildPolicy(host, baseRef string) string {
	return fmt.Sprintf(`version: 1
catalogs:
  - path: catalogs/v4.16
    image: %s/acme/catalog:latest
    baseImage: %s
maintainers: [maria]
packages:
  etcd: { owners: [bob] }
`, host, baseRef)
}

// newRebuildEnv seeds main with the policy seed returns (given the
// registry's host and the base's reference) and the valid sample catalog.
func newRebuildEnv(t *testing.T, backend string, seed func(host, baseRef string) string) *rebuildEnv {
	t.Helper()
	kp, err := testAppKey()
	if err != nil {
		t.Fatal(err)
	}
	fake := githubfake.New(githubfake.Options{AppID: e2eAppID, PublicKey: &kp.key.PublicKey})
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	reg := newCountingRegistry(t)
	baseRef := servertest.PushBaseIndex(t, reg.host, "opm/base")
	reg.mu.Lock()
	reg.blobUploads, reg.blobBytes, reg.tagPuts = 0, 0, map[string]int{} // count the App's uploads only
	reg.mu.Unlock()

	gs := newGitServer(t)
	w := gs.newRepo(t, "acme", "catalog")
	first := w.commit(map[string]string{".catalogbot.yaml": seed(reg.host, baseRef), "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
	w.push("HEAD", "refs/heads/main")
	fake.AddInstallation(e2eInstID, "acme")
	if err := fake.AddRepo(githubfake.Repo{Owner: "acme", Name: "catalog", Installation: e2eInstID, DefaultSHA: first, GitDir: gs.BarePath("acme", "catalog")}); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t)
	cfg.AppID = e2eAppID
	cfg.PrivateKey = NewSecret(kp.pem)
	cfg.WebhookSecrets = []Secret{NewSecret([]byte(e2eSecret))}
	cfg.GitHubAPIURL = githubfake.APIURL(api.URL)
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.RegistryInternalHosts = []string{reg.host}
	cfg.RegistryInsecureHosts = []string{reg.host}
	if backend == store.BackendPostgres {
		u := postgresURL(t)
		cfg.DatabaseURL = NewSecret([]byte(u))
		cfg.DatabaseSchema = freshSchema(t, u)
	}
	return &rebuildEnv{t: t, fake: fake, git: gs, work: w, reg: reg, baseRef: baseRef, cfg: cfg, main: first}
}

// newServer builds a server with the real Rebuilder on the env's database
// (not running).
func (e *rebuildEnv) newServer(ctx context.Context) *Server {
	e.t.Helper()
	fast := func(rb *rebuild.Rebuilder) {
		rb.Tune(func(t *rebuild.Tuning) { t.Wait, t.RetryWait = 100*time.Millisecond, 100*time.Millisecond })
	}
	cs := e.checks
	if cs == nil {
		cs = []checks.Check{checks.Validation{}}
	}
	srv, err := NewServer(ctx, e.cfg, testLogger(e.t), WithChecks(cs...), WithRebuild(fast, e.tune))
	if err != nil {
		e.t.Fatal(err)
	}
	return srv
}

// start runs a server until the test ends (or stop is called) and points
// the fake's webhook at it; it returns the webhook URL.
func (e *rebuildEnv) start() (srv *Server, url string, stop func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv = e.newServer(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("Run: %v", err)
			}
		})
	}
	e.t.Cleanup(stop)
	url = "http://" + ln.Addr().String() + "/webhook"
	e.fake.SetWebhook(url, e2eSecret)
	return srv, url, stop
}

// commitMain commits files on main, pushes it to the git server and moves
// GitHub's view of main to it, as a merge does.
func (e *rebuildEnv) commitMain(files map[string]string, msg string) (before, after string) {
	e.t.Helper()
	before = e.main
	after = e.work.commit(files, msg)
	e.work.push("HEAD", "refs/heads/main")
	if err := e.fake.SetBranch("acme", "catalog", "main", after); err != nil {
		e.t.Fatal(err)
	}
	e.main = after
	return before, after
}

// pushPayload is GitHub's push event, with the git server's clone URL.
func (e *rebuildEnv) pushPayload(before, after string) []byte {
	e.t.Helper()
	raw, err := e.fake.PushEvent("acme", "catalog", "main", before, after, "maria")
	if err != nil {
		e.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		e.t.Fatal(err)
	}
	m["repository"].(map[string]any)["clone_url"] = e.git.URL("acme", "catalog")
	out, err := json.Marshal(m)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *rebuildEnv) deliverPush(before, after string) {
	e.t.Helper()
	d, err := e.fake.Deliver(context.Background(), "push", e.pushPayload(before, after))
	if err != nil {
		e.t.Fatal(err)
	}
	if d.StatusCode != http.StatusAccepted {
		e.t.Fatalf("push delivery answered %d (%s)", d.StatusCode, d.Status)
	}
}

// imageRuns are the catalogbot/catalog-image runs on sha.
func (e *rebuildEnv) imageRuns(sha string) []githubfake.CheckRun {
	var out []githubfake.CheckRun
	for _, r := range e.fake.CheckRuns("acme", "catalog", sha) {
		if r.Name == jobs.RebuildCheckRunName {
			out = append(out, r)
		}
	}
	return out
}

// waitImageRun waits for a completed catalogbot/catalog-image run on sha.
func (e *rebuildEnv) waitImageRun(sha string) githubfake.CheckRun {
	e.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, r := range e.imageRuns(sha) {
			if r.Status == "completed" {
				return r
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no completed %s run on %s after 90s: %+v", jobs.RebuildCheckRunName, jobs.Short(sha), e.imageRuns(sha))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitQueueIdle(t *testing.T, q *store.Queue) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := q.Stats(context.Background())
		if err == nil && st.Depth == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue not idle after 60s: %+v %v\n%s", st, err, dumpJobs(q))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pushedDigest reads the digest a tag points at.
func (e *rebuildEnv) pushedDigest(tag string) (string, *v1.IndexManifest) {
	e.t.Helper()
	ref, err := name.ParseReference(e.reg.host+"/acme/catalog:"+tag, name.Insecure)
	if err != nil {
		e.t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		e.t.Fatalf("reading %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		e.t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		e.t.Fatal(err)
	}
	return d.String(), im
}

func TestRebuildPushesImage(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := newRebuildEnv(t, backend, rebuildPolicy)
			var rb *rebuild.Rebuilder
			e.tune = func(r *rebuild.Rebuilder) { rb = r }
			srv, _, _ := e.start()
			before, sha := e.commitMain(map[string]string{"notes/README.md": "etcd\n"}, "merge #1")
			e.deliverPush(before, sha)

			run := e.waitImageRun(sha)
			if run.Conclusion != "success" || run.ExternalID != jobs.RebuildExternalID {
				t.Fatalf("run concluded %q (external_id %q), want success: %s\n%s\n%s", run.Conclusion, run.ExternalID, run.Title, run.Summary, run.Text)
			}
			digest, im := e.pushedDigest("latest")
			if d2, _ := e.pushedDigest(sha); d2 != digest {
				t.Errorf("tag %s points at %s, latest at %s", sha, d2, digest)
			}
			if len(im.Manifests) != 2 || im.Manifests[0].Platform.Architecture != "amd64" || im.Manifests[1].Platform.Architecture != "arm64" {
				t.Errorf("pushed index has manifests %+v, want linux/amd64 and linux/arm64", im.Manifests)
			}
			if !strings.Contains(run.Summary, digest) || !strings.Contains(run.Summary, "linux/amd64, linux/arm64") {
				t.Errorf("the check run's summary lacks the digest %s and the platforms:\n%s", digest, run.Summary)
			}
			if run.Title != "Pushed 1 image" {
				t.Errorf("title %q", run.Title)
			}

			// Same catalog in, same digest out: built here from the work
			// tree's files (other mtimes, other file system) it is the image
			// the App built from git objects.
			dir := filepath.Join(e.work.dir, "catalogs", "v4.16")
			old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error { return os.Chtimes(p, old, old) })
			local, err := image.Build(context.Background(), e.baseRef, os.DirFS(dir), image.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if ld, _ := local.Digest(); ld.String() != digest {
				t.Errorf("the same catalog built from the work tree has digest %s, the App pushed %s", ld, digest)
			}

			// A second push event for the same commit (a redelivery by hand,
			// a second hook) keeps the commit's verdict: nothing is built.
			waitQueueIdle(t, srv.Queue()) // a push for a commit whose job still runs is a duplicate
			uploads, _, tags := e.reg.counts()
			e.deliverPush(before, sha)
			waitQueueIdle(t, srv.Queue())
			if runs := e.imageRuns(sha); len(runs) != 1 {
				t.Fatalf("a repeated push of a built commit made %d image runs, want the first alone: %+v", len(runs), runs)
			}
			if u, _, tg := e.reg.counts(); u != uploads || fmt.Sprint(tg) != fmt.Sprint(tags) {
				t.Errorf("a repeated push of a built commit wrote to the registry: blobs %d→%d, tags %v→%v", uploads, u, tags, tg)
			}

			// Re-run on the image run builds again: same digest, no blob
			// uploaded, no tag rewritten.
			raw, err := e.fake.CheckRunEvent("acme", "catalog", run.ID, "rerequested", "", "alice")
			if err != nil {
				t.Fatal(err)
			}
			var ev map[string]any
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			ev["repository"].(map[string]any)["clone_url"] = e.git.URL("acme", "catalog")
			if d, err := e.fake.Deliver(context.Background(), "check_run", ev); err != nil || d.StatusCode != http.StatusAccepted {
				t.Fatalf("check_run delivery: %v %+v", err, d)
			}
			deadline := time.Now().Add(60 * time.Second)
			for len(e.imageRuns(sha)) < 2 || e.imageRuns(sha)[1].Status != "completed" {
				if time.Now().After(deadline) {
					t.Fatalf("no second run: %+v", e.imageRuns(sha))
				}
				time.Sleep(50 * time.Millisecond)
			}
			second := e.imageRuns(sha)[1]
			if second.Conclusion != "success" || !strings.Contains(second.Summary, digest) {
				t.Errorf("re-run build: %s %q\n%s", second.Conclusion, second.Title, second.Summary)
			}
			uploads2, _, tags2 := e.reg.counts()
			if uploads2 != uploads {
				t.Errorf("the second build uploaded %d blobs, want none", uploads2-uploads)
			}
			if fmt.Sprint(tags2) != fmt.Sprint(tags) {
				// The tags already name this digest: nothing is written again.
				t.Errorf("tag writes %v then %v, want no new write", tags, tags2)
			}
			// The unchanged catalog was neither validated nor compressed again: its tree validated before, and
			// its layer came from the layer cache.
			if n := rb.Validations(); n != 1 {
				t.Errorf("the catalog was validated %d times, want once (the re-run's tree is the same)", n)
			}
			if hits, misses := rb.LayerCache().Stats(); hits != 1 || misses != 1 {
				t.Errorf("layer cache: %d hits, %d misses; want the first build to miss and the re-run to hit", hits, misses)
			}
			waitQueueIdle(t, srv.Queue())
		})
	}
}

func TestRebuildRefusesInvalidCatalog(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := newRebuildEnv(t, backend, rebuildPolicy)
			e.start()
			before, sha := e.commitMain(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": e2eHead}, "merge a bad version")
			e.deliverPush(before, sha)
			run := e.waitImageRun(sha)
			if run.Conclusion != "failure" || !strings.Contains(run.Summary, "does not validate") {
				t.Errorf("run %s %q, want failure saying the catalog does not validate:\n%s", run.Conclusion, run.Title, run.Summary)
			}
			found := false
			for _, l := range annotationLines(run) {
				found = found || l == "catalogs/v4.16/etcd/catalog.yaml:28 failure"
			}
			if !found {
				t.Errorf("annotations %v lack the bad version at catalogs/v4.16/etcd/catalog.yaml:28", annotationLines(run))
			}
			uploads, _, tags := e.reg.counts()
			if uploads != 0 || len(tags) != 0 {
				t.Errorf("a catalog that does not validate was pushed: %d blobs, tags %v", uploads, tags)
			}
		})
	}
}

func TestRebuildWithoutImageDoesNothing(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, func(string, string) string { return e2ePolicy })
	srv, _, _ := e.start()
	before, sha := e.commitMain(map[string]string{"notes/README.md": "etcd\n"}, "merge")
	e.deliverPush(before, sha)
	waitQueueIdle(t, srv.Queue())
	if runs := e.imageRuns(sha); len(runs) != 0 {
		t.Errorf("check runs on a repository without images: %+v", runs)
	}
	if uploads, _, tags := e.reg.counts(); uploads != 0 || len(tags) != 0 {
		t.Errorf("pushed without an image configured: %d blobs, %v", uploads, tags)
	}
	st := srv.Queue().Rebuilds()
	if s, err := st.LoadRebuild(context.Background(), "acme", "catalog"); err != nil || s.DoneSHA != sha {
		t.Errorf("rebuild state %+v, %v; want done %s", s, err, sha)
	}
}

// TestRebuildCoalesces: five merges land before any build runs; only the
// newest commit is built, the others complete as superseded. On PostgreSQL
// two replicas share the queue and the deliveries.
func TestRebuildCoalesces(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := newRebuildEnv(t, backend, rebuildPolicy)
			var shas, befores []string
			for i := 0; i < 5; i++ {
				b, s := e.commitMain(map[string]string{"notes/README.md": fmt.Sprintf("change %d\n", i)}, fmt.Sprintf("merge #%d", i+1))
				befores, shas = append(befores, b), append(shas, s)
			}
			var urls []string
			var servers []*Server
			replicas := 1
			if backend == store.BackendPostgres {
				replicas = 2
			}
			for i := 0; i < replicas; i++ {
				srv, url, _ := e.start()
				servers, urls = append(servers, srv), append(urls, url)
			}
			for i := range shas {
				url := urls[i%len(urls)]
				code, err := postSigned(url, e2eSecret, fmt.Sprintf("push-%d", i), "push", e.pushPayload(befores[i], shas[i]))
				if err != nil || code != http.StatusAccepted {
					t.Fatalf("delivery %d to %s: %d %v", i, url, code, err)
				}
			}
			newest := shas[len(shas)-1]
			if run := e.waitImageRun(newest); run.Conclusion != "success" {
				t.Fatalf("newest commit: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			for _, srv := range servers {
				waitQueueIdle(t, srv.Queue())
			}
			for _, sha := range shas[:len(shas)-1] {
				runs := e.imageRuns(sha)
				if len(runs) != 1 || runs[0].Conclusion != "neutral" || runs[0].Title != "Superseded by "+jobs.Short(newest) {
					t.Errorf("%s: runs %+v, want one neutral 'Superseded by %s'", jobs.Short(sha), runs, jobs.Short(newest))
				}
			}
			_, _, tags := e.reg.counts()
			want := map[string]int{"acme/catalog:latest": 1, "acme/catalog:" + newest: 1}
			if fmt.Sprint(tags) != fmt.Sprint(want) {
				t.Errorf("tags pushed %v, want %v (one build, of the newest commit)", tags, want)
			}
		})
	}
}

// TestRebuildAfterRestart: the push is acknowledged (stored with its job in
// one transaction) and the process goes away before any worker runs; a new
// process on the same database builds the image.
func TestRebuildAfterRestart(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := newRebuildEnv(t, backend, rebuildPolicy)
			first := e.newServer(context.Background())
			hook := httptest.NewServer(first.Handler())
			e.fake.SetWebhook(hook.URL+"/webhook", e2eSecret)
			before, sha := e.commitMain(map[string]string{"notes/README.md": "merged\n"}, "merge #7")
			e.deliverPush(before, sha)
			if n := countRows(t, first.Queue(), "river_job"); n != 3 {
				t.Fatalf("%d jobs stored, want the rebuild's, the base move's and the promotion's (the push lists no commits)", n)
			}
			hook.Close()
			first.Close()
			if runs := e.imageRuns(sha); len(runs) != 0 {
				t.Fatalf("runs before the restart: %+v", runs)
			}

			e.start()
			if run := e.waitImageRun(sha); run.Conclusion != "success" {
				t.Fatalf("after the restart: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			if d, _ := e.pushedDigest(sha); d == "" {
				t.Error("nothing pushed")
			}
		})
	}
}

// TestRebuildStoppedMidPush: the server is stopped while it pushes; the job
// is released, and the next server finishes the build on the same check run.
func TestRebuildStoppedMidPush(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, rebuildPolicy)
	e.cfg.ShutdownTimeout = time.Second
	hold := make(chan struct{})
	e.reg.setHold(hold)
	_, _, stop := e.start()
	before, sha := e.commitMain(map[string]string{"notes/README.md": "merged\n"}, "merge #8")
	e.deliverPush(before, sha)
	select {
	case <-e.reg.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the build never started pushing")
	}
	stop() // cancels the job in the middle of its push
	e.reg.setHold(nil)
	close(hold)
	if runs := e.imageRuns(sha); len(runs) != 1 || runs[0].Status != "in_progress" {
		t.Fatalf("runs after the stop: %+v", runs)
	}

	e.start()
	run := e.waitImageRun(sha)
	if run.Conclusion != "success" {
		t.Fatalf("after the restart: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	if runs := e.imageRuns(sha); len(runs) != 1 {
		t.Errorf("%d runs on the commit, want the one taken over", len(runs))
	}
}

func TestRebuildLease(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			q := openTestQueue(t, backend, testConfig(t), jobHandlers{})
			ctx := context.Background()
			s := q.Rebuilds()
			now := time.Unix(1000, 0)
			take := func(holder string, at time.Time) bool {
				t.Helper()
				ok, err := s.AcquireRebuild(ctx, "Acme", "Catalog", holder, at, at.Add(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !take("a", now) {
				t.Fatal("a free lease was refused")
			}
			if take("b", now.Add(30*time.Second)) {
				t.Error("a held lease was given to another holder")
			}
			if !take("a", now.Add(30*time.Second)) {
				t.Error("the holder could not renew its lease")
			}
			if !take("b", now.Add(2*time.Minute)) {
				t.Error("an expired lease was not given")
			}
			if err := s.ReleaseRebuild(ctx, "acme", "catalog", "a"); err != nil {
				t.Fatal(err)
			}
			if take("c", now.Add(2*time.Minute)) {
				t.Error("a release by a former holder freed the lease")
			}
			if err := s.ReleaseRebuild(ctx, "acme", "catalog", "b"); err != nil {
				t.Fatal(err)
			}
			if !take("c", now.Add(2*time.Minute)) {
				t.Error("a released lease was not given")
			}
			if ok, _ := s.AcquireRebuild(ctx, "acme", "other", "d", now, now.Add(time.Minute)); !ok {
				t.Error("the lease of another repository was refused")
			}

			for i, want := range []int{1, 2} {
				if n, err := s.FailRebuild(ctx, "acme", "catalog", "s1"); err != nil || n != want {
					t.Errorf("failure %d of s1 counted %d, %v", i+1, n, err)
				}
			}
			if n, _ := s.FailRebuild(ctx, "acme", "catalog", "s2"); n != 1 {
				t.Errorf("first failure of s2 counted %d", n)
			}
			if err := s.FinishRebuild(ctx, "acme", "catalog", "s2"); err != nil {
				t.Fatal(err)
			}
			st, err := s.LoadRebuild(ctx, "ACME", "catalog")
			if err != nil || st.DoneSHA != "s2" || st.Failures != 0 || st.Holder != "c" {
				t.Errorf("state %+v, %v", st, err)
			}
		})
	}
}

// branchReads counts GitHub's answers about main.
func (e *rebuildEnv) branchReads() int {
	n := 0
	for _, r := range e.fake.Requests() {
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/repos/acme/catalog/branches/main") {
			n++
		}
	}
	return n
}

// TestRebuildWaitsForGitHub: GitHub's view of the branch may lag the push
// event. The job asks again instead of calling its commit superseded by an
// older one, and builds once GitHub shows it.
func TestRebuildWaitsForGitHub(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, rebuildPolicy)
	e.tune = func(rb *rebuild.Rebuilder) { rb.Tune(func(t *rebuild.Tuning) { t.MaxTries = 1000 }) }
	e.start()
	before, sha := e.commitMain(map[string]string{"notes/README.md": "merged\n"}, "merge #3")
	e.fake.SetBranch("acme", "catalog", "main", before) // GitHub has not caught up yet
	e.deliverPush(before, sha)
	deadline := time.Now().Add(30 * time.Second)
	for e.branchReads() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the job did not ask GitHub again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if runs := e.imageRuns(sha); len(runs) != 0 {
		t.Fatalf("runs while GitHub lags: %+v", runs)
	}
	e.fake.SetBranch("acme", "catalog", "main", sha)
	if run := e.waitImageRun(sha); run.Conclusion != "success" {
		t.Errorf("run %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	if runs := e.imageRuns(before); len(runs) != 0 {
		t.Errorf("the older commit got runs: %+v", runs)
	}
}

// TestRebuildBranchWentBack: when GitHub keeps showing an older commit (the
// branch was reset), the pushed commit ends superseded by it after a bounded
// number of tries, and the older commit, now the head, is built.
func TestRebuildBranchWentBack(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, rebuildPolicy)
	e.start()
	before, sha := e.commitMain(map[string]string{"notes/README.md": "merged\n"}, "merge #4")
	e.fake.SetBranch("acme", "catalog", "main", before)
	e.deliverPush(before, sha)
	run := e.waitImageRun(sha)
	if run.Conclusion != "neutral" || run.Title != "Superseded by "+jobs.Short(before) {
		t.Errorf("pushed commit: %s %q, want neutral 'Superseded by %s'", run.Conclusion, run.Title, jobs.Short(before))
	}
	if run := e.waitImageRun(before); run.Conclusion != "success" {
		t.Errorf("the head: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	if n := e.branchReads(); n < 3 {
		t.Errorf("GitHub was asked %d times, want the bounded tries", n)
	}
	_, _, tags := e.reg.counts()
	if tags["acme/catalog:"+sha] != 0 || tags["acme/catalog:"+before] != 1 {
		t.Errorf("tags pushed %v; want the head's only", tags)
	}
}

// TestRebuildRetriesRegistryFailures: a registry that fails is tried again
// (the run says so while in progress) and the build completes on the same
// run once it answers; one that keeps failing fails the run after the
// bounded tries.
func TestRebuildRetriesRegistryFailures(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, rebuildPolicy)
	e.tune = func(rb *rebuild.Rebuilder) { rb.Tune(func(t *rebuild.Tuning) { t.RetryWait = 500 * time.Millisecond }) } // 0.5 s, then 1 s: time to see the note
	e.reg.down.Store(true)
	e.start()
	before, sha := e.commitMain(map[string]string{"notes/README.md": "merged\n"}, "merge #5")
	e.deliverPush(before, sha)
	deadline := time.Now().Add(60 * time.Second)
	for {
		runs := e.imageRuns(sha)
		if len(runs) == 1 && strings.Contains(runs[0].Summary, " of 3 failed") {
			if runs[0].Status != "in_progress" || !strings.Contains(runs[0].Summary, "503") {
				t.Errorf("run while retrying: %+v", runs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no retry note: %+v", runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.reg.down.Store(false)
	if run := e.waitImageRun(sha); run.Conclusion != "success" {
		t.Errorf("after the registry came back: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	if runs := e.imageRuns(sha); len(runs) != 1 {
		t.Errorf("%d runs, want one", len(runs))
	}

	e.reg.down.Store(true)
	before, sha = e.commitMain(map[string]string{"notes/README.md": "merged again\n"}, "merge #6")
	e.deliverPush(before, sha)
	run := e.waitImageRun(sha)
	if run.Conclusion != "failure" || !strings.Contains(run.Summary, "The build failed 3 times") {
		t.Errorf("registry down for good: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
}

// TestRebuildPolicyUnusable: a default branch commit whose policy file does
// not parse, is too large or is a directory gets a failed run saying so
// (problems annotated on their lines), once, and nothing is pushed.
func TestRebuildPolicyUnusable(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, rebuildPolicy)
	srv, _, _ := e.start()
	bad := strings.Replace(rebuildPolicy(e.reg.host, e.baseRef), "maintainers: [maria]", "maintainers: maria", 1)
	for _, tc := range []struct {
		name   string
		files  map[string]string
		before map[string]string // committed first, without a push event
		title  string
		ann    string
	}{
		{"does not parse", map[string]string{".catalogbot.yaml": bad}, nil, "does not parse", ".catalogbot.yaml:6 failure"},
		{"too large", map[string]string{".catalogbot.yaml": bad + "#" + strings.Repeat("x", 1<<20) + "\n"}, nil, "cannot be read", ""},
		{"directory", map[string]string{".catalogbot.yaml/README": "not a policy\n"}, map[string]string{".catalogbot.yaml": ""}, "cannot be read", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				e.work.commit(tc.before, "prepare")
			}
			before, sha := e.commitMain(tc.files, tc.name)
			e.deliverPush(before, sha)
			run := e.waitImageRun(sha)
			if run.Conclusion != "failure" || !strings.Contains(run.Title, "No image built: .catalogbot.yaml "+tc.title) ||
				!strings.Contains(run.Summary, "nothing was pushed") {
				t.Errorf("run %s %q, want a failure saying the policy %s:\n%s", run.Conclusion, run.Title, tc.title, run.Summary)
			}
			if tc.ann != "" && fmt.Sprint(annotationLines(run)) != "["+tc.ann+"]" {
				t.Errorf("annotations %v, want %s", annotationLines(run), tc.ann)
			}
			waitQueueIdle(t, srv.Queue())
			if runs := e.imageRuns(sha); len(runs) != 1 {
				t.Errorf("%d runs, want one", len(runs))
			}
			if uploads, _, tags := e.reg.counts(); uploads != 0 || len(tags) != 0 {
				t.Errorf("pushed with an unusable policy: %d blobs, tags %v", uploads, tags)
			}
		})
	}
}

// TestRebuildKeepsItsLease: a build that runs past its lease renews it, so
// no other build takes the repository; a build whose lease was taken anyway
// (a clock that jumped, a database that was away) stops before it pushes,
// and its job waits its turn instead of failing. The lease clock is the
// Rebuilder's own, moved by the test.
func TestRebuildKeepsItsLease(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, rebuildPolicy)
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	logs := &logRecorder{}
	e.tune = func(rb *rebuild.Rebuilder) {
		rb.Tune(func(t *rebuild.Tuning) {
			t.Lease, t.RenewEvery, t.Now = time.Minute, 20*time.Millisecond, clock
			t.Log = slog.New(logs)
		})
	}
	hold := make(chan struct{})
	var release sync.Once
	unhold := func() { release.Do(func() { e.reg.setHold(nil); close(hold) }) }
	e.reg.setHold(hold)
	srv, _, _ := e.start()
	t.Cleanup(unhold) // runs before the server's stop
	st := srv.Queue().Rebuilds()
	before, sha := e.commitMain(map[string]string{"notes/README.md": "merged\n"}, "merge #9")
	e.deliverPush(before, sha)
	select {
	case <-e.reg.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the build never started pushing")
	}

	// The build has run for ten leases: it renewed its lease all along.
	skew.Store(int64(10 * time.Minute))
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := st.LoadRebuild(context.Background(), "acme", "catalog")
		if err == nil && s.LeaseUntil.After(clock()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease of the running build was not renewed: %+v, %v (now %s)", s, err, clock())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ok, err := st.AcquireRebuild(context.Background(), "acme", "catalog", "other", clock(), clock().Add(time.Minute)); err != nil || ok {
		t.Fatalf("another build took the lease of a running build: %v, %v", ok, err)
	}

	// Taken anyway: the build must stop, not push.
	later := clock().Add(time.Hour)
	if ok, err := st.AcquireRebuild(context.Background(), "acme", "catalog", "thief", later, later.Add(time.Hour)); err != nil || !ok {
		t.Fatalf("taking the expired lease: %v, %v", ok, err)
	}
	// Its upload is still held, so only a build that gave the push up says
	// it waits its turn.
	logs.waitFor(t, "the build lease was lost; the build stopped and waits its turn", 1)
	unhold()
	// The job asks for the lease again and again, and never pushes while the
	// other holder has it.
	logs.waitFor(t, "another build of this repository is running; waiting", 3)
	if jobs := rebuildJobStates(t, srv.Queue()); len(jobs) != 1 || jobs[0] == "retryable" || jobs[0] == "discarded" || jobs[0] == "completed" {
		t.Errorf("rebuild jobs %v, want one waiting for the lease:\n%s", jobs, dumpJobs(srv.Queue()))
	}
	if _, _, tags := e.reg.counts(); len(tags) != 0 {
		t.Errorf("a build that lost its lease pushed %v", tags)
	}
	if runs := e.imageRuns(sha); len(runs) != 1 || runs[0].Status != "in_progress" {
		t.Errorf("runs %+v, want the one in progress, for the next try", runs)
	}
	// The other holder is done: the job takes the lease and builds.
	if err := st.ReleaseRebuild(context.Background(), "acme", "catalog", "thief"); err != nil {
		t.Fatal(err)
	}
	if run := e.waitImageRun(sha); run.Conclusion != "success" {
		t.Errorf("after the lease came back: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
}

// rebuildJobStates are the states of the rebuild jobs (SQLite queues).
func rebuildJobStates(t *testing.T, q *store.Queue) []string {
	t.Helper()
	if q.Backend() != store.BackendSQLite {
		t.Fatalf("queue backend %s, want SQLite's", q.Backend())
	}
	var out []string
	err := q.Query(context.Background(), `SELECT state FROM river_job WHERE kind = $1 ORDER BY id`, []any{jobs.KindRebuild},
		func(scan func(...any) error) error {
			var s string
			if err := scan(&s); err != nil {
				return err
			}
			out = append(out, s)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// logRecorder is a slog handler that keeps the messages logged, at every level.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// waitFor waits until msg was logged n times.
func (l *logRecorder) waitFor(t *testing.T, msg string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		got := 0
		for _, m := range l.msgs {
			if m == msg {
				got++
			}
		}
		l.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q logged %d times in 30 s, want %d", msg, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// What validation reads is what the image holds: a link that an .indexignore
// hides passes validation, so the rebuild pushes (it failed with "symbolic
// links are not copied", and so did every rebuild after), leaving it out.
func TestRebuildLeavesOutWhatIndexignoreHides(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, rebuildPolicy)
	e.start()
	notes := filepath.Join(e.work.dir, "catalogs", "v4.16", "notes")
	if err := os.MkdirAll(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(notes, "passwd.yaml")); err != nil {
		t.Skipf("cannot make a symlink here: %v", err)
	}
	before, sha := e.commitMain(map[string]string{"catalogs/v4.16/.indexignore": "notes/\n"}, "notes, ignored by opm")
	e.deliverPush(before, sha)
	run := e.waitImageRun(sha)
	if run.Conclusion != "success" {
		t.Fatalf("run concluded %q, want success: %s\n%s", run.Conclusion, run.Title, run.Summary)
	}
	digest, _ := e.pushedDigest("latest")
	// The pushed image is the one built from the loader's file set alone.
	if err := os.RemoveAll(notes); err != nil {
		t.Fatal(err)
	}
	local, err := image.Build(context.Background(), e.baseRef, os.DirFS(filepath.Join(e.work.dir, "catalogs", "v4.16")), image.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if ld, _ := local.Digest(); ld.String() != digest {
		t.Errorf("built without the ignored directory: %s; the App pushed %s", ld, digest)
	}
}
