package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bundle directories in a pull request are never followed either (issue 26.7, as a CI job meets it): on a
// real git repository, a bundle pull request whose directory holds a link (git mode 120000) to a file outside
// the bundle — a manifest, the annotations file, or manifests/ itself pointing at another folder of the
// repository — fails validation with bundle.not-regular-file on the link's path, and what the link points at
// (a marker in the repository, outside the bundle) appears nowhere in the output.
func TestCheckBundlePullRequestWithLinks(t *testing.T) {
	const marker = "TOP-SECRET-MARKER"
	for _, tc := range []struct {
		name, link, target, where string
	}{
		{"a manifest linked to a file outside the bundle", "manifests/secret.yaml", "../../../../private/secret.yaml", "operators/etcd/1.1.0/manifests/secret.yaml"},
		{"the annotations file linked outside", "metadata/annotations.yaml", "../../../../private/annotations.yaml", "operators/etcd/1.1.0/metadata/annotations.yaml"},
		{"manifests/ linked to a folder outside", "manifests", "../../../private/manifests", "operators/etcd/1.1.0/manifests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, git, write := testRepo(t)
			write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nbundles: [{path: operators, ownersFromCIYaml: true}]\nmaintainers: [alice]\n")
			write("catalogs/v4.16/.keep", "")
			write("operators/etcd/ci.yaml", "reviewers: [bob]\n")
			secret := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\ndata: {key: " + marker + "}\n"
			write("private/secret.yaml", secret)
			write("private/annotations.yaml", bundleAnnotations+"  com.example/leak: "+marker+"\n")
			write("private/manifests/csv.yaml", strings.ReplaceAll(bundleCSV, "1.0.0", "1.1.0"))
			write("private/manifests/secret.yaml", secret)
			git("add", "-A")
			git("commit", "-q", "-m", "base")
			base := git("rev-parse", "HEAD")
			git("checkout", "-q", "-b", "pr")
			for name, body := range etcdBundleFiles("1.1.0", "etcd", "registry+v1") {
				write(name, body)
			}
			p := filepath.Join(dir, "operators", "etcd", "1.1.0", filepath.FromSlash(tc.link))
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target, p); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("the link does not resolve in the work tree: %v", err)
			}
			git("add", "-A")
			git("commit", "-q", "-m", "etcd 1.1.0")
			if mode := git("ls-tree", "HEAD", "operators/etcd/1.1.0/"+tc.link); !strings.HasPrefix(mode, "120000") {
				t.Fatalf("not a link in git: %s", mode)
			}
			head := git("rev-parse", "HEAD")
			code, v, out := checkJSON(t, dir, base, head, "bob", "ownership,validation,immutability,crd-safety,templates")
			if code != exitFail {
				t.Errorf("exit %d, want 1\n%s", code, out)
			}
			found := false
			for _, f := range resultOf(t, v, "validation").Findings {
				if f.Rule == "bundle.not-regular-file" && f.File == tc.where && f.Severity == "error" {
					found = true
				}
			}
			if !found {
				t.Errorf("no bundle.not-regular-file error on %s\n%s", tc.where, out)
			}
			if strings.Contains(out, marker) {
				t.Errorf("what the link points at was read:\n%s", out)
			}
		})
	}
}
