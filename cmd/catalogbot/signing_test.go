package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/catalogbot/catalogbot/internal/servertest"
	"github.com/catalogbot/catalogbot/registry"
	"github.com/catalogbot/catalogbot/sign"
)

// writeSignKey writes a P-256 PKCS#8 key and returns its path and the key.
func writeSignKey(t *testing.T) (string, *sign.Key) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	path := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := sign.LoadKey(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return path, k
}

func verifyClient(t *testing.T, host string) *registry.Client {
	t.Helper()
	c, err := registry.New(registry.WithAllowedHosts(host), registry.WithInsecureHosts(host))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBuildBundleSigns(t *testing.T) {
	host, _ := localRegistry(t)
	keyFile, key := writeSignKey(t)
	dir := writeBundleDir(t, "")
	target := host + "/acme/etcd-bundle:v0.9.4"
	commit := strings.Repeat("5e", 20)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"build-bundle", dir, "--push", target, "--insecure-registry", host, "--output", "json",
		"--sign-key", keyFile, "--source-repo", "acme/operators", "--source-commit", commit}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	var rep buildBundleReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Signed) != 1 || !rep.Attested || rep.Key != key.Fingerprint() || rep.NotSigned != "" {
		t.Errorf("report %+v", rep)
	}
	ctx := context.Background()
	v, err := sign.Verify(ctx, verifyClient(t, host), key.Verifier(), target, sign.VerifyOptions{RequireAttestation: true})
	if err != nil {
		t.Fatal(err)
	}
	m := v.Manifests[0]
	if m.Digest != rep.Digest || len(m.Identities) != 1 || m.Identities[0] != target {
		t.Errorf("verified %+v, want the tag %s as identity", m, target)
	}
	p := m.Statements[0].Provenance
	if p.Repository != "acme/operators" || p.Commit != commit || p.BuildType != sign.BuildTypeBundle || p.BuilderVersion == "" {
		t.Errorf("provenance %+v", p)
	}

	// Again: the tag already holds it, nothing is added, and the command still succeeds.
	out.Reset()
	code = run(ctx, []string{"build-bundle", dir, "--push", target, "--insecure-registry", host, "--sign-key", keyFile, "--source-repo", "acme/operators"}, &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), "already holds") || !strings.Contains(out.String(), "signed ") {
		t.Errorf("second run: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

func TestBuildBundleWithoutKeySaysSo(t *testing.T) {
	host, _ := localRegistry(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"build-bundle", writeBundleDir(t, ""), "--push", host + "/acme/b:v1", "--insecure-registry", host}, &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), noKeyLine) {
		t.Errorf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	code = run(context.Background(), []string{"build-bundle", writeBundleDir(t, ""), "--sign-key", "k.pem"}, &out, &errb)
	if code != exitCannotRun || !strings.Contains(errb.String(), "--sign-key needs --push") {
		t.Errorf("--sign-key without --push: exit %d\n%s", code, errb.String())
	}
	errb.Reset()
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	code = run(context.Background(), []string{"build-bundle", writeBundleDir(t, ""), "--push", host + "/acme/b:v2", "--insecure-registry", host, "--sign-key", bad}, &out, &errb)
	if code != exitCannotRun || !strings.Contains(errb.String(), "bad.pem") || !strings.Contains(errb.String(), "no PEM block") {
		t.Errorf("a bad key: exit %d\n%s", code, errb.String())
	}
	if d := servertest.ImageDigest(t, host+"/acme/b:v2"); d != "" {
		t.Errorf("with a bad key the tag was pushed anyway: %s", d)
	}
}

// refusingRegistry is ggcr's registry that refuses to store signatures (manifests under a .sig tag), as a
// registry with a tag policy or a full quota would.
func refusingRegistry(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var refused atomic.Int32
	reg := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/sha256-") && strings.HasSuffix(r.URL.Path, ".sig") {
			refused.Add(1)
			http.Error(w, `{"errors":[{"code":"DENIED","message":"signatures are not accepted here"}]}`, http.StatusForbidden)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &refused
}

func TestSigningFailureMovesNoTag(t *testing.T) {
	host, refused := refusingRegistry(t)
	keyFile, _ := writeSignKey(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"build-bundle", writeBundleDir(t, ""), "--push", host + "/acme/b:v1", "--insecure-registry", host,
		"--sign-key", keyFile, "--source-repo", "acme/operators"}, &out, &errb)
	if code != exitFail || !strings.Contains(errb.String(), "no tag was moved") || refused.Load() == 0 {
		t.Errorf("build-bundle: exit %d (refused %d)\n%s%s", code, refused.Load(), out.String(), errb.String())
	}
	if d := servertest.ImageDigest(t, host+"/acme/b:v1"); d != "" {
		t.Errorf("the bundle tag names %s although signing failed", d)
	}

	base := servertest.PushBaseIndex(t, host, "opm/base")
	sample := filepath.Join("..", "..", "testdata", "catalogs", "sample")
	_, code, stderr := runBuildJSON(t, "--catalog", sample, "--base-image", base, "--insecure-registry", host, "--cache-dir", "off",
		"--push", host+"/acme/catalog:latest", "--tag", "v4.16", "--sign-key", keyFile, "--source-repo", "acme/operators")
	if code != exitFail || !strings.Contains(stderr, "no tag was moved") {
		t.Errorf("build: exit %d\n%s", code, stderr)
	}
	for _, tag := range []string{"latest", "v4.16"} {
		if d := servertest.ImageDigest(t, host+"/acme/catalog:"+tag); d != "" {
			t.Errorf("the catalog tag %s names %s although signing failed", tag, d)
		}
	}
}

func TestBuildSignsEveryPlatform(t *testing.T) {
	host, base := localRegistry(t)
	keyFile, key := writeSignKey(t)
	sample := filepath.Join("..", "..", "testdata", "catalogs", "sample")
	rep, code, stderr := runBuildJSON(t, "--catalog", copyDir(t, sample, time.Unix(1, 0)), "--base-image", base, "--insecure-registry", host, "--cache-dir", "off",
		"--push", host+"/acme/catalog:latest", "--tag", "v4.16", "--sign-key", keyFile, "--source-repo", "https://github.com/acme/operators", "--source-commit", strings.Repeat("ab", 20))
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if len(rep.Signed) != 3 || !rep.Attested {
		t.Errorf("report %+v: want the index and two platforms signed", rep)
	}
	v, err := sign.Verify(context.Background(), verifyClient(t, host), key.Verifier(), host+"/acme/catalog:v4.16", sign.VerifyOptions{RequireAttestation: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range v.Manifests {
		if strings.Join(m.Identities, " ") != host+"/acme/catalog:latest "+host+"/acme/catalog:v4.16" {
			t.Errorf("%s: identities %v", m.Digest, m.Identities)
		}
		if p := m.Statements[0].Provenance; p.BaseImage != base || p.BuildType != sign.BuildTypeCatalog || p.Repository != "https://github.com/acme/operators" {
			t.Errorf("%s: provenance %+v", m.Digest, p)
		}
	}
}

func TestScrubURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://x-access-token:ghs_secret@github.com/acme/ops.git": "https://github.com/acme/ops.git",
		"https://github.com/acme/ops":                               "https://github.com/acme/ops",
		"git@github.com:acme/ops.git":                               "git@github.com:acme/ops.git",
	} {
		if got := scrubURL(in); got != want {
			t.Errorf("scrubURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAuditImageShowsTheChain(t *testing.T) {
	host, _ := localRegistry(t)
	keyFile, key := writeSignKey(t)
	pub, err := key.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(t.TempDir(), "cosign.pub")
	os.WriteFile(pubFile, pub, 0o644)
	target := host + "/acme/etcd-bundle:v0.9.4"
	commit := strings.Repeat("5e", 20)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"build-bundle", writeBundleDir(t, ""), "--push", target, "--insecure-registry", host,
		"--sign-key", keyFile, "--source-repo", "acme/operators", "--source-commit", commit}, &out, &errb); code != exitOK {
		t.Fatalf("build-bundle: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code := run(context.Background(), []string{"audit", "--image", target, "--key", pubFile, "--insecure-registry", host}, &out, &errb)
	if code != exitOK {
		t.Fatalf("audit: exit %d\n%s%s", code, out.String(), errb.String())
	}
	t.Logf("audit:\n%s", out.String())
	for _, want := range []string{"signed for " + target, "provenance (bundle-image-v1)", "source acme/operators - at " + commit, "key " + key.Fingerprint()} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit output lacks %q:\n%s", want, out.String())
		}
	}

	// An unsigned image: exit 1, and the output says so.
	run(context.Background(), []string{"build-bundle", writeBundleDir(t, "  description: other\n"), "--push", host + "/acme/etcd-bundle:v0.9.5", "--insecure-registry", host}, io.Discard, io.Discard)
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"audit", "--image", host + "/acme/etcd-bundle:v0.9.5", "--key", pubFile, "--insecure-registry", host, "--output", "json"}, &out, &errb)
	var v sign.Verification
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if code != exitFail || len(v.Manifests) != 1 || len(v.Manifests[0].Identities) != 0 || !strings.Contains(errb.String(), "no valid signature") {
		t.Errorf("audit of an unsigned image: exit %d, %+v\n%s", code, v, errb.String())
	}
	if code := run(context.Background(), []string{"audit", "--image", target}, &out, &errb); code != exitCannotRun {
		t.Errorf("--image without --key: exit %d", code)
	}
}

func TestProvenanceFromGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("remote", "add", "origin", "https://x-access-token:ghs_secret@github.com/acme/operators.git")
	os.MkdirAll(filepath.Join(dir, "operators", "etcd"), 0o755)
	os.WriteFile(filepath.Join(dir, "operators", "etcd", "f"), []byte("x"), 0o644)
	git("add", ".")
	git("commit", "-qm", "one")
	var errb bytes.Buffer
	o := signOptions{}
	p, err := o.provenance(context.Background(), filepath.Join(dir, "operators", "etcd"), sign.BuildTypeBundle, "", time.Now(), &errb, "build-bundle")
	if err != nil {
		t.Fatal(err)
	}
	if p.Repository != "https://github.com/acme/operators.git" || len(p.Commit) != 40 || p.Path != "operators/etcd" || errb.Len() != 0 {
		t.Errorf("provenance %+v, stderr %q", p, errb.String())
	}
	os.WriteFile(filepath.Join(dir, "operators", "etcd", "f"), []byte("changed"), 0o644)
	if _, err := o.provenance(context.Background(), filepath.Join(dir, "operators", "etcd"), sign.BuildTypeBundle, "", time.Now(), &errb, "build-bundle"); err != nil || !strings.Contains(errb.String(), "uncommitted changes") {
		t.Errorf("a dirty checkout: %v, stderr %q", err, errb.String())
	}
	if _, err := o.provenance(context.Background(), t.TempDir(), sign.BuildTypeBundle, "", time.Now(), &errb, "build-bundle"); err == nil || !strings.Contains(err.Error(), "not attested") {
		t.Errorf("outside a checkout: %v", err)
	}
}
