package sign

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/registry"
)

// startDistribution runs Debian's docker-registry (distribution 2.8) on 127.0.0.1 with htpasswd auth and
// returns its host:port; it skips when the binary or htpasswd is absent (.ci/run installs both).
func startDistribution(t *testing.T, user, pass string) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		bin = "/usr/bin/docker-registry"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("docker-registry is not installed (apt-get install docker-registry; .ci/run installs it)")
		}
	}
	htpasswd, err := exec.LookPath("htpasswd")
	if err != nil {
		t.Skip("htpasswd is not installed (apt-get install apache2-utils; .ci/run installs it)")
	}
	ctx := testCtx(t)
	dir := t.TempDir()
	out, err := exec.CommandContext(ctx, htpasswd, "-Bbn", user, pass).Output()
	if err != nil {
		t.Fatalf("htpasswd: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), out, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog: {disabled: true}\nstorage:\n  filesystem: {rootdirectory: %q}\nhttp:\n  addr: %s\nauth:\n  htpasswd:\n    realm: catalogbot-test\n    path: %q\n",
		filepath.Join(dir, "storage"), host, filepath.Join(dir, "htpasswd"))
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return host
			}
		}
		select {
		case <-done:
			t.Fatal("docker-registry exited early")
		case <-ctx.Done():
			t.Fatal("docker-registry did not answer")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestSignOnDistribution signs and verifies an index on Debian's docker-registry behind htpasswd auth,
// through the guarded client and its credentials: the registry most self-hosted catalogs are pushed to.
func TestSignOnDistribution(t *testing.T) {
	const user, pass = "catalogbot", "s3cret-pass"
	host := startDistribution(t, user, pass)
	reg, err := registry.New(registry.WithAllowedHosts(host), registry.WithInsecureHosts(host), registry.WithCredentials(host, user, pass), registry.WithPushSettle(0))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ctx := testCtx(t)
	key, _ := newKey(t)
	image, _ := pushIndex(t, reg, host+"/acme/catalog:v4.16")
	res, err := NewSigner(key, reg, nil).Sign(ctx, Request{Image: image, Identities: []string{host + "/acme/catalog:v4.16"}, Provenance: testProvenance("")})
	if err != nil || len(res.Signed) != 3 {
		t.Fatalf("Sign: %+v, %v", res, err)
	}
	// Signing again appends nothing; another identity appends one layer per manifest.
	if res, err := NewSigner(key, reg, nil).Sign(ctx, Request{Image: image, Identities: []string{host + "/acme/catalog:v4.16"}}); err != nil || res.Added != 0 {
		t.Fatalf("again: %+v, %v", res, err)
	}
	v, err := Verify(ctx, reg, key.Verifier(), host+"/acme/catalog:v4.16", VerifyOptions{RequireAttestation: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range v.Manifests {
		if len(m.Identities) != 1 || len(m.Statements) != 1 {
			t.Errorf("%s: %+v", m.Digest, m)
		}
	}
	// Without credentials nothing is read: an error, not a verdict.
	anon, _ := registry.New(registry.WithAllowedHosts(host), registry.WithInsecureHosts(host))
	defer anon.Close()
	if _, err := Verify(context.Background(), anon, key.Verifier(), image, VerifyOptions{}); err == nil {
		t.Error("verifying without credentials succeeded")
	}
}
