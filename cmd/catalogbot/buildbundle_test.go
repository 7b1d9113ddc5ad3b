package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// writeBundleDir writes a small registry+v1 bundle directory and returns it.
func writeBundleDir(t *testing.T, csvExtra string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"manifests/etcd.clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcdoperator.v0.9.4\nspec:\n  version: 0.9.4\n  minKubeVersion: 1.25.0\n  installModes: [{type: AllNamespaces, supported: true}]\n" + csvExtra,
		"metadata/annotations.yaml": `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: etcd
  operators.operatorframework.io.bundle.channels.v1: alpha
  operators.operatorframework.io.bundle.channel.default.v1: alpha
`,
		"README.md": "not in the image\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuildBundlePushesOnceAndNeverReplaces(t *testing.T) {
	host, _ := localRegistry(t)
	ctx := context.Background()
	dir := writeBundleDir(t, "")
	target := host + "/acme/etcd-bundle:v0.9.4"
	var out, errb bytes.Buffer
	code := run(ctx, []string{"build-bundle", dir, "--push", target, "--insecure-registry", host, "--output", "json"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("build-bundle exit = %d, want 0\n%s%s", code, out.String(), errb.String())
	}
	var rep buildBundleReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rep.Labels["operators.operatorframework.io.bundle.package.v1"] != "etcd" || rep.Already {
		t.Errorf("report = %+v, want the package label and a fresh push", rep)
	}
	img, err := remote.Image(mustRef(t, target))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d.String() != rep.Digest {
		t.Errorf("the tag names %s, the report says %s", d, rep.Digest)
	}

	// The same directory again: the same digest, nothing pushed.
	out.Reset()
	errb.Reset()
	if code := run(ctx, []string{"build-bundle", dir, "--push", target, "--insecure-registry", host}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "already holds "+rep.Digest) {
		t.Errorf("second build-bundle exit = %d, output %q%s; want 0 and 'already holds'", code, out.String(), errb.String())
	}

	// Other content under the same version: refused, the tag unchanged.
	changed := writeBundleDir(t, "  displayName: etcd\n")
	out.Reset()
	errb.Reset()
	code = run(ctx, []string{"build-bundle", changed, "--push", target, "--insecure-registry", host}, &out, &errb)
	if code != exitFail || !strings.Contains(errb.String(), "never replaced") {
		t.Errorf("build-bundle of other content exit = %d, stderr %q; want 1 and the refusal", code, errb.String())
	}
	img, _ = remote.Image(mustRef(t, target))
	if d, _ := img.Digest(); d.String() != rep.Digest {
		t.Errorf("the tag moved to %s", d)
	}
}

func TestBuildBundleRefusesWhatIsNotABundle(t *testing.T) {
	dir := writeBundleDir(t, "")
	ann := filepath.Join(dir, "metadata", "annotations.yaml")
	data, err := os.ReadFile(ann)
	if err != nil {
		t.Fatal(err)
	}
	// No annotations opm can read (the package and channels are mappings): opm render fails, so does the build.
	broken := strings.NewReplacer("package.v1: etcd", "package.v1: {name: etcd}", "channels.v1: alpha", "channels.v1: [alpha]", "default.v1: alpha", "default.v1: [alpha]").Replace(string(data))
	if err := os.WriteFile(ann, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"build-bundle", dir}, &out, &errb); code != exitFail || !strings.Contains(errb.String(), "bundle.no-annotations") {
		t.Errorf("build-bundle(unreadable annotations) exit = %d, stderr %q; want 1 naming bundle.no-annotations", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"build-bundle", t.TempDir()}, &out, &errb); code != exitFail || !strings.Contains(errb.String(), "not a bundle directory") {
		t.Errorf("build-bundle(empty dir) exit = %d, stderr %q; want 1, not a bundle directory", code, errb.String())
	}
}

// build-bundle refuses what bundle validate refuses (issue 26.7), on real directories: links to what is outside
// the bundle (a file, or manifests/ itself), metadata/ beyond the bounds, ambiguous metadata; and builds a
// bundle whose annotations opm reads under another file name, labelled with them.
func TestBuildBundleRefusesWhatValidateRefuses(t *testing.T) {
	outside := t.TempDir()
	secret := "kind: Secret\napiVersion: v1\nmetadata: {name: stolen}\ndata: {key: c2VjcmV0}\n"
	if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, dir string)
		code  int
		rule  string // in stderr
		label string // the package label of the built image
	}{
		{"a link to a file outside the bundle", func(t *testing.T, dir string) {
			mustSymlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "manifests", "secret.yaml"))
		}, exitFail, "bundle.not-regular-file", ""},
		{"manifests/ a link to a folder outside", func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "manifests", "etcd.clusterserviceversion.yaml"), filepath.Join(outside, "csv.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(dir, "manifests")); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, outside, filepath.Join(dir, "manifests"))
		}, exitFail, "bundle.not-regular-file", ""},
		{"a metadata file beyond the bound", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "metadata", "icon.bin"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(65 << 20); err != nil { // sparse: nothing is written
				t.Fatal(err)
			}
		}, exitFail, "bundle.too-large", ""},
		{"a second annotations file", func(t *testing.T, dir string) {
			data, _ := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
			writeTestFile(t, filepath.Join(dir, "metadata", "00-other.yaml"), strings.Replace(string(data), "package.v1: etcd", "package.v1: redis", 1))
		}, exitFail, "bundle.metadata-ambiguous", ""},
		{"annotations under another name", func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "metadata", "annotations.yaml"), filepath.Join(dir, "metadata", "bundle.yaml")); err != nil {
				t.Fatal(err)
			}
		}, exitOK, "", "etcd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeBundleDir(t, "")
			tc.edit(t, dir)
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"build-bundle", dir, "--output", "json"}, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.rule) {
				t.Fatalf("exit %d, want %d with %s\nstdout %s\nstderr %s", code, tc.code, tc.rule, out.String(), errb.String())
			}
			if tc.code != exitOK {
				if out.Len() != 0 {
					t.Errorf("something was built: %s", out.String())
				}
				return
			}
			var rep buildBundleReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if got := rep.Labels["operators.operatorframework.io.bundle.package.v1"]; got != tc.label {
				t.Errorf("package label %q, want %q", got, tc.label)
			}
		})
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeTestFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A pushed version is never replaced, under concurrency, as a user meets it (issue 26.8): two build-bundle
// runs of different content to one new tag, started together against a real registry (as two CI jobs of two
// pull requests would), never both print "pushed": in each trial exactly one exits 0 having pushed, the
// other exits 1 saying the version is never replaced, and the tag names the winner's digest.
func TestBuildBundleConcurrentPushesToOneNewTag(t *testing.T) {
	host, _ := localRegistry(t)
	dirs := []string{writeBundleDir(t, ""), writeBundleDir(t, "  displayName: etcd\n")}
	for trial := 0; trial < 5; trial++ {
		target := fmt.Sprintf("%s/acme/etcd-bundle:v0.9.%d", host, trial)
		type outcome struct {
			code     int
			out, err string
			rep      buildBundleReport
		}
		got := make([]outcome, len(dirs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, dir := range dirs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var out, errb bytes.Buffer
				code := run(context.Background(), []string{"build-bundle", dir, "--push", target, "--insecure-registry", host, "--output", "json"}, &out, &errb)
				got[i] = outcome{code: code, out: out.String(), err: errb.String()}
				if code == exitOK {
					_ = json.Unmarshal(out.Bytes(), &got[i].rep)
				}
			}()
		}
		close(start)
		wg.Wait()
		var winners []string
		refused := 0
		for _, o := range got {
			switch {
			case o.code == exitOK && !o.rep.Already && o.rep.Digest != "":
				winners = append(winners, o.rep.Digest)
			case o.code == exitFail && strings.Contains(o.err, "never replaced"):
				refused++
			default:
				t.Errorf("trial %d: exit %d\n%s%s", trial, o.code, o.out, o.err)
			}
		}
		if len(winners) != 1 || refused != 1 {
			t.Errorf("trial %d: %d runs pushed, %d refused; want exactly one of each", trial, len(winners), refused)
			continue
		}
		img, err := remote.Image(mustRef(t, target))
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := img.Digest(); d.String() != winners[0] {
			t.Errorf("trial %d: the tag names %s, the run that pushed reported %s", trial, d, winners[0])
		}
	}
}
