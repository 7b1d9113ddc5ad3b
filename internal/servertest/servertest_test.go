package servertest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

func TestGitHostServesPushedCommits(t *testing.T) {
	g := NewGitHost(t)
	r := g.NewRepo(t, "acme", "catalog")
	base := r.Commit("", map[string]string{"a/b.txt": "one\n"}, "base")
	r.Push(base, "refs/heads/main")
	head := r.Commit(base, map[string]string{"a/b.txt": "two\n"}, "change")
	r.Push(head, "refs/pull/1/head")

	dir := t.TempDir()
	Git(t, dir, "clone", "-q", g.CloneURL("acme", "catalog"), "c")
	clone := filepath.Join(dir, "c")
	if got := Git(t, clone, "rev-parse", "HEAD"); got != base {
		t.Errorf("main is %s, want %s", got, base)
	}
	Git(t, clone, "fetch", "-q", "origin", "refs/pull/1/head")
	if got := Git(t, clone, "show", "FETCH_HEAD:a/b.txt"); got != "two" {
		t.Errorf("the pull request's file reads %q, want two", got)
	}
}

func TestSendSigns(t *testing.T) {
	var got http.Header
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	d := Delivery{GUID: NewGUID(), Event: "pull_request", Body: []byte(`{"action":"opened"}`)}
	code, err := Send(context.Background(), srv.Client(), srv.URL, "s3cret", d)
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("Send: %d %v", code, err)
	}
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(d.Body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if s := Sign("s3cret", d.Body); s != want {
		t.Errorf("Sign = %q, want %q", s, want)
	}
	if got.Get("X-Hub-Signature-256") != want {
		t.Errorf("signature %q, want %q", got.Get("X-Hub-Signature-256"), want)
	}
	if got.Get("X-GitHub-Delivery") != d.GUID || got.Get("X-GitHub-Event") != "pull_request" || string(body) != string(d.Body) {
		t.Errorf("sent %v with body %s, want GUID %s, event pull_request and body %s", got, body, d.GUID, d.Body)
	}
	if NewGUID() == d.GUID {
		t.Error("two GUIDs are the same")
	}
}

// TestReplicaProcess runs a shell script in the binary's place: it is given
// the serve command, the configuration and the environment, its output is
// the log, and it can be killed and started again.
func TestReplicaProcess(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skipf("no /bin/sh: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "fake-catalogbot")
	script := "#!/bin/sh\necho \"args: $*\"\necho \"listen $CATALOGBOT_LISTEN extra $EXTRA\"\ncat \"$3\"\nexec sleep 60\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := NewReplica(t, ReplicaOptions{Name: "fake", Binary: bin, Config: "log_level: debug\n", Env: []string{"EXTRA=yes"}})
	if r.Alive() {
		t.Fatal("alive before Start")
	}
	r.Start()
	r.WaitLog("args: serve --config", 10*time.Second)
	r.WaitLog("listen "+r.Addr+" extra yes", 10*time.Second)
	r.WaitLog("log_level: debug", 10*time.Second)
	if !r.Alive() {
		t.Fatal("not alive after Start")
	}
	if m := r.Memory(); m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("memory %+v of a running process", m)
	}
	r.Kill()
	if r.Alive() {
		t.Fatal("alive after Kill")
	}
	if m := r.Memory(); m != (Memory{}) {
		t.Errorf("memory %+v of a killed process", m)
	}
	r.Start()
	if !r.Alive() {
		t.Fatal("not alive after the second Start")
	}
	r.Stop()
	if r.Alive() {
		t.Fatal("alive after Stop")
	}
	b, err := os.ReadFile(r.logs.Name())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "=== start fake"); n != 2 {
		t.Errorf("the log shows %d starts, want 2:\n%s", n, b)
	}
	if !strings.HasSuffix(r.URL(), "/webhook") || !strings.Contains(r.URL(), r.Addr) {
		t.Errorf("URL %s", r.URL())
	}
}

func TestGitHubEnv(t *testing.T) {
	g := NewGitHub(t, githubfake.Options{AppID: 42})
	env := g.Env()
	for _, want := range []string{"CATALOGBOT_APP_ID=42", "CATALOGBOT_PRIVATE_KEY_FILE=" + g.KeyFile, "CATALOGBOT_GITHUB_API_URL=" + g.APIURL} {
		if !slices.Contains(env, want) {
			t.Errorf("Env() = %v, lacks %s", env, want)
		}
	}
	if b, err := os.ReadFile(g.KeyFile); err != nil || !strings.Contains(string(b), "PRIVATE KEY") {
		t.Errorf("key file: %v %.40q", err, b)
	}
	resp, err := http.Get(g.APIURL + "app")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /app without a JWT: %d, want 401 from the fake", resp.StatusCode)
	}
}

func TestPullRequestEventPointsAtTheGitHost(t *testing.T) {
	g := NewGitHub(t, githubfake.Options{AppID: 42})
	host := NewGitHost(t)
	g.Fake.AddInstallation(9, "acme")
	sha := strings.Repeat("a", 40)
	if err := g.Fake.AddRepo(githubfake.Repo{Owner: "acme", Name: "catalog", Installation: 9, DefaultSHA: sha}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Fake.AddPullRequest("acme", "catalog", githubfake.PR{Number: 3, Author: "maria", HeadSHA: sha, BaseRef: "main"}); err != nil {
		t.Fatal(err)
	}
	body := string(g.PullRequestEvent(t, host, "acme", "catalog", 3, "opened"))
	if !strings.Contains(body, `"`+host.CloneURL("acme", "catalog")+`"`) || strings.Contains(body, "https://github.com/acme/catalog.git") {
		t.Errorf("the payload's clone URL is not the git host's:\n%s", body)
	}
}

func TestStoredDeliveries(t *testing.T) {
	dbURL := testpg.URL(t)
	schema := testpg.FreshSchema(t, dbURL, "servertest_")
	Query(t, dbURL, func(ctx context.Context, conn *pgx.Conn) error {
		for _, q := range []string{
			"CREATE SCHEMA " + schema,
			"CREATE TABLE " + schema + ".catalogbot_delivery (id text PRIMARY KEY)",
			"INSERT INTO " + schema + ".catalogbot_delivery VALUES ('a'), ('b')",
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
	got := StoredDeliveries(t, dbURL, schema)
	if len(got) != 2 || !got["a"] || !got["b"] {
		t.Errorf("StoredDeliveries = %v, want a and b", got)
	}
}

func TestPushEventPointsAtTheGitHost(t *testing.T) {
	g := NewGitHub(t, githubfake.Options{AppID: 42})
	host := NewGitHost(t)
	g.Fake.AddInstallation(9, "acme")
	before, after := strings.Repeat("a", 40), strings.Repeat("b", 40)
	if err := g.Fake.AddRepo(githubfake.Repo{Owner: "acme", Name: "catalog", Installation: 9, DefaultSHA: before}); err != nil {
		t.Fatal(err)
	}
	body := string(g.PushEvent(t, host, "acme", "catalog", "main", before, after, "maria"))
	if !strings.Contains(body, `"`+host.CloneURL("acme", "catalog")+`"`) || strings.Contains(body, "https://github.com/acme/catalog.git") {
		t.Errorf("the payload's clone URL is not the git host's:\n%s", body)
	}
	if !strings.Contains(body, `"after":"`+after+`"`) || !strings.Contains(body, `"ref":"refs/heads/main"`) {
		t.Errorf("the payload does not move main to %s:\n%s", after, body)
	}
}

func TestPushBaseIndex(t *testing.T) {
	host := NewRegistry(t)
	ref := PushBaseIndex(t, host, "opm/base")
	repo, digest, ok := strings.Cut(ref, "@")
	if !ok || repo != host+"/opm/base" || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("PushBaseIndex = %q, want %s/opm/base@sha256:…", ref, host)
	}
	if got := ImageDigest(t, ref); got != digest {
		t.Errorf("the index by digest resolves to %q, want %s", got, digest)
	}
	if got := ImageDigest(t, host+"/opm/base:base"); got != digest {
		t.Errorf("its tag resolves to %q, want %s", got, digest)
	}
	if got := ImageDigest(t, host+"/opm/base:missing"); got != "" {
		t.Errorf("a missing tag resolves to %q, want nothing", got)
	}
}
