package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/checks"
)

// countingRegistry is go-containerregistry's registry on loopback, counting every request; while down is
// set it answers 503 to everything.
type countingRegistry struct {
	host     string
	requests atomic.Int64
	down     atomic.Bool
}

func newCountingRegistry(t *testing.T) *countingRegistry {
	t.Helper()
	cr := &countingRegistry{}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cr.requests.Add(1)
		if cr.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cr.host = strings.TrimPrefix(srv.URL, "http://")
	return cr
}

// pushBundle builds the bundle directory dir's image (as the App builds it) and pushes it as repo:tag; it
// returns the reference by digest.
func (cr *countingRegistry) pushBundle(t *testing.T, dir, repo string) string {
	t.Helper()
	ctx := context.Background()
	b, _, err := bundle.Load(ctx, os.DirFS(dir), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.BundleImage(ctx, os.DirFS(dir), b.Annotations, image.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(cr.host+"/"+repo+":latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	cr.requests.Store(0)
	return cr.host + "/" + repo + "@" + d.String()
}

// registryTemplateRepo is identityRepo's layout with a policy allowing allowed, and a pull request (head) in
// which bob's template gains 1.1.0 as img2, with the catalog rendered from the bundle directories.
func registryTemplateRepo(t *testing.T, allowed string, img2 func(r *identityRepo) string) (*identityRepo, string) {
	t.Helper()
	r := newIdentityRepo(t)
	r.write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nmaintainers: [alice]\n"+
		"bundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true, image: \""+identityPattern+"\"}]\n"+
		"images: {allowedRegistries: [\""+allowed+"\"]}\n")
	r.git("commit", "-q", "-am", "policy")
	r.base = r.git("rev-parse", "HEAD")
	r.git("checkout", "-q", "-B", "pr", r.base)
	r.setTemplate(t, "quay.io/acme/etcd-bundle@"+r.digests["1.0.0"], img2(r), false)
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "etcd 1.1.0")
	return r, r.git("rev-parse", "HEAD")
}

// templateCheck runs `catalog-check template check --pull` as author and returns the exit code and the
// templates result.
func templateCheck(t *testing.T, r *identityRepo, head, author, host string) (int, checks.Result, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), []string{"template", "check", "--repo", r.dir, "--base", r.base, "--head", head, "--author", author,
		"--pull", "--insecure-registry", host, "--output", "json"}, &out, &errb, env{getenv: func(string) string { return "" }})
	var v verdict
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("output is not JSON (%v):\n%s\n%s", err, out.String(), errb.String())
	}
	return code, resultOf(t, v, "templates"), out.String() + errb.String()
}

// The templates check pulls only inside images.allowedRegistries, and only after the ownership gate: a
// template image on a registry the policy does not allow is not contacted (not verified, neutral, exit 2,
// saying why); a stranger's pull request (mallory owns nothing it touches) sends no request either, even
// with --pull and the ownership check not asked for, and is told the pull waits for an owner's approval; the
// owner's pull request pulls the image and the catalog matches.
func TestTemplateCheckPullsOnlyAllowedAfterTheGate(t *testing.T) {
	reg := newCountingRegistry(t)
	var pushed string
	img := func(r *identityRepo) string {
		pushed = reg.pushBundle(t, filepath.Join(r.dir, "operators", "etcd", "1.1.0"), "acme/etcd-operator-bundle")
		return pushed
	}

	t.Run("outside the allowed registries", func(t *testing.T) {
		r, head := registryTemplateRepo(t, "quay.io/acme", img)
		code, res, out := templateCheck(t, r, head, "bob", reg.host)
		if n := reg.requests.Load(); n != 0 {
			t.Errorf("%d requests reached a registry the policy does not allow\n%s", n, out)
		}
		if code != exitCannotRun || res.Conclusion != checks.Neutral {
			t.Errorf("exit %d, templates %s %q; want exit 2, neutral\n%s", code, res.Conclusion, res.Title, out)
		}
		if !strings.Contains(out, pushed) || !strings.Contains(out, "outside images.allowedRegistries (quay.io/acme), so it was not contacted") {
			t.Errorf("the result does not name the image and why it was not read:\n%s", out)
		}
	})

	t.Run("the gate", func(t *testing.T) {
		r, head := registryTemplateRepo(t, reg.host+"/acme", img)
		code, res, out := templateCheck(t, r, head, "mallory", reg.host)
		if n := reg.requests.Load(); n != 0 {
			t.Errorf("a stranger's pull request sent %d registry requests\n%s", n, out)
		}
		if code != exitCannotRun || res.Conclusion != checks.Neutral || !strings.Contains(res.Summary, "Registry work skipped: @mallory owns none") ||
			!strings.Contains(out, "not pulled until an owner or maintainer approves") {
			t.Errorf("mallory: exit %d, templates %s %q; want exit 2, neutral, saying the pull waits for an owner\n%s", code, res.Conclusion, res.Title, out)
		}
		code, res, out = templateCheck(t, r, head, "bob", reg.host)
		if reg.requests.Load() == 0 {
			t.Errorf("the owner's pull request pulled nothing\n%s", out)
		}
		if code != exitPass || res.Conclusion != checks.Success {
			t.Errorf("bob: exit %d, templates %s %q; want 0, success\n%s", code, res.Conclusion, res.Title, out)
		}
	})
}

// An unreachable registry is "could not verify", never drift: with the registry answering 503, the template
// whose new image must be pulled is not verified (neutral, exit 2) and the result names the image and the
// registry's answer; no difference is reported. An image the registry says does not exist stays an error.
func TestTemplateCheckUnreachableRegistryIsNotDrift(t *testing.T) {
	reg := newCountingRegistry(t)
	var pushed string
	r, head := registryTemplateRepo(t, reg.host+"/acme", func(r *identityRepo) string {
		pushed = reg.pushBundle(t, filepath.Join(r.dir, "operators", "etcd", "1.1.0"), "acme/etcd-operator-bundle")
		return pushed
	})
	reg.down.Store(true)
	code, res, out := templateCheck(t, r, head, "bob", reg.host)
	if reg.requests.Load() == 0 {
		t.Fatalf("nothing reached the registry\n%s", out)
	}
	if code != exitCannotRun || res.Conclusion != checks.Neutral || strings.Contains(res.Title, "difference") {
		t.Errorf("exit %d, templates %s %q; want exit 2, neutral, no differences\n%s", code, res.Conclusion, res.Title, out)
	}
	for _, f := range res.Findings {
		if f.Severity == "error" {
			t.Errorf("error finding with the registry down: %s %s", f.Rule, f.Message)
		}
	}
	if !strings.Contains(res.Summary, pushed) || !strings.Contains(res.Summary, "503") {
		t.Errorf("the summary does not name the image and the registry's answer:\n%s", res.Summary)
	}

	// The same through `catalog-check check` with its default checks (what the Action runs): the templates
	// result is neutral, names the image and the answer, and the run exits 2, never 1 for a difference.
	var cout, cerr bytes.Buffer
	code = runEnv(context.Background(), []string{"check", "--repo", r.dir, "--base", r.base, "--head", head, "--author", "bob",
		"--insecure-registry", reg.host, "--output", "json"}, &cout, &cerr, env{getenv: func(string) string { return "" }})
	var cv verdict
	if err := json.Unmarshal(cout.Bytes(), &cv); err != nil {
		t.Fatalf("check: output is not JSON (%v):\n%s\n%s", err, cout.String(), cerr.String())
	}
	if tr := resultOf(t, cv, "templates"); code != exitCannotRun || tr.Conclusion != checks.Neutral || strings.Contains(tr.Title, "difference") ||
		!strings.Contains(tr.Summary, pushed) || !strings.Contains(tr.Summary, "503") {
		t.Errorf("check with the default checks: exit %d, templates %s %q; want exit 2, neutral, naming %s and 503\n%s\n%s", code, tr.Conclusion, tr.Title, pushed, tr.Summary, cerr.String())
	}
	for _, res := range cv.Results {
		for _, f := range res.Findings {
			if f.Severity == "error" {
				t.Errorf("check with the registry down: %s error %s %s", res.Check, f.Rule, f.Message)
			}
		}
	}

	// The registry up, the image not there: a template naming an image that does not exist does not render.
	reg.down.Store(false)
	r.setTemplate(t, "quay.io/acme/etcd-bundle@"+r.digests["1.0.0"], strings.Replace(pushed, "etcd-operator-bundle", "gone-bundle", 1), false)
	r.git("commit", "-q", "-am", "gone")
	code, res, out = templateCheck(t, r, r.git("rev-parse", "HEAD"), "bob", reg.host)
	if code != exitFail || res.Conclusion != checks.Failure {
		t.Errorf("an image that does not exist: exit %d, templates %s %q; want 1, failure\n%s", code, res.Conclusion, res.Title, out)
	}
}
