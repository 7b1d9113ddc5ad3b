package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer collects the registry's log for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startDistribution runs Debian's docker-registry (distribution 2.8) on 127.0.0.1 with htpasswd auth for
// user/pass and returns its host:port. It skips when the binary or htpasswd is absent (.ci/run installs both).
func startDistribution(t *testing.T, user, pass string) string {
	t.Helper()
	bin := distributionBinary(t, ": skipping the htpasswd auth tests")
	htpasswd, err := exec.LookPath("htpasswd")
	if err != nil {
		t.Skip("htpasswd is not installed (apt-get install apache2-utils; .ci/run installs it): skipping the htpasswd auth tests")
	}
	ctx := testCtx(t)
	dir := t.TempDir()
	out, err := exec.CommandContext(ctx, htpasswd, "-Bbn", user, pass).Output()
	if err != nil {
		t.Fatalf("htpasswd -Bbn: %v", err)
	}
	htfile := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htfile, out, 0o600); err != nil {
		t.Fatal(err)
	}
	host := freeLoopbackAddr(t)
	config := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog: {disabled: true}
storage:
  filesystem: {rootdirectory: %q}
  delete: {enabled: true}
http:
  addr: %s
auth:
  htpasswd:
    realm: catalogbot-test
    path: %q
`, filepath.Join(dir, "storage"), host, htfile)
	// The unauthenticated /v2/ answers 401 once the registry is up.
	serveDistribution(ctx, t, bin, dir, host, config, http.StatusUnauthorized)
	return host
}

// distributionBinary finds docker-registry; it skips (the message ending in why) when absent.
func distributionBinary(t *testing.T, why string) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		bin = "/usr/bin/docker-registry"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("docker-registry is not installed (apt-get install docker-registry; .ci/run installs it)" + why)
		}
	}
	return bin
}

// freeLoopbackAddr returns a host:port on 127.0.0.1 that was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	return host
}

// serveDistribution writes config into dir, runs bin serve on it until the test ends, and waits until
// GET http://host/v2/ answers ready.
func serveDistribution(ctx context.Context, t *testing.T, bin, dir, host, config string, ready int) {
	t.Helper()
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	probe := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/", nil)
		if resp, err := probe.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == ready {
				return
			}
		}
		select {
		case <-done:
			t.Fatalf("docker-registry exited early: %s", logs.String())
		case <-ctx.Done():
			t.Fatalf("docker-registry did not answer on %s: %s", host, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func writeAuthFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDistributionHtpasswd(t *testing.T) {
	const user, pass = "catalogbot", "s3cret-pass"
	host := startDistribution(t, user, pass)
	pusher := newTestClient(t, host, WithCredentials(host, user, pass))
	img := push(t, pusher, host+"/org/bundle:v1")
	byDigest := host + "/org/bundle@" + digestOf(t, img)

	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name   string
		opts   []Option
		ref    string
		want   Kind
		status int
	}{
		{"auth file with base64 auth", []Option{WithAuthFile(writeAuthFile(t,
			fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, b64(user+":"+pass))))}, host + "/org/bundle:v1", Exists, 200},
		{"auth file with username and password", []Option{WithAuthFile(writeAuthFile(t,
			fmt.Sprintf(`{"auths": {"http://%s": {"username": %q, "password": %q}}}`, host, user, pass)))}, byDigest, Exists, 200},
		{"auth file keyed by repository", []Option{WithAuthFile(writeAuthFile(t,
			fmt.Sprintf(`{"auths": {%q: {"auth": %q}, %q: {"auth": %q}}}`, host, b64(user+":wrong"), host+"/org", b64(user+":"+pass))))},
			host + "/org/bundle:v1", Exists, 200},
		{"explicit credentials", []Option{WithCredentials(host, user, pass)}, host + "/org/bundle:v1", Exists, 200},
		{"missing tag with credentials", []Option{WithCredentials(host, user, pass)}, host + "/org/bundle:v9", Missing, 404},
		{"no credentials", nil, host + "/org/bundle:v1", Inaccessible, 401},
		{"wrong password", []Option{WithCredentials(host, user, "wrong")}, host + "/org/bundle:v1", Inaccessible, 401},
		{"wrong password in auth file", []Option{WithAuthFile(writeAuthFile(t,
			fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, b64(user+":wrong"))))}, host + "/org/bundle:v1", Inaccessible, 401},
		{"credentials for another host", []Option{WithCredentials("quay.io", user, pass)}, host + "/org/bundle:v1", Inaccessible, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClient(t, host, tt.opts...)
			got := c.Check(testCtx(t), tt.ref)
			if got.Kind != tt.want || got.Status != tt.status {
				t.Errorf("Check(%s) = %v %d (%s), want %v %d", tt.ref, got.Kind, got.Status, got.Reason, tt.want, tt.status)
			}
			if strings.Contains(got.Reason, pass) {
				t.Errorf("Check(%s).Reason reveals the password: %q", tt.ref, got.Reason)
			}
		})
	}

	t.Run("manifests with credentials", func(t *testing.T) {
		c := newTestClient(t, host, WithCredentials(host, user, pass))
		ref := host + "/org/bundle:manifests"
		pushImage(t, pusher, ref, imageOf(t, layerOf(t, entry{name: "manifests/csv.yaml", body: "csv"})))
		ctx, cancel := context.WithTimeout(testCtx(t), 30*time.Second)
		defer cancel()
		got, err := c.Manifests(ctx, ref, Limits{})
		if err != nil || string(got["csv.yaml"]) != "csv" {
			t.Errorf("Manifests(%s) = %v, %v, want csv.yaml", ref, got, err)
		}
	})
}
