package registry

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

func TestParseAuthFile(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name    string
		content string
		want    map[string]authn.AuthConfig
		wantErr string // a word the error must contain; "" for none
	}{
		{"base64 auth", `{"auths": {"quay.io": {"auth": "` + b64("u:p:with:colons") + `"}}}`,
			map[string]authn.AuthConfig{"quay.io": {Username: "u", Password: "p:with:colons"}}, ""},
		{"username and password", `{"auths": {"https://index.docker.io/v1/": {"username": "u", "password": "p"}}}`,
			map[string]authn.AuthConfig{"index.docker.io": {Username: "u", Password: "p"}}, ""},
		{"repository key and identity token", `{"auths": {"Quay.io/Org/": {"identitytoken": "tok"}}}`,
			map[string]authn.AuthConfig{"quay.io/org": {IdentityToken: "tok"}}, ""},
		{"empty entry skipped", `{"auths": {"quay.io": {}}}`, map[string]authn.AuthConfig{}, ""},
		{"no auths", `{}`, map[string]authn.AuthConfig{}, ""},
		{"credsStore refused", `{"auths": {}, "credsStore": "desktop"}`, nil, "credsStore"},
		{"credHelpers refused", `{"credHelpers": {"gcr.io": "gcloud"}}`, nil, "credHelpers"},
		{"bad base64", `{"auths": {"quay.io": {"auth": "%%%"}}}`, nil, "base64"},
		{"auth without colon", `{"auths": {"quay.io": {"auth": "` + b64("nocolon") + `"}}}`, nil, "user:password"},
		{"not JSON", `auths: {}`, nil, "JSON"},
		{"bad key", `{"auths": {"a b": {"username": "u", "password": "p"}}}`, nil, "key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAuthFile("auth.json", []byte(tt.content))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "auth.json") {
					t.Fatalf("parseAuthFile() error = %v, want one naming the file and %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseAuthFile() error = %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("parseAuthFile() = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("parseAuthFile()[%q] = %+v, want %+v", k, got[k], v)
				}
			}
		})
	}
}

func TestAuthFileErrorsHideSecrets(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString([]byte("userwithoutcolon"))
	_, err := parseAuthFile("auth.json", []byte(`{"auths": {"quay.io": {"auth": "`+secret+`"}}}`))
	if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "userwithoutcolon") {
		t.Errorf("parseAuthFile() error = %v, want an error that does not quote the secret", err)
	}
}

func TestKeychainResolve(t *testing.T) {
	kc, err := newKeychain(
		[]credential{{host: "docker.io", user: "hub", pass: "p"}},
		[]string{writeAuthFile(t, `{"auths": {
			"quay.io": {"username": "registry", "password": "p"},
			"quay.io/org": {"username": "org", "password": "p"},
			"quay.io/org/special": {"username": "special", "password": "p"},
			"index.docker.io": {"username": "file-hub", "password": "p"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref  string
		want string
	}{
		{"quay.io/org/special:v1", "special"},
		{"quay.io/org/specialist:v1", "org"},
		{"quay.io/org/other/deep:v1", "org"},
		{"quay.io/other/x:v1", "registry"},
		{"docker.io/library/busybox:1", "hub"},
		{"ghcr.io/x/y:1", ""},
	}
	for _, tt := range tests {
		ref, err := name.ParseReference(tt.ref)
		if err != nil {
			t.Fatal(err)
		}
		a, err := kc.Resolve(ref.Context())
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Username != tt.want {
			t.Errorf("Resolve(%s) user = %q, want %q", tt.ref, cfg.Username, tt.want)
		}
	}
}

func TestDefaultAuthFiles(t *testing.T) {
	exists := func(want ...string) func(string) bool {
		return func(p string) bool { return slices.Contains(want, p) }
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	run := filepath.Join("/run", "user", "1000", "containers", "auth.json")
	docker := filepath.Join("/home/u", ".docker", "config.json")
	podman := filepath.Join("/home/u", ".config", "containers", "auth.json")
	tests := []struct {
		name   string
		env    map[string]string
		exists func(string) bool
		want   []string
	}{
		{"REGISTRY_AUTH_FILE alone, even absent", map[string]string{"REGISTRY_AUTH_FILE": "/x/auth.json", "XDG_RUNTIME_DIR": "/run/user/1000"},
			exists(run, docker), []string{"/x/auth.json"}},
		{"standard order", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, exists(run, docker, podman), []string{run, docker, podman}},
		{"only existing", map[string]string{}, exists(podman, run), []string{podman}},
		{"none", map[string]string{}, exists(), nil},
	}
	for _, tt := range tests {
		if got := defaultAuthFiles(env(tt.env), "/home/u", tt.exists); !slices.Equal(got, tt.want) {
			t.Errorf("%s: defaultAuthFiles() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRegistryKey(t *testing.T) {
	for in, want := range map[string]string{
		"https://index.docker.io/v1/": "index.docker.io",
		"docker.io":                   "index.docker.io",
		"registry-1.docker.io":        "index.docker.io",
		"Quay.IO":                     "quay.io",
		"http://127.0.0.1:5000":       "127.0.0.1:5000",
		"quay.io/org/repo/":           "quay.io/org/repo",
	} {
		if got := registryKey(in); got != want {
			t.Errorf("registryKey(%q) = %q, want %q", in, got, want)
		}
	}
}
