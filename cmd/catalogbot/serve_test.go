package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app"
)

// lockedBuffer is a bytes.Buffer safe for the server's logger and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func writeKey(t *testing.T, dir string) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "app.pem")
	os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600)
	return p
}

func TestServeStartsAndStops(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{
		app.EnvAppID: "1", app.EnvPrivateKeyFile: writeKey(t, dir), app.EnvWebhookSecrets: "topsecret-1,topsecret-2",
		app.EnvListen: "127.0.0.1:0", app.EnvDataDir: dir, app.EnvGitHubAPIURL: "http://127.0.0.1:1/",
	}
	cfg := filepath.Join(dir, "catalogbot.yaml")
	os.WriteFile(cfg, []byte("workers: 2\nresync_interval: 1h\nredeliver_interval: 1h\nshutdown_timeout: 5s\n"), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runEnv(ctx, []string{"serve", "--config", cfg}, &stderr, &stderr, env{getenv: func(k string) string { return vars[k] }, ready: ready})
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("serve exited %d before listening:\n%s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen within 30s")
	}
	base := "http://" + addr
	waitFor(t, base+"/readyz", http.StatusOK)
	for path, want := range map[string]int{"/healthz": 200, "/metrics": 200, "/nope": 404} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	mresp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(metrics), `catalogbot_build_info{goversion="go`) || !strings.Contains(string(metrics), `version="`+buildVersion()+`"`) {
		t.Errorf("/metrics has no catalogbot_build_info naming the version %q", buildVersion())
	}
	body := []byte(`{"zen":"Keep it logically awesome."}`)
	req, _ := http.NewRequest(http.MethodPost, base+"/webhook", bytes.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", app.Sign([]byte("topsecret-2"), body))
	req.Header.Set("X-GitHub-Event", "ping")
	req.Header.Set("X-GitHub-Delivery", "ping-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("POST /webhook (ping) = %d, want 202", resp.StatusCode)
	}

	cancel() // as SIGTERM does
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("serve exit code = %d, want 0:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of the signal")
	}
	logs := stderr.String()
	for _, secret := range []string{"topsecret", "PRIVATE KEY"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs show %q:\n%s", secret, logs)
		}
	}
	if !strings.Contains(logs, `"delivery":"ping-1"`) {
		t.Errorf("logs do not name the delivery:\n%s", logs)
	}
}

func waitFor(t *testing.T, url string, status int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == status {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("GET %s never answered %d", url, status)
}

func TestServeRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir)
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no secret", map[string]string{app.EnvAppID: "1", app.EnvPrivateKeyFile: key}, "no webhook secret"},
		{"unreadable key", map[string]string{app.EnvAppID: "1", app.EnvPrivateKeyFile: filepath.Join(dir, "nope.pem"), app.EnvWebhookSecrets: "topsecret"}, "private key"},
	}
	for _, tt := range tests {
		var stderr lockedBuffer
		code := runEnv(context.Background(), []string{"serve"}, &stderr, &stderr, env{getenv: func(k string) string { return tt.env[k] }})
		if code != exitCannotRun || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tt.name, code, stderr.String(), tt.want)
		}
		if strings.Contains(stderr.String(), "topsecret") {
			t.Errorf("%s: stderr shows the secret", tt.name)
		}
	}
	var stderr lockedBuffer
	if code := run(context.Background(), []string{"frobnicate"}, &stderr, &stderr); code != exitCannotRun {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

// Durations in the JSON logs are text ("1.5s"), not integer nanoseconds.
func TestLogDurationsAsText(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{ReplaceAttr: durationsAsText}))
	log.Info("done", "took", 1500*time.Millisecond)
	if !strings.Contains(b.String(), `"took":"1.5s"`) {
		t.Errorf("log line %s, want took as \"1.5s\"", b.String())
	}
}
