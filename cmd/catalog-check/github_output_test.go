package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --output github stays within GitHub's annotation limits (10 errors and 10 warnings per step): the errors
// come first, a notice says how many were left out, and the step summary lists every finding in a table with
// the upgrade graph. Before, every finding was a workflow command and GitHub silently dropped all past the
// tenth.
func TestGitHubOutputWithinAnnotationLimits(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\npackages:\n  etcd: {owners: [bob]}\n")
	channel := "---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n"
	write("catalog/etcd/catalog.yaml", etcdPackage+channel+etcdBundle("quay.io/acme/etcd-bundle", "1.0.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	// 25 bundles whose versions do not parse: 25 errors at least.
	var b strings.Builder
	b.WriteString(etcdPackage + channel)
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&b, "  - name: etcd.v2.%d\n    replaces: etcd.v1.0.0\n", i)
	}
	b.WriteString(etcdBundle("quay.io/acme/etcd-bundle", "1.0.0"))
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: etcd\nname: etcd.v2.%d\nimage: quay.io/acme/etcd-bundle:v2\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: not-a-version-%d}\n", i, i)
	}
	write("catalog/etcd/catalog.yaml", b.String())
	git("add", "-A")
	git("commit", "-q", "-m", "many")
	head := git("rev-parse", "HEAD")

	summary := filepath.Join(t.TempDir(), "summary.md")
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), []string{"check", "--repo", dir, "--base", base, "--head", head, "--author", "bob",
		"--checks", "ownership,validation,immutability", "--output", "github"}, &out, &errb,
		env{getenv: func(k string) string {
			if k == "GITHUB_STEP_SUMMARY" {
				return summary
			}
			return ""
		}})
	if code != exitFail {
		t.Fatalf("exit %d, want %d\n%s", code, exitFail, errb.String())
	}
	var errors, warnings, notices int
	for _, l := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "::error "):
			errors++
		case strings.HasPrefix(l, "::warning "):
			warnings++
		case strings.HasPrefix(l, "::notice "):
			notices++
			if !strings.Contains(l, "more findings not annotated") {
				t.Errorf("notice %q does not say how many were left out", l)
			}
		}
	}
	if errors != 10 || warnings > 10 || notices != 1 {
		t.Errorf("%d errors, %d warnings, %d notices annotated; want 10 errors, at most 10 warnings and one notice\n%s", errors, warnings, notices, out.String())
	}
	sum, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Count(string(sum), "| `catalog/etcd/catalog.yaml:")
	if rows < 25 {
		t.Errorf("the step summary lists %d findings, want every one (25 or more)", rows)
	}
	if !strings.Contains(string(sum), "```mermaid") {
		t.Errorf("the step summary has no upgrade graph:\n%s", sum)
	}
}
