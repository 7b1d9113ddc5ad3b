package docs_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestNoPathOfThisMachine: no tracked file names the directory the repository was cloned into, nor its
// parent (where the shared test data and the reference tools of the machine it was written on live): what
// a file needs from outside the repository is a relative path (../shared/testdata), a flag or an
// environment variable. Paths that are the same on every machine (/tmp, /) are not looked for.
func TestNoPathOfThisMachine(t *testing.T) {
	root := repoRoot(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	var needles []string
	for _, dir := range []string{root, filepath.Dir(root)} {
		clean := filepath.Clean(dir)
		if clean == "/" || clean == filepath.Clean(os.TempDir()) || clean == "/home" || clean == "/root" {
			continue
		}
		needles = append(needles, clean+"/")
	}
	if len(needles) == 0 {
		t.Skipf("the repository is at %s: no directory of this machine to look for", root)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			continue // removed in the work tree, or binary
		}
		for _, n := range needles {
			if i := bytes.Index(data, []byte(n)); i >= 0 {
				line := 1 + bytes.Count(data[:i], []byte("\n"))
				t.Errorf("%s:%d names %s, a directory of this machine: use a path relative to the repository, a flag or an environment variable", f, line, n)
			}
		}
	}
}

// TestNoInternalNoteCitations: no tracked file cites the project's internal notes (a seed number and section),
// which no user or contributor of a clone can open; rule sources, hints and comments name public documents
// (the preflight's documentation, opm's behaviour, docs/rules.md) instead.
func TestNoInternalNoteCitations(t *testing.T) {
	root := repoRoot(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to scan", err)
	}
	cite := regexp.MustCompile(`(?i)\bseeds? ?0\d\d\b|\x{00a7}`)
	n := 0
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			continue
		}
		n++
		for _, loc := range cite.FindAllIndex(data, 3) {
			line := 1 + bytes.Count(data[:loc[0]], []byte("\n"))
			t.Errorf("%s:%d cites %q, an internal note nobody with a clone can read: name a public document instead", f, line, data[loc[0]:loc[1]])
		}
	}
	if n < 100 {
		t.Fatalf("scanned %d files: the listing is broken", n)
	}
}

// TestScriptsWithoutReferenceTools: the programs under scripts/ that run a reference tool say what they skip
// and exit 0 on a machine without it (they are documented commands, and a fresh clone must pass CI), and
// exit 2 with a message, never a panic, when the path given for it is not a tool; the shell scripts that need
// one say which and exit 2.
func TestScriptsWithoutReferenceTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the scripts; not in -short")
	}
	root := repoRoot(t)
	bin := t.TempDir()
	scripts := []string{"bench-templates", "record-bundle-render", "record-template-render"}
	args := []string{"build", "-o", bin + string(filepath.Separator)}
	for _, s := range scripts {
		args = append(args, "./scripts/"+s)
	}
	build := exec.Command("go", args...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Any directory will do as the bundle tree: the tool is looked for first.
	bundles := t.TempDir()
	home := t.TempDir()
	run := func(t *testing.T, script string, env []string, args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, script), args...)
		cmd.Dir = t.TempDir() // a relative default path must not find anything by chance
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, "cache")}, env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		if strings.Contains(string(out), "panic") || strings.Contains(string(out), "goroutine ") {
			t.Errorf("%s %v panicked:\n%s", script, args, out)
		}
		return string(out), code
	}
	for _, s := range scripts {
		t.Run(s, func(t *testing.T) {
			out, code := run(t, s, nil, "-bundles", bundles)
			if code != 0 || !strings.Contains(out, s+": skipped: no opm binary") {
				t.Errorf("without opm: exit %d, output %q; want exit 0 and %q", code, out, s+": skipped: no opm binary")
			}
			out, code = run(t, s, nil, "-bundles", filepath.Join(bundles, "absent"))
			if code != 0 || !strings.Contains(out, "skipped: ") || !strings.Contains(out, "is not a directory") {
				t.Errorf("without the bundle tree: exit %d, output %q; want exit 0 and a skip naming the directory", code, out)
			}
			out, code = run(t, s, []string{"OPM=" + filepath.Join(home, "no-opm"), "CATALOGBOT_TOOLS=" + home}, "-bundles", bundles)
			if code != 0 || !strings.Contains(out, "is not an executable file") {
				t.Errorf("with $OPM naming nothing: exit %d, output %q; want exit 0 and a skip naming $OPM", code, out)
			}
		})
	}
	for _, s := range []string{"bench-templates", "record-bundle-render"} {
		out, code := run(t, s, nil, "-bundles", bundles, "-opm", filepath.Join(home, "no-opm"))
		if code != 2 || !strings.Contains(out, "-opm names") {
			t.Errorf("%s -opm MISSING: exit %d, output %q; want exit 2 and a message naming -opm", s, code, out)
		}
	}

	// The shell scripts that measure against or record from a reference tool say which one is missing and
	// exit 2 before they build or run anything. (A machine without GNU time is told that first by those that
	// need it.)
	for _, tc := range []struct {
		script string
		args   []string
		want   string
	}{
		{"bench-bundles.sh", []string{bundles}, "opm not found at " + home},
		{"bench-bundles.sh", []string{filepath.Join(bundles, "absent")}, "is not a directory"},
		{"bench-validate.sh", nil, "opm not found at " + home},
		{"bench-crd-diff.sh", nil, "crdify not found at " + home},
		{"record-opm-golden.sh", nil, "opm not found; run scripts/build-reference-tools.sh"},
		{"record-crdify-golden.sh", nil, "crdify not found at " + home},
		{"replay-crd-safety.sh", []string{t.TempDir()}, "crdify not found at " + home},
	} {
		t.Run(tc.script, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "scripts", tc.script)}, tc.args...)...)
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "WORK=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			noTime := strings.Contains(string(out), "/usr/bin/time missing")
			if code != 2 || !strings.Contains(string(out), tc.want) && !noTime {
				t.Errorf("exit %d, output %q; want exit 2 and %q", code, out, tc.want)
			}
		})
	}
}

// TestVersionOfAClone: catalog-check built in a git clone, as the README says, prints its version and the
// commit it was built from (not "dev"). -buildvcs=true is given because a machine may turn stamping off
// in its go env; it is Go's default in a clone.
func TestVersionOfAClone(t *testing.T) {
	if testing.Short() {
		t.Skip("clones and builds; not in -short")
	}
	root := repoRoot(t)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v)", err)
	}
	clone := filepath.Join(t.TempDir(), "catalogbot")
	if out, err := exec.Command("git", "clone", "-q", "--depth", "1", "file://"+root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "catalog-check")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/catalog-check")
	build.Dir = clone
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("version: %v\n%s", err, out)
	}
	rev := strings.TrimSpace(string(head))
	first, _, _ := strings.Cut(string(out), "\n")
	if !strings.HasPrefix(first, "catalog-check v0.0.0-") || !strings.HasSuffix(first, rev[:12]) {
		t.Errorf("first line %q, want catalog-check and the pseudo-version of %s", first, rev)
	}
	if !strings.Contains(string(out), "commit: "+rev) {
		t.Errorf("version does not name the commit %s:\n%s", rev, out)
	}
	short, _ := exec.Command(bin, "--version").CombinedOutput()
	if strings.TrimSpace(string(short)) != strings.TrimPrefix(first, "catalog-check ") {
		t.Errorf("--version = %q, want %q", short, strings.TrimPrefix(first, "catalog-check "))
	}
}

// TestSetupExplainsEveryPermission: every permission the App manifest asks for has its row in
// docs/setup.md, with the level asked and the calls that need it, and the guide explains none the
// manifest does not ask for.
func TestSetupExplainsEveryPermission(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "github-app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Permissions map[string]string `json:"default_permissions"`
	}
	if err := sigsyaml.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "docs", "setup.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+): ([a-z]+)` \\| ([^|]+) \\| ([^|]+) \\|$")
	explained := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(guide), -1) {
		explained[m[1]] = m[2]
		if !strings.Contains(m[4], "`") {
			t.Errorf("docs/setup.md: %s: names no call", m[1])
		}
	}
	if len(manifest.Permissions) == 0 {
		t.Fatal("the manifest asks for no permission: its parsing is broken")
	}
	for perm, level := range manifest.Permissions {
		if got, ok := explained[perm]; !ok || got != level {
			t.Errorf("deploy/github-app.yaml asks for %s: %s; docs/setup.md explains %q", perm, level, got)
		}
	}
	for perm := range explained {
		if _, ok := manifest.Permissions[perm]; !ok {
			t.Errorf("docs/setup.md explains %s, which the manifest does not ask for", perm)
		}
	}
}

// TestPolicyExampleShowsEveryKey: docs/catalogbot.example.yaml, which says it shows every key, has each
// top-level key docs/policy.md describes and each key of their tables.
func TestPolicyExampleShowsEveryKey(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "catalogbot.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var example map[string]any
	if err := sigsyaml.Unmarshal(raw, &example); err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("^### `([A-Za-z]+)`")
	row := regexp.MustCompile("^\\| `([A-Za-z]+)` \\|")
	sections := map[string][]string{}
	current := ""
	for _, line := range strings.Split(string(doc), "\n") {
		switch m := heading.FindStringSubmatch(line); {
		case m != nil:
			current = m[1]
			sections[current] = nil
		case strings.HasPrefix(line, "#"):
			current = ""
		case current != "":
			if r := row.FindStringSubmatch(line); r != nil {
				sections[current] = append(sections[current], r[1])
			}
		}
	}
	if len(sections) < 10 {
		t.Fatalf("found %d keys in docs/policy.md: its reading is broken", len(sections))
	}
	has := func(v any, key string) bool {
		switch v := v.(type) {
		case map[string]any:
			_, ok := v[key]
			return ok
		case []any:
			for _, e := range v {
				if m, ok := e.(map[string]any); ok {
					if _, ok := m[key]; ok {
						return true
					}
				}
			}
		}
		return false
	}
	for key, sub := range sections {
		v, ok := example[key]
		if !ok {
			t.Errorf("docs/catalogbot.example.yaml has no %s", key)
			continue
		}
		for _, s := range sub {
			if !has(v, s) {
				t.Errorf("docs/catalogbot.example.yaml: %s has no %s", key, s)
			}
		}
	}
}

// TestActionPinnedInputs: the README and the example workflow pin the Action to one commit of this
// repository, and the inputs the README lists are those of action.yml at that commit — and of action.yml
// now (the pin is current). A shallow clone that lacks the commit skips, saying so.
func TestActionPinnedInputs(t *testing.T) {
	root := repoRoot(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	pinRE := regexp.MustCompile(`catalogbot/catalogbot/\.github/actions/catalog-check@([0-9a-f]{40})`)
	pins := map[string]string{}
	for _, f := range []string{"README.md", "docs/examples/catalog-check-workflow.yml"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		ms := pinRE.FindAllStringSubmatch(string(data), -1)
		if len(ms) == 0 {
			t.Fatalf("%s pins the Action to no commit SHA", f)
		}
		for _, m := range ms {
			pins[m[1]] = f
		}
	}
	if len(pins) != 1 {
		t.Fatalf("the Action is pinned to %d different commits: %v", len(pins), pins)
	}
	var pin string
	for p := range pins {
		pin = p
	}
	git := func(args ...string) ([]byte, error) {
		return exec.Command("git", append([]string{"-C", root}, args...)...).Output()
	}
	if _, err := git("cat-file", "-e", pin+"^{commit}"); err != nil {
		if out, _ := git("rev-parse", "--is-shallow-repository"); strings.TrimSpace(string(out)) == "true" {
			t.Skipf("the pinned commit %s is not in this shallow clone (fetch with --unshallow to check it)", pin)
		}
		if _, err := git("rev-parse", "HEAD"); err != nil {
			t.Skipf("not a git checkout: %v", err)
		}
		t.Fatalf("the pinned commit %s is not a commit of this repository", pin)
	}
	inputsOf := func(data []byte) []string {
		var a struct {
			Inputs map[string]any `json:"inputs"`
		}
		if err := sigsyaml.Unmarshal(data, &a); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range a.Inputs {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	atPin, err := git("show", pin+":.github/actions/catalog-check/action.yml")
	if err != nil {
		t.Fatalf("the pinned commit %s has no .github/actions/catalog-check/action.yml: %v", pin, err)
	}
	now, err := os.ReadFile(filepath.Join(root, ".github", "actions", "catalog-check", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	readme, _ := os.ReadFile(filepath.Join(root, "README.md"))
	section := string(readme)
	if i := strings.Index(section, "### In GitHub Actions"); i >= 0 {
		section = section[i:]
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	sort.Strings(documented)
	pinned, current := inputsOf(atPin), inputsOf(now)
	if strings.Join(documented, ",") != strings.Join(pinned, ",") {
		t.Errorf("the README documents the inputs %v; action.yml at the pinned commit %s has %v", documented, pin[:12], pinned)
	}
	if strings.Join(current, ",") != strings.Join(pinned, ",") {
		t.Errorf("action.yml has the inputs %v, the pinned commit %s %v: pin a current commit", current, pin[:12], pinned)
	}
}
