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
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func TestImagesCommandOnDirectory(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host+"/acme/etcd-bundle:v1", name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	present := host + "/acme/etcd-bundle@" + d.String()
	missing := host + "/acme/etcd-bundle@sha256:" + strings.Repeat("0", 64)

	dir := t.TempDir()
	cat := `{"schema":"olm.package","name":"etcd","defaultChannel":"stable"}
{"schema":"olm.channel","package":"etcd","name":"stable","entries":[{"name":"etcd.v1.0.0"}]}
{"schema":"olm.bundle","package":"etcd","name":"etcd.v1.0.0","image":"` + present + `",
 "properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"1.0.0"}}],
 "relatedImages":[{"name":"operator","image":"` + missing + `"},{"name":"other","image":"quay.io/elsewhere/x@sha256:` + strings.Repeat("1", 64) + `"}]}
`
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(cat), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\ncatalogs: [{path: .}]\nmaintainers: [alice]\nimages: {allowedRegistries: [\""+host+"/acme/\"], requireDigest: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"auths":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"images", "--policy", pol, "--insecure-registry", host, "--registry-config", auth, "--output", "json", dir}, &out, &errb)
	if code != exitFail {
		t.Fatalf("exit = %d, want %d\n%s\n%s", code, exitFail, out.String(), errb.String())
	}
	var v verdict
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	rules := map[string]int{}
	for _, f := range v.Results[0].Findings {
		rules[f.Rule]++
		if f.Line != 5 {
			t.Errorf("%s at line %d, want 5 (the bundle's relatedImages line)", f.Rule, f.Line)
		}
	}
	if rules["images.missing"] != 1 || rules["images.registry-not-allowed"] != 1 || len(rules) != 2 {
		t.Errorf("findings by rule = %v, want one images.missing and one images.registry-not-allowed", rules)
	}
}

// TestImagesCommandKeepsCredentialsFromForeignTokenRealm: an allowed registry whose 401 challenge sends clients
// to a token service on a host the policy does not allow gets "could not verify" (exit 2) with the reason, and
// the token service receives nothing — before, it received the registry's Basic credentials and its 404 was
// reported as a missing image.
func TestImagesCommandKeepsCredentialsFromForeignTokenRealm(t *testing.T) {
	var tokenRequests atomic.Int64
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokenRequests.Add(1)
		http.NotFound(w, r)
	}))
	defer tokens.Close()
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+tokens.URL+`/token",service="registry"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	image := host + "/acme/etcd-bundle@sha256:" + strings.Repeat("2", 64)

	dir := t.TempDir()
	cat := `{"schema":"olm.package","name":"etcd","defaultChannel":"stable"}
{"schema":"olm.channel","package":"etcd","name":"stable","entries":[{"name":"etcd.v1.0.0"}]}
{"schema":"olm.bundle","package":"etcd","name":"etcd.v1.0.0","image":"` + image + `",
 "properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"1.0.0"}}]}
`
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(cat), 0o644); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\ncatalogs: [{path: .}]\nmaintainers: [alice]\nimages: {allowedRegistries: [\""+host+"/acme/\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"auths":{"`+host+`":{"auth":"dXNlcjpzZWNyZXQ="}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	// Plain HTTP and loopback for every port of 127.0.0.1, so only the realm rule stands between the
	// credentials and the token service.
	code := run(context.Background(), []string{"images", dir, "--policy", pol, "--insecure-registry", "127.0.0.1", "--registry-config", auth}, &out, &errb)
	if code != exitCannotRun {
		t.Errorf("exit = %d, want %d (could not verify)\n%s\n%s", code, exitCannotRun, out.String(), errb.String())
	}
	if n := tokenRequests.Load(); n != 0 {
		t.Errorf("the token service outside the allowed registries got %d requests, want none", n)
	}
	tokenHost := strings.TrimPrefix(tokens.URL, "http://")
	if !strings.Contains(out.String()+errb.String(), tokenHost) || strings.Contains(out.String(), "does not exist") {
		t.Errorf("output does not name the token service %s, or calls the image missing:\n%s\n%s", tokenHost, out.String(), errb.String())
	}
}
