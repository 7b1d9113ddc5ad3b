package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/internal/servertest"
)

// localRegistry starts an in-process registry holding a two-platform base
// index and returns its host and the base's digest reference.
func localRegistry(t *testing.T) (host, base string) {
	t.Helper()
	host = servertest.NewRegistry(t)
	return host, servertest.PushBaseIndex(t, host, "opm/base")
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// copyDir copies a directory tree, giving every file and directory the mtime at.
func copyDir(t *testing.T, src string, at time.Time) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dst, func(p string, _ fs.DirEntry, _ error) error { return os.Chtimes(p, at, at) })
	return dst
}

func runBuildJSON(t *testing.T, args ...string) (buildReport, int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"build"}, append(args, "--output", "json")...), &out, &errb)
	var rep buildReport
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out.String())
		}
	}
	return rep, code, errb.String()
}

func TestBuildCommand(t *testing.T) {
	host, base := localRegistry(t)
	sample := filepath.Join("..", "..", "testdata", "catalogs", "sample")
	auth := filepath.Join(t.TempDir(), "auth.json")
	os.WriteFile(auth, []byte(`{"auths":{}}`), 0o600)
	common := []string{"--base-image", base, "--insecure-registry", host, "--registry-config", auth}

	rep, code, stderr := runBuildJSON(t, append(common, "--catalog", copyDir(t, sample, time.Unix(1, 0)),
		"--push", host+"/acme/catalog:v4.16", "--tag", "abc123")...)
	if code != exitOK {
		t.Fatalf("build exit %d: %s", code, stderr)
	}
	if !rep.Valid || len(rep.Pushed) != 2 || strings.Join(rep.Platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("report %+v", rep)
	}
	for _, tag := range []string{"v4.16", "abc123"} {
		d, err := remote.Head(mustRef(t, host+"/acme/catalog:"+tag))
		if err != nil || d.Digest.String() != rep.Digest {
			t.Errorf("tag %s: %v, %v; want digest %s", tag, d, err, rep.Digest)
		}
	}

	// Same catalog, other mtimes and another directory: same digest.
	again, code, stderr := runBuildJSON(t, append(common, "--catalog", copyDir(t, sample, time.Now()))...)
	if code != exitOK || again.Digest != rep.Digest {
		t.Errorf("rebuild: exit %d digest %s, want %s (%s)", code, again.Digest, rep.Digest, stderr)
	}

	// Text output.
	var out, errb bytes.Buffer
	if code := run(context.Background(), append([]string{"build"}, append(common, "--catalog", sample, "--push", host+"/acme/catalog:text")...), &out, &errb); code != exitOK {
		t.Fatalf("text build exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "built "+rep.Digest+" for linux/amd64, linux/arm64") ||
		!strings.Contains(out.String(), "pushed "+host+"/acme/catalog:text ("+host+"/acme/catalog@"+rep.Digest+")") {
		t.Errorf("text output:\n%s", out.String())
	}
}

func TestBuildCommandRefusesInvalidCatalog(t *testing.T) {
	host, base := localRegistry(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etcd"), 0o755)
	os.WriteFile(filepath.Join(dir, "etcd", "catalog.yaml"), []byte("schema: olm.package\nname: etcd\ndefaultChannel: stable\n"), 0o644)
	auth := filepath.Join(t.TempDir(), "auth.json")
	os.WriteFile(auth, []byte(`{"auths":{}}`), 0o600)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"build", "--catalog", dir, "--base-image", base, "--insecure-registry", host,
		"--registry-config", auth, "--push", host + "/acme/catalog:bad"}, &out, &errb)
	if code != exitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFail, out.String(), errb.String())
	}
	wantPath := filepath.Join(dir, "etcd", "catalog.yaml") + ":"
	if !strings.Contains(out.String(), wantPath) || !strings.Contains(out.String(), "nothing pushed") {
		t.Errorf("output lacks the finding at %s and the refusal:\n%s", wantPath, out.String())
	}
	if _, err := remote.Head(mustRef(t, host+"/acme/catalog:bad")); err == nil {
		t.Error("a catalog that does not validate was pushed")
	}
}

func TestBuildCommandUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--base-image", "q.io/a/b@sha256:" + strings.Repeat("a", 64)}, "--catalog DIR is required"},
		{[]string{"--catalog", "."}, "--base-image is required"},
		{[]string{"--catalog", ".", "--base-image", "quay.io/operator-framework/opm:latest"}, "not pinned by digest"},
		{[]string{"--catalog", ".", "--base-image", "q.io/a/b@sha256:" + strings.Repeat("a", 64), "--push", "acme/catalog:v1"}, "names no registry"},
		{[]string{"--catalog", ".", "--base-image", "q.io/a/b@sha256:" + strings.Repeat("a", 64), "--push", "q.io/acme/catalog"}, "has no tag"},
		{[]string{"--catalog", ".", "--base-image", "q.io/a/b@sha256:" + strings.Repeat("a", 64), "--push", "q.io/acme/catalog:v1", "--tag", "no/slash"}, "--tag \"no/slash\""},
		{[]string{"--catalog", ".", "--base-image", "q.io/a/b@sha256:" + strings.Repeat("a", 64), "--tag", "x"}, "--tag needs --push"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"build"}, tc.args...), &out, &errb); code != exitCannotRun || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("build %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// An unchanged catalog built again on the same machine is not read again: its layer and its validation come
// from the layer cache, and the image is the same. A file whose content changed is never taken from it, even
// with its size and modification time put back.
func TestBuildCommandLayerCache(t *testing.T) {
	host, base := localRegistry(t)
	sample := filepath.Join("..", "..", "testdata", "catalogs", "sample")
	auth := filepath.Join(t.TempDir(), "auth.json")
	os.WriteFile(auth, []byte(`{"auths":{}}`), 0o600)
	cacheDir := t.TempDir()
	common := []string{"--base-image", base, "--insecure-registry", host, "--registry-config", auth, "--cache-dir", cacheDir}
	mtime := time.Unix(1, 0)
	dir := copyDir(t, sample, mtime)

	build := func(wantCache string, extra ...string) buildReport {
		t.Helper()
		rep, code, stderr := runBuildJSON(t, append(append(common, "--catalog", dir), extra...)...)
		if code != exitOK {
			t.Fatalf("build exit %d: %s", code, stderr)
		}
		if rep.Cache != wantCache {
			t.Fatalf("cache = %q, want %q", rep.Cache, wantCache)
		}
		return rep
	}
	// Files written just now could change again within their time stamps: not trusted, not kept.
	first := build("miss")
	time.Sleep(2100 * time.Millisecond)
	if again := build("miss", "--push", host+"/acme/catalog:one"); again.Digest != first.Digest {
		t.Fatalf("digest %s, want %s", again.Digest, first.Digest)
	}
	hit := build("hit", "--push", host+"/acme/catalog:two")
	if hit.Digest != first.Digest || !hit.Valid || len(hit.Pushed) != 1 {
		t.Fatalf("from the cache: %+v, want digest %s, valid, pushed", hit, first.Digest)
	}
	if d, err := remote.Head(mustRef(t, host+"/acme/catalog:two")); err != nil || d.Digest.String() != first.Digest {
		t.Fatalf("pushed from the cache: %v, %v", d, err)
	}
	// The findings of the validation come back with the layer: text output is the same with or without it.
	var out, errb bytes.Buffer
	if code := run(context.Background(), append([]string{"build"}, append(common, "--catalog", dir)...), &out, &errb); code != exitOK ||
		!strings.Contains(out.String(), "built "+first.Digest) || !strings.Contains(out.String(), "from the cache") {
		t.Fatalf("text build from the cache: exit %d\n%s%s", code, out.String(), errb.String())
	}

	// Same size, same modification time, other content: the change time moved, so the layer is built again.
	var target string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, _ error) error {
		if target == "" && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			target = p
		}
		return nil
	})
	data, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), "description: ")
	if i < 0 {
		t.Skipf("%s has no description to change", target)
	}
	changed := []byte(string(data))
	j := i + len("description: ")
	if changed[j] == 'X' {
		changed[j] = 'Y'
	} else {
		changed[j] = 'X'
	}
	if err := os.WriteFile(target, changed, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(target, mtime, mtime)
	time.Sleep(2100 * time.Millisecond)
	if other := build("miss"); other.Digest == first.Digest {
		t.Fatal("a changed catalog got the cached layer")
	}
	if back := build("hit"); back.Digest == first.Digest {
		t.Fatal("the cache answered the old layer for the changed catalog")
	}

	// --cache-dir off keeps nothing.
	rep, code, stderr := runBuildJSON(t, "--base-image", base, "--insecure-registry", host, "--registry-config", auth, "--catalog", dir, "--cache-dir", "off")
	if code != exitOK || rep.Cache != "off" {
		t.Fatalf("--cache-dir off: exit %d cache %q (%s)", code, rep.Cache, stderr)
	}
}
