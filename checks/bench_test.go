package checks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/load"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
)

// sharedCatalog finds a catalog of ../shared/testdata/catalogs, or skips.
func sharedCatalog(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "shared", "testdata", "catalogs", name)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("%s is absent (it ships only beside the project's own checkouts): %v", dir, err)
	}
	return dir
}

// benchRepo commits a real catalog as the base, then a head that adds one new
// bundle (a copy of a channel head with a new version, CRDs included) on a new
// channel replacing that head, in each of n packages. With CHECKPR_REPO_DIR
// set, the repository is made in a new directory under it and kept, so that
// `catalog-check check` can be timed on it (docs/benchmarks.md).
func benchRepo(b *testing.B, catalogDir string, n int) (dir, base, head string) {
	b.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	dir = b.TempDir()
	if keep := os.Getenv("CHECKPR_REPO_DIR"); keep != "" {
		dir = filepath.Join(keep, strings.ReplaceAll(b.Name(), "/", "_"))
		if err := os.MkdirAll(keep, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatalf("CHECKPR_REPO_DIR: %v (remove the directory to make it again)", err)
		}
		defer func() { b.Logf("repository %s: --base %s --head %s --author bob", dir, base, head) }()
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	root := filepath.Join(dir, "catalogs", "v4.16")
	if err := os.CopyFS(root, os.DirFS(catalogDir)); err != nil {
		b.Fatal(err)
	}
	cat, err := catalog.LoadDir(context.Background(), catalogDir, catalog.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	var owners strings.Builder
	changed := 0
	var files []string
	for _, p := range cat.Packages {
		fmt.Fprintf(&owners, "  %s: {owners: [bob]}\n", p.Name)
		if changed == n || !p.Declared {
			continue
		}
		headName, err := cat.ChannelHead(p.Name, p.DefaultChannel)
		if err != nil {
			continue
		}
		hb := p.Bundle(headName)
		if hb == nil || !hb.HasObjects() {
			continue
		}
		blob, err := json.Marshal(hb.Value)
		if err != nil {
			b.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(blob, &m); err != nil {
			b.Fatal(err)
		}
		newName := p.Name + ".v999.0.0"
		m["name"] = newName
		for _, prop := range m["properties"].([]any) {
			pm := prop.(map[string]any)
			if pm["type"] == "olm.package" {
				pm["value"] = map[string]any{"packageName": p.Name, "version": "999.0.0"}
			}
		}
		bundleJSON, _ := json.Marshal(m)
		channelJSON, _ := json.Marshal(map[string]any{"schema": "olm.channel", "package": p.Name, "name": "bench",
			"entries": []any{map[string]any{"name": newName, "replaces": headName}}})
		files = append(files, filepath.Join(root, filepath.Dir(filepath.FromSlash(hb.Pos.File)), "bench.json"))
		files = append(files, string(bundleJSON)+"\n"+string(channelJSON)+"\n")
		changed++
	}
	if changed < n {
		b.Skipf("only %d packages have a default channel head with CRDs", changed)
	}
	if err := os.WriteFile(filepath.Join(dir, ".catalogbot.yaml"), []byte("version: 1\ncatalogs: [{path: catalogs/v4.16}]\nmaintainers: [alice]\npackages:\n"+owners.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base = git("rev-parse", "HEAD")
	for i := 0; i < len(files); i += 2 {
		if err := os.WriteFile(files[i], []byte(files[i+1]), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "new bundles")
	head = git("rev-parse", "HEAD")
	// Pack the objects, as a clone or fetch leaves them.
	git("repack", "-adq")
	return dir, base, head
}

// BenchmarkCheckPR is a full check (ownership, validation, immutability,
// crd-safety; no registry I/O) of a pull request adding bundles to 1 and to 5
// packages of the community v4.16 catalog committed in a repository: cold (a
// fresh process that knows nothing: every file is parsed once to learn which
// packages it holds), indexed (a fresh process with the file summary index of
// an earlier run, as catalog-check with its cache directory: only the touched
// packages' files are read) and warm (the App: index and parse cache).
func BenchmarkCheckPR(b *testing.B) {
	// CHECKPR_CATALOG picks another catalog (scripts/bench-growth.sh gives
	// it the derived catalogs of 20-600 MB).
	src := os.Getenv("CHECKPR_CATALOG")
	if src == "" {
		src = sharedCatalog(b, "community-operators-prod-v4.16")
	}
	for _, tc := range []struct {
		n    int
		mode string
	}{{1, "cold"}, {5, "cold"}, {1, "indexed"}, {5, "indexed"}, {1, "warm"}, {5, "warm"}} {
		name := fmt.Sprintf("packages=%d/%s", tc.n, tc.mode)
		b.Run(name, func(b *testing.B) {
			dir, base, head := benchRepo(b, src, tc.n)
			ctx := context.Background()
			// warm: the App keeps a parse cache keyed by blob hash, so only the
			// files a pull request changed are parsed again.
			var cache *load.ParseCache
			var index *load.SummaryIndex
			var objects *gitfs.ObjectCache // the App's git cache shares decoded trees between checks
			var policies *gitpr.PolicyCache
			switch tc.mode {
			case "warm":
				cache = load.NewParseCache(512 << 20)
				index = load.NewSummaryIndex(0)
				objects = gitfs.NewObjectCache()
				policies = gitpr.NewPolicyCache()
			case "indexed":
				index = load.NewSummaryIndex(0)
			}
			run := func() []checks.Result {
				repo, err := gitfs.OpenShared(dir, objects)
				if err != nil {
					b.Fatal(err)
				}
				defer repo.Close()
				pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: base, Head: head, Author: "bob", DiffFromMergeBase: true, Limits: catalog.Limits{Cache: cache, Index: index}, Policies: policies})
				if err != nil {
					b.Fatal(err)
				}
				runner := checks.NewRunner([]checks.Check{checks.Ownership{}, checks.Validation{}, checks.Immutability{}, checks.CRDSafety{}})
				if err := checks.Prepare(ctx, pr); err != nil {
					b.Fatal(err)
				}
				return runner.Run(ctx, pr)
			}
			for _, r := range run() { // the fixture must really pass
				if r.Conclusion != checks.Success {
					b.Fatalf("%s: %s %s %v", r.Check, r.Conclusion, r.Err, r.Findings)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				run()
			}
		})
	}
}
