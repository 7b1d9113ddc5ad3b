package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app"
)

// TestExampleConfig keeps the commented example loadable: every key in it is
// known to the strict parser.
func TestExampleConfig(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir)
	secrets := filepath.Join(dir, "secrets")
	os.WriteFile(secrets, []byte("one\ntwo\n"), 0o600)
	data, err := os.ReadFile("catalogbot.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("/etc/catalogbot/app.pem", key, "/etc/catalogbot/webhook-secrets", secrets,
		"/var/lib/catalogbot", filepath.Join(dir, "data")).Replace(string(data))
	cfgPath := filepath.Join(dir, "catalogbot.yaml")
	os.WriteFile(cfgPath, []byte(text), 0o600)
	cfg, err := app.LoadConfig(cfgPath, func(string) string { return "" })
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	if cfg.AppID != 123456 || len(cfg.WebhookSecrets) != 2 || cfg.Workers != 4 || cfg.RegistryAuthFile == "" {
		t.Errorf("example loaded as %+v", cfg)
	}
}
