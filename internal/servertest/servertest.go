// Package servertest runs the real `catalogbot serve` binary as a subprocess
// for tests that treat it from the outside (load, failure): it builds the
// binary, serves git repositories with `git http-backend`, starts, kills and
// measures server processes, sends signed webhook deliveries, and sets up
// what surrounds the server: the fake GitHub with the App's key, a loopback
// registry, and a look at the delivery log on PostgreSQL. Only tests import
// it.
package servertest

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
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BuildBinary builds cmd/catalogbot into dir and returns its path.
func BuildBinary(ctx context.Context, dir string) (string, error) {
	path := filepath.Join(dir, "catalogbot")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", path, "github.com/catalogbot/catalogbot/cmd/catalogbot").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building catalogbot: %w\n%s", err, out)
	}
	return path, nil
}

// Main builds the catalogbot binary into a temporary directory, sets
// *binary to its path, runs the tests, removes the directory and exits with
// the tests' code. It is the body of a TestMain; a failed build exits with
// code 2 before any test runs.
func Main(m *testing.M, binary *string) {
	dir, err := os.MkdirTemp("", "catalogbot-servertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	*binary, err = BuildBinary(context.Background(), dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// GitHost serves bare repositories under a temporary root with
// `git http-backend` over CGI, the way GitHub serves clones over HTTPS.
type GitHost struct {
	root string
	srv  *httptest.Server
}

// NewGitHost starts a git server for the test; it skips the test when git
// or git-http-backend is missing.
func NewGitHost(t testing.TB) *GitHost {
	t.Helper()
	g := &GitHost{root: t.TempDir()}
	g.srv = httptest.NewServer(GitBackend(t, g.root))
	t.Cleanup(g.srv.Close)
	return g
}

// GitBackend is `git http-backend` as a CGI handler serving every bare
// repository under root (clone URL path /owner/name.git for
// root/owner/name.git), for tests that serve it themselves; it skips the
// test when git or git-http-backend is missing.
func GitBackend(t testing.TB, root string) http.Handler {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git is not installed: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend not found: %v", err)
	}
	return &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
}

// CloneURL is the HTTP clone URL of owner/name.
func (g *GitHost) CloneURL(owner, name string) string {
	return g.srv.URL + "/" + owner + "/" + name + ".git"
}

// Git runs git in dir with a fixed identity and no user or system
// configuration, and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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

// Repo is a work tree whose commits are pushed to a bare repository of the
// git host.
type Repo struct {
	t    testing.TB
	Dir  string // the work tree
	bare string
}

// NewRepo creates owner/name on the host (empty, default branch main) and a
// work tree for it.
func (g *GitHost) NewRepo(t testing.TB, owner, name string) *Repo {
	t.Helper()
	bare := filepath.Join(g.root, owner, name+".git")
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, filepath.Dir(bare), "init", "-q", "--bare", "-b", "main", bare)
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "main")
	return &Repo{t: t, Dir: dir, bare: bare}
}

// Commit checks out rev (when not empty, detached), writes files (path →
// content), commits everything in the work tree and returns the commit.
func (r *Repo) Commit(rev string, files map[string]string, msg string) string {
	r.t.Helper()
	if rev != "" {
		Git(r.t, r.Dir, "checkout", "-q", "--detach", rev)
	}
	for p, c := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	Git(r.t, r.Dir, "add", "-A")
	Git(r.t, r.Dir, "commit", "-q", "--allow-empty", "-m", msg)
	return Git(r.t, r.Dir, "rev-parse", "HEAD")
}

// Push force-pushes rev to ref of the bare repository.
func (r *Repo) Push(rev, ref string) {
	r.t.Helper()
	Git(r.t, r.Dir, "push", "-q", "-f", r.bare, rev+":"+ref)
}

// FreePort returns a loopback address nobody listens on right now.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Replica is one `catalogbot serve` process slot: it can be started, killed
// and started again on the same address, configuration and database.
type Replica struct {
	t      testing.TB
	Name   string
	Addr   string // host:port it listens on
	binary string
	cfg    string
	env    []string
	logs   *os.File
	full   bool
	cmd    *exec.Cmd
	done   chan struct{}
	// Exits counts the times the process was found gone while WaitReady waited.
	Exits int
}

// ReplicaOptions configure NewReplica.
type ReplicaOptions struct {
	Name   string
	Binary string
	// Config is the YAML configuration file's content.
	Config string
	// Env is the environment besides PATH, HOME and CATALOGBOT_LISTEN,
	// which NewReplica sets.
	Env []string
	// FullLog shows the whole log when the test ends, even when it passed;
	// by default only a failed test shows it, and only its last 12,000 bytes.
	FullLog bool
}

// NewReplica prepares a replica (not started); it is stopped when the test
// ends and its log is shown if the test failed.
func NewReplica(t testing.TB, o ReplicaOptions) *Replica {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "catalogbot.yaml")
	if err := os.WriteFile(cfgPath, []byte(o.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	logs, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Replica{t: t, Name: o.Name, Addr: FreePort(t), binary: o.Binary, cfg: cfgPath, logs: logs, full: o.FullLog}
	r.env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "CATALOGBOT_LISTEN=" + r.Addr}, o.Env...)
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() || r.full {
			r.DumpLogs()
		}
		logs.Close()
	})
	return r
}

// URL is the replica's webhook URL.
func (r *Replica) URL() string { return "http://" + r.Addr + "/webhook" }

// Start runs the binary; it does not wait for readiness.
func (r *Replica) Start() {
	r.t.Helper()
	fmt.Fprintf(r.logs, "=== start %s at %s\n", r.Name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(r.binary, "serve", "--config", r.cfg)
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = r.logs, r.logs
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting %s: %v", r.Name, err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	done := r.done
	go func() {
		cmd.Wait()
		close(done)
	}()
}

// Alive says whether the process runs.
func (r *Replica) Alive() bool {
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

// WaitReady waits until /readyz answers 200; a process that exits is
// started again (as Kubernetes would), at most three times.
func (r *Replica) WaitReady(timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		if !r.Alive() {
			r.Exits++
			if r.Exits > 3 {
				r.t.Fatalf("%s exited %d times before becoming ready (crash loop); see its log", r.Name, r.Exits)
			}
			r.t.Logf("%s exited before becoming ready; starting it again", r.Name)
			r.Start()
		}
		resp, err := client.Get("http://" + r.Addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("%s not ready after %s", r.Name, timeout)
}

// Kill sends SIGKILL and waits for the process to be gone.
func (r *Replica) Kill() {
	if !r.Alive() {
		return
	}
	fmt.Fprintf(r.logs, "=== SIGKILL %s at %s\n", r.Name, time.Now().Format(time.RFC3339Nano))
	r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

// Stop ends the process gracefully (SIGTERM), or kills it after 15 s.
func (r *Replica) Stop() {
	if !r.Alive() {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		r.Kill()
	}
}

// Memory is what /proc/<pid>/status says about a process's memory, in KiB.
type Memory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the highest resident set since the process started
}

// Memory reads the replica's memory; zero when it does not run.
func (r *Replica) Memory() Memory {
	if !r.Alive() {
		return Memory{}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		return Memory{}
	}
	var m Memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Sscanf(strings.TrimSpace(v), "%d", &m.Peak)
		} else if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscanf(strings.TrimSpace(v), "%d", &m.RSS)
		}
	}
	return m
}

// DumpLogs logs the end of the replica's output (all of it with FullLog).
func (r *Replica) DumpLogs() {
	b, err := os.ReadFile(r.logs.Name())
	if err != nil {
		return
	}
	if len(b) > 12000 && !r.full {
		b = b[len(b)-12000:]
	}
	r.t.Logf("last lines of %s's log:\n%s", r.Name, b)
}

// WaitLog waits until the replica's output, over all its starts, contains
// s (a log message such as "resync done" that says the server has settled).
func (r *Replica) WaitLog(s string, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(r.logs.Name())
		if err == nil && bytes.Contains(b, []byte(s)) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("%s did not log %q within %s", r.Name, s, timeout)
}

// NewGUID is a random X-GitHub-Delivery value.
func NewGUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Delivery is one webhook as GitHub sends it.
type Delivery struct {
	GUID  string
	Event string
	Body  []byte
}

// Sign is the X-Hub-Signature-256 value GitHub sends with body for a
// webhook with secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Send posts d to url signed with secret, and returns the status, or 0 and
// the error. It gives up after 10 s, as GitHub does.
func Send(ctx context.Context, client *http.Client, url, secret string, d Delivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Hub-Signature-256", Sign(secret, d.Body))
	req.Header.Set("X-GitHub-Delivery", d.GUID)
	req.Header.Set("X-GitHub-Event", d.Event)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Bare is the path of the bare repository the work tree pushes to.
func (r *Repo) Bare() string { return r.bare }
