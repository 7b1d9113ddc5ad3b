package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testRegistry starts go-containerregistry's in-process registry with a
// random base image and returns the registry host and the base pinned by digest.
func testRegistry(t *testing.T) (host, base string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/distroless/static:nonroot")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return host, host + "/distroless/static@" + d.String()
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "catalogbot")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("imagebuild %q = exit %d, want 0; stderr: %s", args, code, errb.String())
	}
	return strings.TrimSpace(out.String())
}

func TestSameBinarySameDigest(t *testing.T) {
	host, base := testRegistry(t)
	bin := writeFile(t, "\x7fELF pretend static binary")
	common := []string{"--binary", bin, "--base", base, "--version", "v1.2.3", "--revision", "0123456789abcdef0123456789abcdef01234567"}

	first := runOK(t, append(common, "--push", host+"/catalogbot:a")...)
	second := runOK(t, append(common, "--push", host+"/catalogbot:b")...)
	_, d1, _ := strings.Cut(first, "@")
	_, d2, _ := strings.Cut(second, "@")
	if d1 == "" || d1 != d2 {
		t.Fatalf("two builds of one binary: digests %q and %q, want equal", first, second)
	}
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	if got := runOK(t, append(common, "--tarball", tarPath)...); got != d1 {
		t.Errorf("tarball build digest = %s, want the pushed %s", got, d1)
	}
	other := runOK(t, "--binary", writeFile(t, "another binary"), "--base", base, "--version", "v1.2.3", "--push", host+"/catalogbot:c")
	if _, d3, _ := strings.Cut(other, "@"); d3 == d1 {
		t.Errorf("a different binary gave the same digest %s", d3)
	}

	ref, err := name.ParseReference(first)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, img, "\x7fELF pretend static binary")

	fromTar, err := tarball.ImageFromPath(tarPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, fromTar, "\x7fELF pretend static binary")
}

func checkImage(t *testing.T, img v1.Image, wantBinary string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("user = %q, want 65532:65532", c.User)
	}
	if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/usr/local/bin/catalogbot" {
		t.Errorf("entrypoint = %q, want [/usr/local/bin/catalogbot]", c.Entrypoint)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  "v1.2.3",
		"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(layers), 3; got != want {
		t.Fatalf("got %d layers, want %d (two of the base, one binary)", got, want)
	}
	rc, err := layers[2].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "usr/local/bin/catalogbot" {
			b, _ := io.ReadAll(tr)
			if string(b) != wantBinary || h.Mode != 0o755 || h.Uid != 0 {
				t.Errorf("binary entry: %d bytes, mode %o, uid %d; want the file, 0755, root", len(b), h.Mode, h.Uid)
			}
		}
	}
	if got, want := strings.Join(names, " "), "tmp/ var/ var/cache/ var/cache/catalogbot/ var/lib/ var/lib/catalogbot/ usr/ usr/local/ usr/local/bin/ usr/local/bin/catalogbot"; got != want {
		t.Errorf("layer entries = %s, want %s", got, want)
	}
	checkLikeDockerfile(t, cf.Config)
}

// checkLikeDockerfile compares the image's runtime settings with what the Dockerfile's final stage declares
// (USER, WORKDIR, ENV, EXPOSE, ENTRYPOINT, CMD), so the two ways of building give images that run alike.
func checkLikeDockerfile(t *testing.T, c v1.Config) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := strings.ReplaceAll(string(raw), "\\\n", " ")
	final := df[strings.LastIndex(df, "\nFROM "):]
	directive := func(name string) string {
		for _, l := range strings.Split(final, "\n") {
			if rest, ok := strings.CutPrefix(l, name+" "); ok {
				return strings.TrimSpace(rest)
			}
		}
		return ""
	}
	if got, want := c.User, directive("USER"); got != want {
		t.Errorf("user = %q, the Dockerfile says %q", got, want)
	}
	if got, want := c.WorkingDir, directive("WORKDIR"); got != want {
		t.Errorf("working directory = %q, the Dockerfile says %q", got, want)
	}
	for _, kv := range strings.Fields(directive("ENV")) {
		if !slices.Contains(c.Env, kv) {
			t.Errorf("env %v lacks the Dockerfile's %s", c.Env, kv)
		}
	}
	if port := directive("EXPOSE"); port != "" {
		if _, ok := c.ExposedPorts[port+"/tcp"]; !ok {
			t.Errorf("exposed ports %v lack the Dockerfile's %s", c.ExposedPorts, port)
		}
	}
	if got, want := fmt.Sprintf("%q", c.Entrypoint), strings.ReplaceAll(directive("ENTRYPOINT"), ",", " "); got != want {
		t.Errorf("entrypoint %s, the Dockerfile says %s", got, want)
	}
	if got, want := fmt.Sprintf("%q", c.Cmd), strings.ReplaceAll(directive("CMD"), ",", " "); got != want {
		t.Errorf("cmd %s, the Dockerfile says %s", got, want)
	}
}

func TestUsageErrors(t *testing.T) {
	bin := writeFile(t, "x")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"base by tag", []string{"--binary", bin, "--base", "example.com/base:latest", "--tarball", "x.tar"}, "pinned by digest"},
		{"no output", []string{"--binary", bin, "--base", "example.com/base@sha256:" + strings.Repeat("a", 64)}, "exactly one of --push and --tarball"},
		{"both outputs", []string{"--binary", bin, "--base", "b", "--push", "r", "--tarball", "t"}, "exactly one of --push and --tarball"},
		{"no binary", []string{"--base", "b", "--push", "r"}, "--binary is required"},
		{"stray argument", []string{"--binary", bin, "--base", "b", "--push", "r", "extra"}, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(context.Background(), tc.args, &out, &errb); code != 2 {
				t.Errorf("exit = %d, want 2", code)
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr = %q, want it to say %q", errb.String(), tc.want)
			}
		})
	}
}

func TestBinaryMustBeARegularFile(t *testing.T) {
	if _, err := readBinary(t.TempDir()); err == nil {
		t.Errorf("readBinary(directory) = nil error, want a refusal")
	}
	if _, err := readBinary(writeFile(t, "")); err == nil {
		t.Errorf("readBinary(empty file) = nil error, want a refusal")
	}
}

func TestTagFor(t *testing.T) {
	for in, want := range map[string]string{"v1.2.3": "v1.2.3", "v1.2.3+meta": "v1.2.3_meta", "": "v", "-x": "v-x"} {
		if got := tagFor(in); got != want {
			t.Errorf("tagFor(%q) = %q, want %q", in, got, want)
		}
	}
}
