package registry

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func withLabels(t *testing.T, img v1.Image, labels map[string]string) v1.Image {
	t.Helper()
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

var bundleLabels = map[string]string{
	"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
	LabelBundlePackage: "etcd",
}

func TestBundle(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	base := layerOf(t,
		entry{name: "manifests/", dir: true},
		entry{name: "manifests/csv.yaml", body: "kind: ClusterServiceVersion"},
		entry{name: "manifests/crd.yaml", body: "kind: CustomResourceDefinition"},
		entry{name: "manifests/passwd", link: "/etc/passwd"},
		entry{name: "manifests/sub/nested.yaml", body: "nested"},
		entry{name: "metadata/annotations.yaml", body: "annotations: {}"},
		entry{name: "tests/scorecard/config.yaml", body: "not kept"},
		entry{name: "etc/passwd", body: "not kept"},
	)
	top := layerOf(t,
		entry{name: "manifests/.wh.crd.yaml"},
		entry{name: "metadata/dependencies.yaml", body: "dependencies: []"},
		entry{name: "manifests/sub", body: "a file now"},
	)
	ref := reg.host + "/org/etcd-bundle:v1"
	pushImage(t, c, ref, withLabels(t, imageOf(t, base, top), bundleLabels))
	b, err := c.Bundle(testCtx(t), ref, Limits{})
	if err != nil {
		t.Fatalf("Bundle(%s) error = %v", ref, err)
	}
	if b.Ref != ref || !strings.HasPrefix(b.Digest, "sha256:") || b.Labels[LabelBundlePackage] != "etcd" {
		t.Errorf("Bundle(%s) = ref %q, digest %q, labels %v", ref, b.Ref, b.Digest, b.Labels)
	}
	if err := fstest.TestFS(b.FS, "manifests/csv.yaml", "manifests/passwd", "manifests/sub", "metadata/annotations.yaml", "metadata/dependencies.yaml"); err != nil {
		t.Errorf("the bundle image's FS: %v", err)
	}
	var got []string
	fs.WalkDir(b.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Errorf("walk %s: %v", p, err)
			return nil
		}
		got = append(got, p+":"+d.Type().String())
		return nil
	})
	want := "." + ":d---------" + " manifests:d--------- manifests/csv.yaml:---------- manifests/passwd:L--------- manifests/sub:---------- metadata:d--------- metadata/annotations.yaml:---------- metadata/dependencies.yaml:----------"
	if strings.Join(got, " ") != want {
		t.Errorf("the bundle image's tree:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if data, err := fs.ReadFile(b.FS, "manifests/sub"); err != nil || string(data) != "a file now" {
		t.Errorf("manifests/sub = %q, %v", data, err)
	}
	if info, err := fs.Stat(b.FS, "manifests/passwd"); err != nil || info.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Stat(a symbolic link of the image) = %v, %v; want a symbolic link", info, err)
	}
	if data, err := fs.ReadFile(b.FS, "manifests/passwd"); err != nil || len(data) != 0 {
		t.Errorf("reading a symbolic link of the image = %q, %v; want nothing (links are never followed)", data, err)
	}
}

func TestBundleRefusesWhatIsNotABundleImage(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	files := layerOf(t, entry{name: "manifests/csv.yaml", body: "kind: ClusterServiceVersion"})
	other := layerOf(t, entry{name: "bin/sh", body: "#!"})
	huge := strings.Repeat("x", 2<<20)
	tests := []struct {
		name, want string
		img        v1.Image
		limit      bool
	}{
		{"no labels", "its config has no labels", imageOf(t, files), false},
		{"catalog image", "file-based catalog image", withLabels(t, imageOf(t, files), map[string]string{LabelIndexConfigs: "/configs"}), false},
		{"other labels", `"maintainer"="someone"`, withLabels(t, imageOf(t, files), map[string]string{"maintainer": "someone"}), false},
		{"labels but no bundle files", "neither manifests/ nor metadata/", withLabels(t, imageOf(t, other), bundleLabels), false},
		{"huge config", "the image config is", withLabels(t, imageOf(t, files), map[string]string{LabelBundlePackage: huge}), true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reg.host + "/org/img:t" + string(rune('a'+i))
			pushImage(t, c, ref, tt.img)
			_, err := c.Bundle(testCtx(t), ref, Limits{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Bundle(%s) error = %v, want one saying %q", tt.name, err, tt.want)
			}
			if tt.limit != errors.Is(err, ErrLimit) || !tt.limit && !errors.Is(err, ErrNotBundleImage) {
				t.Errorf("Bundle(%s) error = %v: ErrLimit %v, ErrNotBundleImage %v", tt.name, err, errors.Is(err, ErrLimit), errors.Is(err, ErrNotBundleImage))
			}
		})
	}
}

func TestBundleLimits(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	big := layerOf(t, entry{name: "manifests/csv.yaml", body: strings.Repeat("a: b\n", 1<<20)}, entry{name: "metadata/annotations.yaml", body: "annotations: {}"})
	ref := reg.host + "/org/big:v1"
	pushImage(t, c, ref, withLabels(t, imageOf(t, big), bundleLabels))
	if _, err := c.Bundle(testCtx(t), ref, Limits{MaxBytes: 1 << 20}); !errors.Is(err, ErrLimit) {
		t.Errorf("Bundle(a 5 MiB file, 1 MiB allowed) error = %v, want ErrLimit", err)
	}
	if _, err := c.Bundle(testCtx(t), ref, Limits{MaxFiles: 1}); !errors.Is(err, ErrLimit) {
		t.Errorf("Bundle(2 files, 1 allowed) error = %v, want ErrLimit", err)
	}
	if _, err := c.Bundle(testCtx(t), ref, Limits{}); err != nil {
		t.Errorf("Bundle(within the default limits) error = %v", err)
	}
	var e *Error
	if _, err := c.Bundle(testCtx(t), reg.host+"/org/absent:v1", Limits{}); !errors.As(err, &e) || e.Result.Kind != Missing {
		t.Errorf("Bundle(absent) error = %v, want an *Error of kind missing", err)
	}
	if _, err := c.Bundle(testCtx(t), "localhost:1/org/x:v1", Limits{}); !errors.As(err, &e) || e.Result.Kind != Unverified {
		t.Errorf("Bundle(a refused host) error = %v, want an *Error of kind unverified", err)
	}
}
