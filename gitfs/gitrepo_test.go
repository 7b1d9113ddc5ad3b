package gitfs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runGit runs the git binary in dir with a fixed identity and dates, isolated
// from the user's configuration, and returns its trimmed output.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+dir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t testing.TB, dir, name, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// fixture is a repository with a known history:
//
//	plain:  regular files, nested directories, an executable, an empty file
//	links:  plain + a link out of the repository, a link to a directory,
//	        a submodule entry and a 2 MiB blob
//	moved:  plain with one file renamed, one modified, one deleted, one added
//	feature (branch from plain): one file added
type fixture struct {
	dir                          string
	plain, links, moved, feature string
}

const bigSize = 2 << 20

func newFixture(t testing.TB) fixture {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	writeFile(t, dir, "README.md", "hello\n", 0o644)
	writeFile(t, dir, "empty.txt", "", 0o644)
	writeFile(t, dir, "bin/run.sh", "#!/bin/sh\necho run\n", 0o755)
	writeFile(t, dir, "catalog/etcd/index.yaml", "schema: olm.package\nname: etcd\n", 0o644)
	writeFile(t, dir, "catalog/etcd/nested/deep/file.json", `{"schema":"olm.channel"}`, 0o644)
	writeFile(t, dir, "catalog/etcd.json", `{"a":1}`, 0o644) // sorts before the directory "etcd" in git, after it in io/fs
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "plain")
	f := fixture{dir: dir, plain: runGit(t, dir, "rev-parse", "HEAD")}

	runGit(t, dir, "checkout", "-q", "-b", "feature")
	writeFile(t, dir, "feature.txt", "feature\n", 0o644)
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "feature")
	f.feature = runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "checkout", "-q", "main")

	runGit(t, dir, "checkout", "-q", "-b", "links")
	if err := os.Symlink("../../etc/passwd", filepath.Join(dir, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("catalog", filepath.Join(dir, "dirlink")); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), bigSize/16)
	writeFile(t, dir, "big.bin", string(big), 0o644)
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+f.plain+",sub")
	runGit(t, dir, "commit", "-q", "-m", "links")
	f.links = runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "checkout", "-q", "-f", "main")

	runGit(t, dir, "mv", "catalog/etcd/index.yaml", "catalog/etcd/catalog.yaml")
	writeFile(t, dir, "README.md", "hello again\n", 0o644)
	runGit(t, dir, "rm", "-q", "empty.txt")
	writeFile(t, dir, "new.txt", "new\n", 0o644)
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "moved")
	f.moved = runGit(t, dir, "rev-parse", "HEAD")

	runGit(t, dir, "tag", "light", f.plain)
	runGit(t, dir, "tag", "-a", "-m", "annotated", "v1", f.plain)
	runGit(t, dir, "update-ref", "refs/pull/7/head", f.feature)
	return f
}

func openRepo(t testing.TB, dir string) *Repo {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return r
}
