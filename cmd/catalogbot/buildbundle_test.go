package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// writeBundleDir writes a small registry+v1 bundle directory and returns it.
func writeBundleDir(t *testing.T, csvExtra string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"manifests/etcd.clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcdoperator.v0.9.4\n" + csvExtra,
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
	changed := writeBundleDir(t, "spec:\n  version: 0.9.4\n")
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
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte("annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: helm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"build-bundle", dir}, &out, &errb); code != exitFail || !strings.Contains(errb.String(), "registry+v1") {
		t.Errorf("build-bundle(helm) exit = %d, stderr %q; want 1 naming registry+v1", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"build-bundle", t.TempDir()}, &out, &errb); code != exitFail || !strings.Contains(errb.String(), "annotations.yaml") {
		t.Errorf("build-bundle(empty dir) exit = %d, stderr %q; want 1 naming annotations.yaml", code, errb.String())
	}
}
