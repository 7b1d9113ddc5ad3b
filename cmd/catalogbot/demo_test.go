package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestDemo runs the README's first command end to end: the real server
// against the GitHub simulator, git http-backend and a local registry.
func TestDemo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"demo"}, &out, &errb); code != exitOK {
		t.Fatalf("demo exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{
		"catalogbot/crd-safety    failure",
		"catalogs/v4.16/etcd/catalog.yaml:31  failure  upgrade etcd.v1.0.0 → etcd.v1.1.0",
		"^.spec.version",
		"catalogbot/images        failure",
		"relatedImages[operator]",
		"catalogbot/ownership     success",
		"catalogbot/validate      success",
		"pull request #2 by @carol",
		"adds the bundle directory operators/redis/1.1.0",
		"catalogbot/bundle-image  success  1 bundle image pushed",
		"by @catalogbot[bot] from catalogbot/catalog-update/redis",
		"catalogbot/ownership     success  Catalog update derived from merged bundles",
		"catalogbot/catalog-image success  Pushed 1 image",
		"from the merge of the bundle pull request to the catalog image that serves it",
		// Each pull request says what is meant to happen to it, and what did.
		"intended outcome: two checks fail, on purpose",
		"outcome of #1, as intended: not merged — catalogbot/crd-safety and catalogbot/images failed",
		"it stays open until @bob pushes a fix",
		"intended outcome: every check passes and catalogbot merges it",
		"outcome of #2, as intended: catalogbot merged it",
		"outcome of #3, as intended: catalogbot merged it",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	// The bundle pull request passes every check: carol owns redis through ci.yaml, the bundle is valid, its
	// CRD is compatible with 1.0.0's and its operand image exists.
	second := out.String()[strings.Index(out.String(), "pull request #2"):]
	for _, run := range []string{"catalogbot/crd-safety    success", "catalogbot/images        success", "catalogbot/ownership     success", "catalogbot/validate      success"} {
		if !strings.Contains(second, run) {
			t.Errorf("the bundle pull request lacks %q:\n%s", run, second)
		}
	}
}

// demo -v keeps the server's logs off stdout (stdout is what GitHub would show) and a clean run ends
// without an ERROR line (River's shutdown used to log one).
func TestDemoVerboseIsClean(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"demo", "-v"}, &out, &errb); code != exitOK {
		t.Fatalf("demo -v exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "level=") || strings.HasPrefix(l, `{"time"`) {
			t.Errorf("a log line on stdout: %s", l)
			break
		}
	}
	if strings.Contains(errb.String(), "level=ERROR") || strings.Contains(errb.String(), `"level":"ERROR"`) {
		t.Errorf("demo -v logged an ERROR:\n%s", errb.String())
	}
	// The comment commands' table closes every pull request run's summary; -v prints it once.
	if n := strings.Count(out.String(), "| `/approve` |"); n != 1 {
		t.Errorf("demo -v prints the comment commands' table %d times, want once", n)
	}
	if n := strings.Count(out.String(), "(the comment commands, as under the first run above)"); n < 10 {
		t.Errorf("demo -v points back to the table %d times, want one per later pull request run", n)
	}
}
