package resilience

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/jackc/pgx/v5"

	"github.com/catalogbot/catalogbot/app/githubfake"

	"github.com/catalogbot/catalogbot/internal/testpg"
)

const (
	appID     = 7101
	instID    = 5151
	hookToken = "resilience-webhook-secret"
	owner     = "acme"
	repoName  = "catalog"
)

// runNames are the check runs the server reports on every head.
var runNames = []string{"catalogbot/ownership", "catalogbot/validate", "catalogbot/crd-safety", "catalogbot/images"}

// binaryPath is the catalogbot binary built once by TestMain; it is set
// before any test runs and never changed.
var binaryPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "catalogbot-resilience-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binaryPath = filepath.Join(dir, "catalogbot")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binaryPath, "github.com/catalogbot/catalogbot/cmd/catalogbot")
	out, err := cmd.CombinedOutput()
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building catalogbot: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gitHost serves bare repositories with `git http-backend` over CGI, the
// way GitHub serves clones over HTTPS.
type gitHost struct {
	root string
	srv  *httptest.Server
}

func newGitHost(t testing.TB) *gitHost {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git is not installed: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend not found: %v", err)
	}
	g := &gitHost{root: t.TempDir()}
	g.srv = httptest.NewServer(&cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gitHost) cloneURL(o, n string) string { return g.srv.URL + "/" + o + "/" + n + ".git" }

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// catalogRepo is a work tree whose commits go to the git host's bare repository.
type catalogRepo struct {
	t    testing.TB
	dir  string
	bare string
}

func (g *gitHost) newRepo(t testing.TB, o, n string) *catalogRepo {
	t.Helper()
	bare := filepath.Join(g.root, o, n+".git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, filepath.Dir(bare), "init", "-q", "--bare", "-b", "main", bare)
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	return &catalogRepo{t: t, dir: dir, bare: bare}
}

// commit writes files (path → content) on top of rev and returns the new
// commit; the work tree is left detached there.
func (w *catalogRepo) commit(rev string, files map[string]string, msg string) string {
	w.t.Helper()
	if rev != "" {
		git(w.t, w.dir, "checkout", "-q", "--detach", rev)
	}
	for p, c := range files {
		full := filepath.Join(w.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	git(w.t, w.dir, "add", "-A")
	git(w.t, w.dir, "commit", "-q", "--allow-empty", "-m", msg)
	return git(w.t, w.dir, "rev-parse", "HEAD")
}

func (w *catalogRepo) push(rev, ref string) {
	w.t.Helper()
	git(w.t, w.dir, "push", "-q", "-f", w.bare, rev+":"+ref)
}

// timedRequest is one request the fake GitHub answered, with its time.
type timedRequest struct {
	at     time.Time
	method string
	path   string
	status int
}

// apiRecorder wraps the fake and notes when each request came and how it
// was answered, to check that the server waits as GitHub asks.
type apiRecorder struct {
	h  http.Handler
	mu sync.Mutex
	rs []timedRequest
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (a *apiRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	at := time.Now()
	a.h.ServeHTTP(sw, r)
	a.mu.Lock()
	a.rs = append(a.rs, timedRequest{at: at, method: r.Method, path: strings.TrimPrefix(r.URL.Path, "/api/v3"), status: sw.status})
	a.mu.Unlock()
}

func (a *apiRecorder) requests() []timedRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]timedRequest(nil), a.rs...)
}

// world is everything around the server: a fake GitHub with acme/catalog
// installed, the git host serving it, and an empty registry on loopback.
type world struct {
	t        testing.TB
	fake     *githubfake.Fake
	api      *apiRecorder
	apiURL   string
	git      *gitHost
	repo     *catalogRepo
	registry string // host:port
	keyFile  string
	baseSHA  string
}

const policyFile = `version: 1
catalogs:
  - path: catalogs
maintainers: [maria]
newPackages: maintainers
`

// packageFile is a small valid package whose bundle image lives on the
// loopback registry (which does not have it: the images check fails fast,
// without the internet).
func packageFile(reg, pkg string, versions int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nschema: olm.package\nname: %s\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: %s\nname: stable\nentries:\n", pkg, pkg)
	for v := 1; v <= versions; v++ {
		fmt.Fprintf(&b, "  - name: %s.v1.%d.0\n", pkg, v)
		if v > 1 {
			fmt.Fprintf(&b, "    replaces: %s.v1.%d.0\n", pkg, v-1)
		}
	}
	for v := 1; v <= versions; v++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s-%d", pkg, v)))
		fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: %s\nname: %s.v1.%d.0\nimage: %s/acme/%s-bundle@sha256:%x\nproperties:\n  - type: olm.package\n    value: {packageName: %s, version: 1.%d.0}\n",
			pkg, pkg, v, reg, pkg, sum, pkg, v)
	}
	return b.String()
}

func newWorld(t testing.TB) *world {
	t.Helper()
	key, keyPEM, err := githubfake.GenerateAppKey()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t}
	w.keyFile = filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(w.keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	w.fake = githubfake.New(githubfake.Options{AppID: appID, PublicKey: &key.PublicKey})
	w.api = &apiRecorder{h: w.fake}
	api := httptest.NewServer(w.api)
	t.Cleanup(api.Close)
	w.apiURL = githubfake.APIURL(api.URL)

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	w.registry = strings.TrimPrefix(reg.URL, "http://")

	w.git = newGitHost(t)
	w.repo = w.git.newRepo(t, owner, repoName)
	w.baseSHA = w.repo.commit("", map[string]string{
		".catalogbot.yaml":           policyFile,
		"catalogs/base/catalog.yaml": packageFile(w.registry, "base", 2),
	}, "base")
	w.repo.push(w.baseSHA, "refs/heads/main")

	w.fake.AddInstallation(instID, owner)
	if err := w.fake.AddRepo(githubfake.Repo{Owner: owner, Name: repoName, Installation: instID, DefaultSHA: w.baseSHA}); err != nil {
		t.Fatal(err)
	}
	return w
}

// openPR adds PR n (a new package pkgN with one bundle) and returns its head.
func (w *world) openPR(n int) string {
	w.t.Helper()
	pkg := fmt.Sprintf("pkg%d", n)
	head := w.repo.commit(w.baseSHA, map[string]string{"catalogs/" + pkg + "/catalog.yaml": packageFile(w.registry, pkg, 1)}, "add "+pkg)
	w.repo.push(head, fmt.Sprintf("refs/pull/%d/head", n))
	if _, err := w.fake.AddPullRequest(owner, repoName, githubfake.PR{Number: n, Author: "maria", HeadSHA: head, BaseRef: "main"}); err != nil {
		w.t.Fatal(err)
	}
	return head
}

// pushPR moves PR n to a new head with one more bundle.
func (w *world) pushPR(n int, prev string, versions int) string {
	w.t.Helper()
	pkg := fmt.Sprintf("pkg%d", n)
	head := w.repo.commit(prev, map[string]string{"catalogs/" + pkg + "/catalog.yaml": packageFile(w.registry, pkg, versions)}, "bump "+pkg)
	w.repo.push(head, fmt.Sprintf("refs/pull/%d/head", n))
	if err := w.fake.PushPullRequest(owner, repoName, n, head); err != nil {
		w.t.Fatal(err)
	}
	return head
}

// prPayload is the pull_request event GitHub sends for PR n at head.
func (w *world) prPayload(action string, n int, head string) []byte {
	w.t.Helper()
	body, err := w.fake.PullRequestEvent(owner, repoName, n, action)
	if err != nil {
		w.t.Fatal(err)
	}
	// The fake's payload names github.com's clone URL; point it at the git host.
	body = bytes.ReplaceAll(body, []byte(`"https://github.com/acme/catalog.git"`), []byte(`"`+w.git.cloneURL(owner, repoName)+`"`))
	if !bytes.Contains(body, []byte(w.git.cloneURL(owner, repoName))) {
		w.t.Fatalf("pull_request payload has no clone URL to replace:\n%s", body)
	}
	if !bytes.Contains(body, []byte(head)) {
		w.t.Fatalf("pull_request payload for PR %d lacks head %s", n, head)
	}
	return body
}

// completedSets counts, per check run name on sha, the completed runs, and
// says whether the latest run of every name is completed.
func (w *world) runsOn(sha string) (completed map[string]int, inProgress int, latestDone bool) {
	completed = map[string]int{}
	latest := map[string]string{}
	for _, r := range w.fake.CheckRuns(owner, repoName, sha) { // oldest first
		latest[r.Name] = r.Status
		if r.Status == "completed" {
			completed[r.Name]++
		} else {
			inProgress++
		}
	}
	latestDone = true
	for _, n := range runNames {
		if latest[n] != "completed" {
			latestDone = false
		}
	}
	return completed, inProgress, latestDone
}

// replica is one `catalogbot serve` process slot: it can be killed and
// started again on the same address and database.
type replica struct {
	t     testing.TB
	name  string
	env   []string
	cfg   string
	addr  string
	logs  *os.File
	cmd   *exec.Cmd
	done  chan struct{}
	exits int
}

// serverOptions is what differs between runs of the server.
type serverOptions struct {
	databaseURL string
	schema      string
	dataDir     string
	workers     int
	jobTimeout  time.Duration
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func (w *world) newReplica(name string, o serverOptions) *replica {
	t := w.t
	t.Helper()
	dir := t.TempDir()
	if o.dataDir == "" {
		o.dataDir = filepath.Join(dir, "data")
	}
	if o.workers == 0 {
		o.workers = 4
	}
	if o.jobTimeout == 0 {
		o.jobTimeout = 10 * time.Second
	}
	cfg := fmt.Sprintf(`job_timeout: %s
rescue_stuck_jobs_after: %s
check_timeout: 8s
fetch_timeout: 8s
shutdown_timeout: 5s
log_level: info
database_schema: %q
registry:
  internal_hosts: [%q]
  insecure_hosts: [%q]
`, o.jobTimeout, o.jobTimeout+5*time.Second, o.schema, w.registry, w.registry)
	cfgPath := filepath.Join(dir, "catalogbot.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, name: name, cfg: cfgPath, addr: freePort(t), logs: logs}
	r.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		fmt.Sprintf("CATALOGBOT_APP_ID=%d", appID),
		"CATALOGBOT_PRIVATE_KEY_FILE=" + w.keyFile,
		"CATALOGBOT_WEBHOOK_SECRETS=" + hookToken,
		"CATALOGBOT_DATA_DIR=" + o.dataDir,
		"CATALOGBOT_GIT_CACHE_DIR=" + filepath.Join(dir, "git"),
		"CATALOGBOT_LISTEN=" + r.addr,
		fmt.Sprintf("CATALOGBOT_WORKERS=%d", o.workers),
		"CATALOGBOT_GITHUB_API_URL=" + w.apiURL,
	}
	if o.databaseURL != "" {
		r.env = append(r.env, "CATALOGBOT_DATABASE_URL="+o.databaseURL)
	}
	t.Cleanup(func() {
		r.stop()
		if t.Failed() || os.Getenv("CATALOGBOT_RESILIENCE_LOGS") == "1" {
			r.dumpLogs()
		}
		logs.Close()
	})
	return r
}

func (r *replica) url() string { return "http://" + r.addr + "/webhook" }

// start runs the binary; it does not wait for readiness.
func (r *replica) start() {
	r.t.Helper()
	fmt.Fprintf(r.logs, "=== start %s at %s\n", r.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(binaryPath, "serve", "--config", r.cfg)
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = r.logs, r.logs
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting %s: %v", r.name, err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	done := r.done
	go func() {
		cmd.Wait()
		close(done)
	}()
}

// alive says whether the process runs.
func (r *replica) alive() bool {
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// waitReady waits until /readyz answers 200; a process that exits is
// started again (as Kubernetes would), at most three times.
func (r *replica) waitReady(timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		if !r.alive() {
			r.exits++
			if r.exits > 3 {
				r.t.Fatalf("%s exited %d times before becoming ready (crash loop); see its log", r.name, r.exits)
			}
			r.t.Logf("%s exited before becoming ready; starting it again", r.name)
			r.start()
		}
		resp, err := client.Get("http://" + r.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("%s not ready after %s", r.name, timeout)
}

// kill sends SIGKILL and waits for the process to be gone.
func (r *replica) kill() {
	if !r.alive() {
		return
	}
	fmt.Fprintf(r.logs, "=== SIGKILL %s at %s\n", r.name, time.Now().Format(time.RFC3339Nano))
	r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

// stop ends the process gracefully (SIGTERM), or kills it after 10 s.
func (r *replica) stop() {
	if !r.alive() {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.kill()
	}
}

// peakRSS is the process's peak resident set (VmHWM) in KiB.
func (r *replica) peakRSS() int64 {
	if !r.alive() {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	return 0
}

func (r *replica) dumpLogs() {
	b, err := os.ReadFile(r.logs.Name())
	if err != nil {
		return
	}
	if max := logTail(); len(b) > max {
		b = b[len(b)-max:]
	}
	r.t.Logf("last lines of %s's log:\n%s", r.name, b)
}

// delivery is one webhook as GitHub would send it, under one GUID.
type delivery struct {
	guid  string
	event string
	body  []byte
	pr    int
	head  string
	// acked is set once a 2xx answer came back for this GUID.
	acked bool
	codes []int
}

func newGUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// send posts d, signed, to url; it returns the status or 0 with the error.
func send(ctx context.Context, client *http.Client, url string, d *delivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // GitHub waits 10 s
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.body))
	if err != nil {
		return 0, err
	}
	mac := hmac.New(sha256.New, []byte(hookToken))
	mac.Write(d.body)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	req.Header.Set("X-GitHub-Delivery", d.guid)
	req.Header.Set("X-GitHub-Event", d.event)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// testPostgresURL returns a reachable PostgreSQL URL or skips.
func testPostgresURL(t testing.TB) string {
	t.Helper()
	return testpg.URL(t)
}

// freshSchema names a schema for one test (the server creates it) and drops
// it afterwards.
func freshSchema(t testing.TB, dbURL string) string {
	t.Helper()
	return testpg.FreshSchema(t, dbURL, "resilience_")
}

// storedDeliveries reads the GUIDs in the server's delivery log on PostgreSQL.
func storedDeliveries(t testing.TB, dbURL, schema string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id FROM "+schema+".catalogbot_delivery")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// logTail is how much of a server log a test shows: the last 12,000 bytes,
// or all of it with CATALOGBOT_RESILIENCE_LOGS=1 (which also shows the logs
// of tests that pass).
func logTail() int {
	if os.Getenv("CATALOGBOT_RESILIENCE_LOGS") == "1" {
		return 64 << 20
	}
	return 12000
}

// waitLog waits until the replica's log contains s (the startup resync's
// "resync done", say), so that a scenario starts on a settled server.
func (r *replica) waitLog(s string, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(r.logs.Name())
		if err == nil && bytes.Contains(b, []byte(s)) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("%s did not log %q within %s", r.name, s, timeout)
}
