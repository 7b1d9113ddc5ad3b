package gitpr

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/gitfs"
)

// The policy cache serves the parse of one policy file to every pull request
// against it, and a base with another policy file gets that file's parse.
func TestPolicyCache(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\n")
	write("catalog/a.json", "{}\n")
	git("add", "-A")
	git("commit", "-q", "-m", "one")
	first := git("rev-parse", "HEAD")
	write("catalog/a.json", "{ }\n")
	git("commit", "-qam", "same policy")
	second := git("rev-parse", "HEAD")
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [bob]\n")
	git("commit", "-qam", "other policy")
	third := git("rev-parse", "HEAD")

	repo, err := gitfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	cache := NewPolicyCache()
	build := func(base string) *Options {
		t.Helper()
		o := &Options{Base: base, Head: third, Author: "carol", Policies: cache}
		return o
	}
	ctx := context.Background()
	pr1, err := Build(ctx, repo, *build(first))
	if err != nil {
		t.Fatal(err)
	}
	pr2, err := Build(ctx, repo, *build(second))
	if err != nil {
		t.Fatal(err)
	}
	if pr1.Policy != pr2.Policy {
		t.Errorf("the same policy file was parsed twice")
	}
	pr3, err := Build(ctx, repo, *build(third))
	if err != nil {
		t.Fatal(err)
	}
	if pr3.Policy == pr1.Policy || len(pr3.Policy.Maintainers) != 1 || pr3.Policy.Maintainers[0].Login != "bob" {
		t.Errorf("another policy file got the cached parse: %+v", pr3.Policy.Maintainers)
	}
}
