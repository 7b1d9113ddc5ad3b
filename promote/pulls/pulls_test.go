package pulls

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/promote"
)

// memRecords stands for the App's durable records.
type memRecords struct {
	mu sync.Mutex
	m  map[string]Record
}

func (r *memRecords) RecordCommit(_ context.Context, rec Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[rec.SHA] = rec
	return nil
}

func (r *memRecords) Commit(_ context.Context, owner, repo, sha string) (Record, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[sha]
	return rec, ok && rec.Owner == owner && rec.Repo == repo, nil
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestOpen: on the fake GitHub with a real git repository behind its Git database API, each package the plan
// promotes gets one commit on the default branch's head, recorded before its branch catalogbot/promote/v4.23/<pkg>
// moves, and one pull request labelled with its strategy; the never package gets none; the branch holds
// exactly what promote.Verify accepts; running it again opens and commits nothing.
func TestOpen(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS("../../testdata/promote")); err != nil {
		t.Fatal(err)
	}
	run(t, work, "git", "init", "-q", "-b", "main")
	run(t, work, "git", "add", "-A")
	run(t, work, "git", "commit", "-q", "-m", "catalogs up to v4.22")
	base := run(t, work, "git", "rev-parse", "HEAD")
	baseTree := run(t, work, "git", "rev-parse", "HEAD^{tree}")
	bare := filepath.Join(t.TempDir(), "repo.git")
	run(t, work, "git", "clone", "-q", "--bare", work, bare)

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	const appID, instID = 7, 70
	fake := githubfake.New(githubfake.Options{AppID: appID, PublicKey: &key.PublicKey})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	fake.AddInstallation(instID, "acme")
	if err := fake.AddRepo(githubfake.Repo{Owner: "acme", Name: "catalog", Installation: instID, DefaultSHA: base, GitDir: bare}); err != nil {
		t.Fatal(err)
	}
	api := githubfake.APIURL(srv.URL)
	atr := ghinstallation.NewAppsTransportFromPrivateKey(http.DefaultTransport, appID, key)
	atr.BaseURL = strings.TrimSuffix(api, "/")
	itr := ghinstallation.NewFromAppsTransport(atr, instID)
	itr.BaseURL = atr.BaseURL
	gh, err := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(api, api)
	if err != nil {
		t.Fatal(err)
	}

	pol, err := policy.Parse(".catalogbot.yaml", mustRead(t, filepath.Join(work, ".catalogbot.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := gitfs.Open(bare)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	baseFS, err := repo.TreeFS(ctx, mustHash(t, repo, base), gitfs.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	opt := promote.Options{From: "v4.22", To: "v4.23"}
	plan, err := promote.Compute(ctx, baseFS, pol, opt)
	if err != nil {
		t.Fatal(err)
	}
	records := &memRecords{m: map[string]Record{}}
	o := &Opener{GH: gh, Owner: "acme", Repo: "catalog", DefaultBranch: "main", Records: records}
	results, err := o.Open(ctx, plan, base, baseTree)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ action, label string }{
		"acme-operator":   {"opened", "catalog-promotion/always"},
		"gizmo-operator":  {"opened", "catalog-promotion/review-needed"},
		"legacy-operator": {"opened", "catalog-promotion/review-needed"},
		"frozen-operator": {"skipped", ""},
	}
	if len(results) != len(want) {
		t.Fatalf("%d results: %+v", len(results), results)
	}
	numbers := map[string]int{}
	for _, r := range results {
		w := want[r.Package]
		if r.Action != w.action {
			t.Errorf("%s: %s, want %s", r.Package, r.Action, w.action)
		}
		if r.Action == "skipped" {
			continue
		}
		numbers[r.Package] = r.Number
		pr, ok := fake.PullRequest("acme", "catalog", r.Number)
		if !ok {
			t.Fatalf("%s: #%d is not on GitHub", r.Package, r.Number)
		}
		if pr.HeadRef != "catalogbot/promote/v4.23/"+r.Package || pr.BaseRef != "main" || pr.Author != fake.BotLogin() || pr.State != "open" {
			t.Errorf("%s: %+v", r.Package, pr)
		}
		if len(pr.Labels) != 1 || pr.Labels[0] != w.label {
			t.Errorf("%s: labels %v, want %s", r.Package, pr.Labels, w.label)
		}
		rec, ok, _ := records.Commit(ctx, "acme", "catalog", pr.HeadSHA)
		if !ok || rec.Package != r.Package || rec.Base != base || rec.To != "v4.23" {
			t.Errorf("%s: the head %s is not recorded as the App's promotion commit: %+v", r.Package, pr.HeadSHA, rec)
		}
		// The branch holds exactly the promotion computed on the base.
		var pk *promote.Package
		for i := range plan.Packages {
			if plan.Packages[i].Name == r.Package {
				pk = &plan.Packages[i]
			}
		}
		headFS, err := repo.TreeFS(ctx, mustHash(t, repo, pr.HeadSHA), gitfs.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var changed []string
		for _, f := range pk.Files {
			changed = append(changed, f.Path)
		}
		if got, why := promote.Verify(ctx, baseFS, headFS, pol, opt, r.Package, changed); got == nil {
			t.Errorf("%s: the branch is not the promotion: %s", r.Package, why)
		}
	}
	if n := len(records.m); n != 3 {
		t.Errorf("%d commits recorded, want 3", n)
	}

	// Again: nothing new.
	again, err := o.Open(ctx, plan, base, baseTree)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		if r.Action != "unchanged" && r.Action != "skipped" || r.Action == "unchanged" && r.Number != numbers[r.Package] {
			t.Errorf("second run: %+v", r)
		}
	}
	if n := len(records.m); n != 3 {
		t.Errorf("%d commits recorded after the second run, want 3", n)
	}

	// Without records nothing is opened: an unrecorded promotion could never be trusted.
	if _, err := (&Opener{GH: gh, Owner: "acme", Repo: "catalog", DefaultBranch: "main"}).Open(ctx, plan, base, baseTree); err == nil {
		t.Error("opened without records")
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustHash(t *testing.T, repo *gitfs.Repo, s string) gitfs.Hash {
	t.Helper()
	h, err := repo.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
