package image

import (
	"archive/tar"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

var bundleAnnotations = map[string]string{
	"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
	"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
	"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
	"operators.operatorframework.io.bundle.package.v1":         "etcd",
	"operators.operatorframework.io.bundle.channels.v1":        "alpha,stable",
	"operators.operatorframework.io.bundle.channel.default.v1": "stable",
	"operators.operatorframework.io.metrics.builder":           "operator-sdk-v1.30.0",
}

func sampleBundle(mtime time.Time, mode os.FileMode) fstest.MapFS {
	return fstest.MapFS{
		"manifests/etcd.clusterserviceversion.yaml": {Data: []byte("kind: ClusterServiceVersion\n"), ModTime: mtime, Mode: mode},
		"manifests/etcdclusters.crd.yaml":           {Data: []byte("kind: CustomResourceDefinition\n"), ModTime: mtime, Mode: mode},
		"metadata/annotations.yaml":                 {Data: []byte("annotations: {}\n"), ModTime: mtime, Mode: mode},
		"tests/scorecard/config.yaml":               {Data: []byte("kind: Configuration\n"), ModTime: mtime, Mode: mode},
		"Dockerfile":                                {Data: []byte("FROM scratch\n"), ModTime: mtime, Mode: mode},
	}
}

// layerFiles lists the single layer's entries as "name mode" with each file's content.
func layerFiles(t *testing.T, layerRC io.ReadCloser) (names []string, content map[string]string) {
	t.Helper()
	defer layerRC.Close()
	content = map[string]string{}
	tr := tar.NewReader(layerRC)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %v uid %d gid %d, want the epoch and 0", h.Name, h.ModTime, h.Uid, h.Gid)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			content[h.Name] = string(b)
			if h.Mode != 0o644 {
				t.Errorf("%s mode %o, want 644", h.Name, h.Mode)
			}
		}
	}
	return names, content
}

func TestBundleImage(t *testing.T) {
	ctx := t.Context()
	img, err := BundleImage(ctx, sampleBundle(time.Unix(1e9, 0), 0o600), bundleAnnotations, Limits{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("Layers() = %d layers, %v; want one (FROM scratch)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	names, content := layerFiles(t, rc)
	want := []string{"manifests/", "manifests/etcd.clusterserviceversion.yaml", "manifests/etcdclusters.crd.yaml", "metadata/", "metadata/annotations.yaml"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("layer entries = %q, want %q (manifests/ and metadata/ at the root, nothing else)", names, want)
	}
	if content["metadata/annotations.yaml"] != "annotations: {}\n" {
		t.Errorf("annotations.yaml in the layer = %q", content["metadata/annotations.yaml"])
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{}
	for k, v := range bundleAnnotations {
		if strings.HasPrefix(k, BundleLabelPrefix) {
			wantLabels[k] = v
		}
	}
	if !reflect.DeepEqual(cf.Config.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", cf.Config.Labels, wantLabels)
	}
	if !cf.Created.Time.Equal(epoch) || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config created %v os %s arch %s, want the epoch, linux, amd64", cf.Created, cf.OS, cf.Architecture)
	}
}

// TestBundleImageDeterministic: the digest depends on the files and annotations only, not on times, modes,
// the order files are listed in or the folder's other content.
func TestBundleImageDeterministic(t *testing.T) {
	ctx := t.Context()
	a := sampleBundle(time.Unix(1e9, 0), 0o600)
	b := sampleBundle(time.Now(), 0o755)
	delete(b, "Dockerfile")
	da, db := bundleDigest(t, a), bundleDigest(t, b)
	if da != db {
		t.Errorf("digests differ for the same manifests/ and metadata/: %s and %s", da, db)
	}
	b["manifests/etcdclusters.crd.yaml"] = &fstest.MapFile{Data: []byte("kind: CustomResourceDefinition\n# changed\n")}
	if dc := bundleDigest(t, b); dc == da {
		t.Errorf("a changed manifest kept the digest %s", dc)
	}
	if _, err := BundleImage(ctx, a, map[string]string{"other": "x"}, Limits{}); err == nil {
		t.Error("BundleImage without bundle annotations succeeded, want an error")
	}
}

func bundleDigest(t *testing.T, fsys fstest.MapFS) string {
	t.Helper()
	img, err := BundleImage(t.Context(), fsys, bundleAnnotations, Limits{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func TestBundleImageRefusesLinksAndMissingFolders(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"manifests", "metadata"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte("annotations: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "manifests", "csv.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := BundleImage(t.Context(), os.DirFS(dir), bundleAnnotations, Limits{})
	if !errors.Is(err, errBundleLink) || !strings.Contains(err.Error(), "manifests/csv.yaml") {
		t.Errorf("BundleImage(link) error = %v, want the link refused by name", err)
	}
	os.RemoveAll(filepath.Join(dir, "manifests"))
	if _, err := BundleImage(t.Context(), os.DirFS(dir), bundleAnnotations, Limits{}); err == nil || !strings.Contains(err.Error(), "manifests/") {
		t.Errorf("BundleImage(no manifests/) error = %v, want it to name the missing folder", err)
	}
	// manifests/ itself a link to a folder outside the bundle (issue 26.7): refused, never built in.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("kind: Secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "manifests")); err != nil {
		t.Fatal(err)
	}
	if _, err := BundleImage(t.Context(), os.DirFS(dir), bundleAnnotations, Limits{}); !errors.Is(err, errBundleLink) || !strings.Contains(err.Error(), "manifests") {
		t.Errorf("BundleImage(manifests link) error = %v, want the link refused", err)
	}
}

// TestBundleImageOfRealBundlesPushes builds every real bundle directory of the shared test data, pushes each
// to an in-process registry and reads it back by digest.
func TestBundleImageOfRealBundlesPushes(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("the shared test data is absent (%v); real bundles not built", err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	sort.Strings(dirs)
	if len(dirs) < 100 {
		t.Fatalf("found %d bundle directories, want the 131 the README lists", len(dirs))
	}
	for i, ann := range dirs {
		dir := filepath.Dir(filepath.Dir(ann))
		img, err := BundleImage(t.Context(), os.DirFS(dir), bundleAnnotations, Limits{TempDir: t.TempDir()})
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if i%10 != 0 {
			continue // pushing a tenth is enough to show registries take them
		}
		ref, _ := name.ParseReference(host+"/bundles/b:"+strings.ReplaceAll(filepath.Base(dir), "+", "_"), name.Insecure)
		if err := remote.Write(ref, img, remote.WithContext(t.Context())); err != nil {
			t.Fatalf("push %s: %v", dir, err)
		}
		d, _ := img.Digest()
		got, err := remote.Image(ref.Context().Digest(d.String()), remote.WithContext(t.Context()))
		if err != nil {
			t.Fatalf("pull %s: %v", dir, err)
		}
		if gd, _ := got.Digest(); gd != d {
			t.Errorf("%s: pulled %s, pushed %s", dir, gd, d)
		}
	}
}
