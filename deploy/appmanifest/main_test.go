package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRegisterPagePostsTheManifestAsJSON(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "github-app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "app.yaml")
	edited := strings.ReplaceAll(string(src), "catalogbot.example.com", "bot.acme.test")
	if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--manifest", p, "--org", "acme"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	page := out.String()
	if !regexp.MustCompile(`action="https://github.com/organizations/acme/settings/apps/new\?state=[0-9a-f]{32}"`).MatchString(page) {
		t.Errorf("form action is not the organization's new-App page with a state:\n%s", page)
	}
	m := regexp.MustCompile(`name="manifest" value="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no manifest field in:\n%s", page)
	}
	var manifest struct {
		HookAttributes struct {
			URL string `json:"url"`
		} `json:"hook_attributes"`
		DefaultPermissions map[string]string `json:"default_permissions"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &manifest); err != nil {
		t.Fatalf("manifest field is not JSON: %v", err)
	}
	if got, want := manifest.HookAttributes.URL, "https://bot.acme.test/webhook"; got != want {
		t.Errorf("hook url = %q, want %q", got, want)
	}
	if got := manifest.DefaultPermissions["checks"]; got != "write" {
		t.Errorf("checks permission = %q, want write", got)
	}
}

func TestRegisterPageRefusesTheExampleURL(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--manifest", filepath.Join("..", "github-app.yaml")}, &out, &errb); code != 2 {
		t.Errorf("exit = %d, want 2 for a manifest still pointing at example.com", code)
	}
	if !strings.Contains(errb.String(), "hook_attributes.url") {
		t.Errorf("stderr = %q, want it to name hook_attributes.url", errb.String())
	}
}

func TestExchangeWritesCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v3/app-manifests/abc123/conversions" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": 42, "slug": "catalogbot-acme", "html_url": "https://ghe.test/apps/catalogbot-acme",
			"pem": "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n", "webhook_secret": "whsec"})
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "creds")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--api-url", srv.URL + "/api/v3", "--exchange", "abc123", "--out-dir", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	for name, want := range map[string]string{"app-id": "42", "webhook-secrets": "whsec"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", name, b, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "private-key.pem")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("private-key.pem mode = %v, want 0600", fi.Mode().Perm())
	}

	if code := run(context.Background(), []string{"--api-url", srv.URL + "/api/v3", "--exchange", "expired", "--out-dir", dir}, &out, &errb); code != 2 {
		t.Errorf("exit = %d for an unknown code, want 2", code)
	}
}
