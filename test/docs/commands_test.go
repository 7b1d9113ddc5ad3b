// Package docs_test runs the commands README.md and docs/*.md show, exactly as written, from the repository
// root: a reader who copies one gets what the text says. Commands that need what a test machine does not
// have (a Kubernetes cluster, a container daemon, a registry you own) or placeholders the reader fills in
// are listed with the reason they are not run; a command the test does not know fails it, so a new one
// cannot slip in unrun.
package docs_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// command is one shell command of the docs and where it is written.
type command struct {
	file, text string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// docCommands reads the commands of README.md and docs/*.md: each line of a sh/bash code block (continued
// lines joined, comments dropped) and each inline code span that starts with "go run ./".
func docCommands(t *testing.T, root string) []command {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	block := regexp.MustCompile("(?s)```(?:sh|bash|shell)\n(.*?)```")
	inline := regexp.MustCompile("`(go run \\./[^`]+)`")
	var out []command
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		text := string(raw)
		for _, m := range block.FindAllStringSubmatch(text, -1) {
			for _, line := range strings.Split(strings.ReplaceAll(m[1], "\\\n", " "), "\n") {
				line = strings.TrimSpace(line)
				if line != "" && !strings.HasPrefix(line, "#") {
					out = append(out, command{rel, line})
				}
			}
		}
		for _, m := range inline.FindAllStringSubmatch(block.ReplaceAllString(text, ""), -1) {
			out = append(out, command{rel, m[1]})
		}
	}
	return out
}

// notRun says why a command is not run here, or "" when it is.
func notRun(c string) string {
	first := strings.Fields(c)[0]
	switch {
	case c == "bash .ci/run":
		return "it is CI itself, which runs this test"
	case first == "kubectl" || strings.Contains(c, "kubectl "):
		return "needs a Kubernetes cluster (the manifests are rendered and checked by deploy's tests)"
	case first == "kustomize" || strings.HasPrefix(c, "mkdir -p my-catalogbot"):
		return "edits a kustomization of the reader's (deploy's TestSetupGuideImageOverride renders what these commands write)"
	case first == "docker":
		return "needs a container daemon and a registry of the reader's (deploy's TestDockerfile checks the Dockerfile)"
	case first == "curl":
		return "talks to a deployed server (cmd/catalogbot's serve test calls the same endpoints)"
	case strings.Contains(c, "./deploy/appmanifest"):
		return "registers an App with the reader's own addresses, which the guide says to write into deploy/github-app.yaml first (deploy/appmanifest's tests run it on such a manifest)"
	case strings.Contains(c, "<digest>") || strings.Contains(c, "<code>"):
		return "a placeholder the reader fills in (<digest>, <code>)"
	case first == "cosign":
		return "verifies an image the reader's catalogbot signed in the reader's registry, with cosign (test/sigclients runs cosign verify and verify-attestation on images catalogbot signed, when cosign is built)"
	case strings.HasPrefix(c, "CATALOGBOT_LOAD=1 go test ./test/load"):
		return "a load measurement of up to 25 minutes (two server processes, PostgreSQL), run by hand; without CATALOGBOT_LOAD=1 the package skips, as in .ci/run"
	case strings.HasPrefix(c, "go test ./test/resilience"):
		return "a test of test/resilience, which .ci/run's race-detector stage runs with the rest"
	}
	return ""
}

// commandLine is a line of a code block that is a command a reader runs (an environment assignment may come
// first), as opposed to output or a configuration file.
var commandLine = regexp.MustCompile(`^(?:[A-Z_][A-Z0-9_]*=\S* )*(?:go|bash|sh|git|catalog-check|catalogbot|opm|cosign|crdify|kubectl|kustomize|docker|curl|openssl|scripts/\S+|\./\S+) `)

// TestCommandsAreInShellBlocks: a command shown in a code block that is not marked sh (or bash, shell) would be
// neither run nor classified by TestDocCommandsRun: every such block is marked.
func TestCommandsAreInShellBlocks(t *testing.T) {
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	fence := regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range fence.FindAllSubmatchIndex(raw, -1) {
			lang := string(raw[m[2]:m[3]])
			if lang == "sh" || lang == "bash" || lang == "shell" {
				continue
			}
			for i, line := range strings.Split(string(raw[m[4]:m[5]]), "\n") {
				if commandLine.MatchString(strings.TrimSpace(line)) {
					n := 1 + bytes.Count(raw[:m[4]], []byte("\n")) + i
					t.Errorf("%s:%d: %q is a command in a code block marked %q: mark the block sh, so that the docs test runs it or says why not", rel, n, strings.TrimSpace(line), lang)
				}
			}
		}
	}
}

// TestDocCommandsRun runs every runnable command of the docs from the repository root, as a reader would,
// and expects it to succeed; the files a command writes into the tree are removed after it.
func TestDocCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go builds; not in -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	root := repoRoot(t)
	cmds := docCommands(t, root)
	if len(cmds) < 10 {
		t.Fatalf("found %d commands in the docs; the extraction is broken", len(cmds))
	}
	ran := 0
	for _, c := range cmds {
		if why := notRun(c.text); why != "" {
			t.Logf("not run: %s: %s (%s)", c.file, c.text, why)
			continue
		}
		t.Run(c.text, func(t *testing.T) {
			before := treeFiles(t, root)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", c.text)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CATALOGBOT_DOCS_TEST=1")
			out, err := cmd.CombinedOutput()
			for f := range treeFiles(t, root) {
				if !before[f] {
					os.Remove(filepath.Join(root, f))
				}
			}
			if err != nil {
				t.Errorf("%s: `%s` failed: %v\n%s", c.file, c.text, err, out)
			}
		})
		ran++
	}
	t.Logf("%d of %d documented commands run", ran, len(cmds))
}

// treeFiles lists the files at the repository root and under docs/ (where documented commands write).
func treeFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, dir := range []string{".", "docs"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				out[filepath.Join(dir, e.Name())] = true
			}
		}
	}
	return out
}
