package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/servertest"
)

// gitServer serves bare repositories under root with `git http-backend`
// as CGI, as GitHub serves them over HTTPS.
type gitServer struct {
	root string
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string // Authorization headers seen
}

func newGitServer(t testing.TB) *gitServer {
	t.Helper()
	gs := &gitServer{root: t.TempDir()}
	h := servertest.GitBackend(t, gs.root)
	gs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gs.mu.Lock()
		gs.auth = append(gs.auth, r.Header.Get("Authorization"))
		gs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(gs.srv.Close)
	return gs
}

// URL is the clone URL of owner/name.
func (gs *gitServer) URL(owner, name string) string {
	return gs.srv.URL + "/" + owner + "/" + name + ".git"
}

// BarePath is where owner/name lives on the server.
func (gs *gitServer) BarePath(owner, name string) string {
	return filepath.Join(gs.root, owner, name+".git")
}

// runGit runs git in dir with a fixed identity and no user or system
// configuration, and returns its trimmed output.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return servertest.Git(t, dir, args...)
}

// workRepo is a work tree whose commits are pushed to the server's bare repository.
type workRepo struct {
	t    testing.TB
	dir  string
	bare string
}

func (gs *gitServer) newRepo(t testing.TB, owner, name string) *workRepo {
	t.Helper()
	bare := gs.BarePath(owner, name)
	os.MkdirAll(filepath.Dir(bare), 0o755)
	runGit(t, filepath.Dir(bare), "init", "-q", "--bare", "-b", "main", bare)
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	return &workRepo{t: t, dir: dir, bare: bare}
}

// commit writes files (path → content; "" deletes) and commits them.
func (w *workRepo) commit(files map[string]string, msg string) string {
	w.t.Helper()
	for p, c := range files {
		full := filepath.Join(w.dir, p)
		if c == "" {
			os.Remove(full)
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	runGit(w.t, w.dir, "add", "-A")
	runGit(w.t, w.dir, "commit", "-q", "--allow-empty", "-m", msg)
	return runGit(w.t, w.dir, "rev-parse", "HEAD")
}

// push pushes rev to ref on the server (force).
func (w *workRepo) push(rev, ref string) {
	w.t.Helper()
	runGit(w.t, w.dir, "push", "-q", "-f", w.bare, rev+":"+ref)
}

func TestGitCacheFetch(t *testing.T) {
	gs := newGitServer(t)
	w := gs.newRepo(t, "acme", "catalog")
	base := w.commit(map[string]string{"README": "base\n"}, "base")
	w.push("HEAD", "refs/heads/main")
	runGit(t, w.dir, "checkout", "-q", "-b", "pr")
	head := w.commit(map[string]string{"catalog/x/index.yaml": "schema: olm.package\nname: x\n"}, "pr")
	w.push("HEAD", "refs/pull/1/head")

	cache, err := ghapp.NewGitCache(t.TempDir(), 30*time.Second, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	refs := []string{"refs/heads/main", "refs/pull/1/head"}
	path, err := cache.Fetch(ctx, "acme", "catalog", gs.URL("acme", "catalog"), "tok3n", refs)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	assertRefs := func(wantBase, wantHead string) {
		t.Helper()
		repo, err := gitfs.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for ref, want := range map[string]string{"refs/heads/main": wantBase, "refs/pull/1/head": wantHead} {
			got, err := repo.Resolve(ref)
			if err != nil || got.String() != want {
				t.Errorf("Resolve(%s) = %s, %v; want %s", ref, got, err, want)
			}
		}
	}
	assertRefs(base, head)
	if _, err := os.Stat(filepath.Join(path, "HEAD")); err != nil {
		t.Errorf("the cache is not a bare repository: %v", err)
	}
	if entries, _ := os.ReadDir(path); len(entries) == 0 {
		t.Error("empty cache directory")
	}
	gs.mu.Lock()
	sawToken := false
	for _, a := range gs.auth {
		// x-access-token:tok3n in base64
		if a == "Basic eC1hY2Nlc3MtdG9rZW46dG9rM24=" {
			sawToken = true
		}
	}
	gs.mu.Unlock()
	if !sawToken {
		t.Error("the installation token was not sent as basic auth with user x-access-token")
	}
	if cfg, _ := os.ReadFile(filepath.Join(path, "config")); strings.Contains(string(cfg), "tok3n") || strings.Contains(string(cfg), gs.srv.URL) {
		t.Errorf("the cache's config records the remote or the token:\n%s", cfg)
	}

	// The PR is force-pushed and main moves: an incremental fetch, from
	// several jobs at once.
	runGit(t, w.dir, "checkout", "-q", "main")
	base2 := w.commit(map[string]string{"README": "base 2\n"}, "base 2")
	w.push("HEAD", "refs/heads/main")
	runGit(t, w.dir, "checkout", "-q", "pr")
	runGit(t, w.dir, "commit", "-q", "--amend", "-m", "pr amended")
	head2 := runGit(t, w.dir, "rev-parse", "HEAD")
	w.push("HEAD", "refs/pull/1/head")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = cache.Fetch(ctx, "acme", "catalog", gs.URL("acme", "catalog"), "tok3n", refs)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Fetch %d: %v", i, err)
		}
	}
	assertRefs(base2, head2)
}

func TestGitCacheRefuses(t *testing.T) {
	cache, err := ghapp.NewGitCache(t.TempDir(), time.Second, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, owner, repo, url string
		refs                   []string
	}{
		{"dot-dot owner", "..", "r", "https://h/x.git", []string{"refs/heads/main"}},
		{"slash in repo", "o", "a/b", "https://h/x.git", []string{"refs/heads/main"}},
		{"ssh url", "o", "r", "ssh://h/x.git", []string{"refs/heads/main"}},
		{"credentials in url", "o", "r", "https://u:p@h/x.git", []string{"refs/heads/main"}},
		{"tag ref", "o", "r", "https://h/x.git", []string{"refs/tags/v1"}},
		{"ref with dot-dot", "o", "r", "https://h/x.git", []string{"refs/heads/../../x"}},
		{"wildcard ref", "o", "r", "https://h/x.git", []string{"refs/heads/*"}},
	}
	for _, tt := range tests {
		if _, err := cache.Fetch(context.Background(), tt.owner, tt.repo, tt.url, "", tt.refs); err == nil {
			t.Errorf("%s: Fetch = nil error, want a refusal", tt.name)
		}
	}
}

func TestGitCacheMissingRepository(t *testing.T) {
	gs := newGitServer(t)
	cache, err := ghapp.NewGitCache(t.TempDir(), 10*time.Second, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cache.Fetch(context.Background(), "acme", "nothing", gs.URL("acme", "nothing"), "", []string{"refs/heads/main"})
	if err == nil {
		t.Fatal("Fetch of a missing repository = nil error")
	}
}
