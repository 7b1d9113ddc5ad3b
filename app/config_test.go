package app

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTestKey writes a fresh RSA key as GitHub issues them (PKCS#1 PEM).
func writeTestKey(t testing.TB, dir string) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "app.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	key := writeTestKey(t, dir)
	file := filepath.Join(dir, "catalogbot.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(`
app_id: 12
private_key_file: %s
listen: "127.0.0.1:9000"
workers: 3
job_timeout: 90s
catalogs: [catalog]
registry:
  offline: true
`, key)), 0o600)

	c, err := LoadConfig(file, envMap(map[string]string{
		EnvWebhookSecrets: "new, old", EnvWorkers: "8", EnvGitHubAPIURL: "https://ghe.example/api/v3/",
		EnvDataDir: filepath.Join(dir, "data"), EnvDatabaseURL: "postgres://u:pw@db/x",
	}))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"AppID", c.AppID, int64(12)},
		{"Listen", c.Listen, "127.0.0.1:9000"},
		{"Workers (env wins)", c.Workers, 8},
		{"JobTimeout", c.JobTimeout, 90 * time.Second},
		{"RescueAfter default", c.RescueAfter, 90*time.Second + 2*time.Minute},
		{"GitHubAPIURL", c.GitHubAPIURL, "https://ghe.example/api/v3/"},
		{"secrets", len(c.WebhookSecrets), 2},
		{"second secret", string(c.WebhookSecrets[1].Reveal()), "old"},
		{"GitCacheDir default", c.GitCacheDir, filepath.Join(dir, "data", "git")},
		{"DatabaseURL", string(c.DatabaseURL.Reveal()), "postgres://u:pw@db/x"},
		{"private key read", c.PrivateKey.Empty(), false},
		{"RegistryOffline", c.RegistryOffline, true},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestLoadConfigRefuses(t *testing.T) {
	dir := t.TempDir()
	key := writeTestKey(t, dir)
	notKey := filepath.Join(dir, "not.pem")
	os.WriteFile(notKey, []byte("hello"), 0o600)
	ecKey := filepath.Join(dir, "ec.pem")
	os.WriteFile(ecKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}), 0o600)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	base := map[string]string{EnvAppID: "1", EnvPrivateKeyFile: key, EnvWebhookSecrets: "s"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		if v == "-" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		wantErr string
	}{
		{"no secret", "", with(EnvWebhookSecrets, "-"), "no webhook secret"},
		{"empty secret item", "", with(EnvWebhookSecrets, "a,,b"), "empty"},
		{"no key", "", with(EnvPrivateKeyFile, "-"), "no private key"},
		{"unreadable key", "", with(EnvPrivateKeyFile, filepath.Join(dir, "missing.pem")), "reading the private key"},
		{"key not PEM", "", with(EnvPrivateKeyFile, notKey), "not PEM"},
		{"key not RSA", "", with(EnvPrivateKeyFile, ecKey), "not an RSA private key"},
		{"no app id", "", with(EnvAppID, "-"), "no App ID"},
		{"app id not a number", "", with(EnvAppID, "x"), "not a number"},
		{"unknown key", write("unknown.yaml", "app_id: 1\nwebhook_secret: s\n"), base, "unknown field"},
		{"bad duration", write("dur.yaml", "job_timeout: 5\n"), base, "duration"},
		{"rescue shorter than timeout", write("rescue.yaml", "job_timeout: 10m\nrescue_stuck_jobs_after: 1m\n"), base, "rescue_stuck_jobs_after"},
		{"bad schema", write("schema.yaml", "database_schema: \"x; drop\"\n"), base, "database_schema"},
		{"workers", "", with(EnvWorkers, "0"), ""}, // 0 means the default
		{"too many workers", "", with(EnvWorkers, "1000"), "workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(tt.file, envMap(tt.env))
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("LoadConfig: %v, want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("LoadConfig error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestSecretsNeverShown prints, logs and marshals a configuration and looks
// for the secrets.
func TestSecretsNeverShown(t *testing.T) {
	dir := t.TempDir()
	key := writeTestKey(t, dir)
	c, err := LoadConfig("", envMap(map[string]string{EnvAppID: "1", EnvPrivateKeyFile: key,
		EnvWebhookSecrets: "hunter2-webhook", EnvDatabaseURL: "postgres://u:hunter3-db@h/d"}))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&buf, nil), slog.NewTextHandler(&buf, nil)} {
		l := slog.New(h)
		l.Info("config", "config", c, "secret", c.WebhookSecrets[0], "secrets", c.WebhookSecrets, "db", c.DatabaseURL, "key", c.PrivateKey)
	}
	fmt.Fprintf(&buf, "%v %+v %#v %s %x %q\n", c, c, c, c.WebhookSecrets[0], c.WebhookSecrets[0], c.DatabaseURL)
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(j)
	out := buf.String()
	for _, secret := range []string{"hunter2-webhook", "hunter3-db", "PRIVATE KEY", "aHVudGVy" /* base64 */} {
		if strings.Contains(out, secret) {
			t.Errorf("output shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, redacted) {
		t.Errorf("output does not say %q", redacted)
	}
}

// Values from Kubernetes Secrets made with `echo` end with a newline; they
// must load as if it were not there.
func TestLoadConfigTrimsEnvironment(t *testing.T) {
	dir := t.TempDir()
	key := writeTestKey(t, dir)
	c, err := LoadConfig("", envMap(map[string]string{
		EnvAppID: " 12\n", EnvPrivateKeyFile: key + "\n", EnvWebhookSecrets: "s\n", EnvWorkers: "3\n",
		EnvDatabaseURL: "postgres://u:pw@db/x\n", EnvDataDir: filepath.Join(dir, "data") + "\n",
	}))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if c.AppID != 12 || c.Workers != 3 || string(c.DatabaseURL.Reveal()) != "postgres://u:pw@db/x" ||
		c.DataDir != filepath.Join(dir, "data") || c.PrivateKey.Empty() {
		t.Errorf("trailing newlines kept: app %d, workers %d, data dir %q, key empty %v", c.AppID, c.Workers, c.DataDir, c.PrivateKey.Empty())
	}
}
