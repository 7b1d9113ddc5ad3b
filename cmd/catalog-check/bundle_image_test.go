package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/opmrun"
)

// loopbackRegistry starts go-containerregistry's registry on 127.0.0.1 and returns its host:port.
func loopbackRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func pushTo(t *testing.T, ref string, img v1.Image) {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithContext(t.Context())); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
}

// pushBundleDir builds the bundle directory's image as catalogbot build-bundle does and pushes it to ref.
func pushBundleDir(t *testing.T, dir, ref string) {
	t.Helper()
	b, _, err := bundle.Load(t.Context(), os.DirFS(dir), bundle.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	img, err := image.BundleImage(t.Context(), os.DirFS(dir), b.Annotations, image.Limits{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	pushTo(t, ref, img)
}

func runRender(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), append([]string{"bundle", "render"}, args...), &out, &errb, env{getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// TestBundleRenderImageMatchesDirectoryAndOpm: every bundle directory of the shared test data is built into its
// image, pushed to a registry on loopback, and rendered by reference through the guarded client; the blob is
// byte for byte the one rendered from the directory under the same reference, and, when opm is installed, the
// one `opm render --use-http` makes of that image (compared as JSON, the operator's container images as a set:
// opm lists them in no fixed order).
func TestBundleRenderImageMatchesDirectoryAndOpm(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skipf("the shared test data is absent (%s): bundle images not rendered", root)
	}
	sort.Strings(anns)
	if testing.Short() {
		anns = anns[:5]
	}
	opm, why := opmrun.Tool("", "OPM", "opm")
	home := t.TempDir()
	if why != "" {
		t.Logf("%s: the image renders are compared with the directory renders only", why)
	} else {
		policy := filepath.Join(home, ".config", "containers", "policy.json")
		os.MkdirAll(filepath.Dir(policy), 0o755)
		if err := os.WriteFile(policy, []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host := loopbackRegistry(t)
	opmCompared, refused := 0, 0
	for i, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		pkg, ver := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		ref := fmt.Sprintf("%s/bundles/%s:%s", host, pkg, strings.ReplaceAll(ver, "+", "_"))
		pushBundleDir(t, dir, ref)

		code, fromImage, errs := runRender(ref, "--insecure-registry", host)
		dirCode, fromDir, dirErrs := runRender(dir, "--image", ref)
		if code == exitFail && dirCode == exitFail {
			// A bundle the validators refuse (12 of the community's) is refused alike from both.
			imageFindings := strings.SplitN(errs, "\n", 2)[1]
			imageFindings = strings.ReplaceAll(imageFindings, "["+ref+"] ", "")
			dirFindings := strings.ReplaceAll(dirErrs, dir+string(filepath.Separator), "")
			if imageFindings != dirFindings || dirFindings == "" {
				t.Errorf("%s/%s: the image's findings differ from the directory's:\nimage %s\ndir   %s", pkg, ver, imageFindings, dirFindings)
			}
			refused++
			continue
		}
		if code != exitPass || dirCode != exitPass {
			t.Errorf("render %s: exit %d, of %s: exit %d\n%s%s", ref, code, dir, dirCode, errs, dirErrs)
			continue
		}
		if fromImage != fromDir {
			t.Errorf("%s/%s: the image's render differs from the directory's:\nimage %s\ndir   %s", pkg, ver, clipText(fromImage), clipText(fromDir))
			continue
		}
		// opm takes ~80 ms a bundle: every fourth one (all with -run and CATALOGBOT_OPM_ALL=1).
		if opm == "" || i%4 != 0 && os.Getenv("CATALOGBOT_OPM_ALL") == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, opm, "render", "--use-http", ref, "-o", "json")
		cmd.Env = append(os.Environ(), "HOME="+home)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		theirs, err := cmd.Output()
		cancel()
		if err != nil {
			t.Errorf("opm render %s: %v\n%s", ref, err, stderr.String())
			continue
		}
		got, want := blobForCompare(t, []byte(fromImage)), blobForCompare(t, theirs)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s/%s: catalog-check bundle render %s differs from opm render:\nours %s\nopm  %s", pkg, ver, ref, clipText(fromImage), clipText(string(theirs)))
		}
		opmCompared++
	}
	t.Logf("%d bundle images: %d rendered as their directories are, %d refused with their directories' findings; %d renders compared with opm render (equal)", len(anns), len(anns)-refused, refused, opmCompared)
}

// blobForCompare decodes a rendered blob, its relatedImages sorted.
func blobForCompare(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var blob map[string]any
	if err := json.Unmarshal(raw, &blob); err != nil {
		t.Fatalf("%v\n%s", err, clipText(string(raw)))
	}
	if ris, ok := blob["relatedImages"].([]any); ok {
		sort.Slice(ris, func(i, j int) bool { return fmt.Sprint(ris[i]) < fmt.Sprint(ris[j]) })
	}
	return blob
}

func clipText(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// TestBundleRenderImageBadInput: what is not a bundle image, a bundle image without annotations, layers beyond
// the bound, a registry not allowed, and arguments that are neither a directory nor an image reference each
// give a clear error.
func TestBundleRenderImageBadInput(t *testing.T) {
	host := loopbackRegistry(t)
	plain, err := random.Image(1024, 1)
	if err != nil {
		t.Fatal(err)
	}
	pushTo(t, host+"/org/plain:v1", plain)

	csv := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcdoperator.v1.0.0\nspec:\n  version: 1.0.0\n  minKubeVersion: 1.25.0\n  installModes: [{type: AllNamespaces, supported: true}]\n"
	labels := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.package.v1":   "etcd",
	}
	// Labels of a bundle, but no metadata/annotations.yaml in the layer.
	pushTo(t, host+"/org/no-annotations:v1", imageWithFiles(t, labels, map[string]string{"manifests/csv.yaml": csv}))
	good, err := image.BundleImage(t.Context(), fstest.MapFS{
		"manifests/csv.yaml":        {Data: []byte(csv + strings.Repeat("# padding\n", 2000))},
		"metadata/annotations.yaml": {Data: []byte(bundleAnnotations)},
	}, labels, image.Limits{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pushTo(t, host+"/org/etcd-bundle:v1", good)
	file := filepath.Join(t.TempDir(), "bundle.yaml")
	os.WriteFile(file, []byte(csv), 0o644)

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"not a bundle image", []string{host + "/org/plain:v1", "--insecure-registry", host}, exitCannotRun, "not a registry+v1 bundle image: its config has no labels"},
		{"no annotations", []string{host + "/org/no-annotations:v1", "--insecure-registry", host}, exitFail, "[" + host + "/org/no-annotations:v1] metadata"},
		{"layers too large", []string{host + "/org/etcd-bundle:v1", "--insecure-registry", host, "--image-max-bytes", "4096"}, exitCannotRun, "bundle image exceeds a limit"},
		{"absent image", []string{host + "/org/absent:v1", "--insecure-registry", host}, exitCannotRun, "missing: not found (404)"},
		{"loopback not allowed", []string{host + "/org/etcd-bundle:v1"}, exitCannotRun, "refusing to connect to " + host},
		{"--image with an image", []string{host + "/org/etcd-bundle:v1", "--image", "quay.io/x/y:v1", "--insecure-registry", host}, exitCannotRun, "--image is for a directory"},
		{"neither", []string{"no/such/dir"}, exitCannotRun, "no/such/dir is neither a directory nor an image reference"},
		{"a file", []string{file}, exitCannotRun, "is a file; give a bundle directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runRender(tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.want) || out != "" {
				t.Errorf("render %v: exit %d, stderr %q, stdout %q; want exit %d, stderr with %q and no blob", tt.args, code, errs, clipText(out), tt.code, tt.want)
			}
		})
	}
	// The good image renders, under the reference as written.
	code, out, errs := runRender(host+"/org/etcd-bundle:v1", "--insecure-registry", host)
	if code != exitPass || !strings.Contains(out, `"image": "`+host+`/org/etcd-bundle:v1"`) {
		t.Errorf("render of a good bundle image: exit %d\n%s%s", code, clipText(out), errs)
	}
}

// imageWithFiles is an image of one layer holding files, its config carrying labels.
func imageWithFiles(t *testing.T, labels, files map[string]string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(files[name]))})
		io.WriteString(tw, files[name])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Labels = labels
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// A directory whose name also reads as an image reference is refused as ambiguous; ./NAME renders it.
func TestBundleRenderAmbiguousArgument(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := filepath.Join("quay.io", "acme", "etcd-bundle:v1")
	for name, body := range map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": bundleCSV} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	if code, _, errs := runRender("quay.io/acme/etcd-bundle:v1", "--image", "quay.io/acme/etcd-bundle:v1"); code != exitCannotRun || !strings.Contains(errs, "both a directory here and an image reference") {
		t.Errorf("ambiguous argument: exit %d, stderr %q", code, errs)
	}
	if code, out, errs := runRender("./quay.io/acme/etcd-bundle:v1", "--image", "quay.io/acme/etcd-bundle:v1"); code != exitPass || !strings.Contains(out, "etcdoperator.v1.0.0") {
		t.Errorf("./NAME: exit %d\n%s%s", code, out, errs)
	}
}
