package registry

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one tar entry of a test layer: a regular file unless link or dir is set.
type entry struct {
	name, body, link string
	dir, hard        bool
}

func layerOf(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case e.dir:
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		case e.hard:
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, e.link, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func imageOf(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestManifests(t *testing.T) {
	base := layerOf(t,
		entry{name: "manifests/", dir: true},
		entry{name: "manifests/csv.yaml", body: "kind: ClusterServiceVersion"},
		entry{name: "./manifests/crd.yaml", body: "kind: CustomResourceDefinition"},
		entry{name: "manifests/old.yaml", body: "old"},
		entry{name: "manifests/passwd", link: "/etc/passwd"},
		entry{name: "manifests/hard", link: "manifests/csv.yaml", hard: true},
		entry{name: "manifests/sub/nested.yaml", body: "nested"},
		entry{name: "metadata/annotations.yaml", body: "annotations: {}"},
		entry{name: "manifests-not/x.yaml", body: "x"},
		entry{name: "../manifests/escape.yaml", body: "cleaned to manifests/escape.yaml"},
	)
	tests := []struct {
		name   string
		layers []v1.Layer
		want   map[string]string
	}{
		{"one layer", []v1.Layer{base}, map[string]string{
			"csv.yaml": "kind: ClusterServiceVersion", "crd.yaml": "kind: CustomResourceDefinition",
			"old.yaml": "old", "escape.yaml": "cleaned to manifests/escape.yaml"}},
		{"whiteout and replacement", []v1.Layer{base, layerOf(t,
			entry{name: "manifests/.wh.old.yaml"},
			entry{name: "manifests/.wh.escape.yaml"},
			entry{name: "manifests/csv.yaml", body: "kind: ClusterServiceVersion # v2"},
			entry{name: "manifests/crd.yaml", link: "csv.yaml"},
			entry{name: "manifests/new.yaml", body: "new"},
		)}, map[string]string{"csv.yaml": "kind: ClusterServiceVersion # v2", "new.yaml": "new"}},
		{"opaque directory", []v1.Layer{base, layerOf(t,
			entry{name: "manifests/.wh..wh..opq"},
			entry{name: "manifests/only.yaml", body: "only"},
		)}, map[string]string{"only.yaml": "only"}},
		{"directory whited out", []v1.Layer{base, layerOf(t, entry{name: ".wh.manifests"})}, map[string]string{}},
		{"directory replaced by a link", []v1.Layer{base, layerOf(t, entry{name: "manifests", link: "/etc"})}, map[string]string{}},
		{"no manifests", []v1.Layer{layerOf(t, entry{name: "metadata/annotations.yaml", body: "a"})}, map[string]string{}},
	}
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reg.host + "/org/bundle:t" + string(rune('a'+i))
			pushImage(t, c, ref, imageOf(t, tt.layers...))
			got, err := c.Manifests(testCtx(t), ref, Limits{})
			if err != nil {
				t.Fatalf("Manifests(%s) error = %v", ref, err)
			}
			gotS := map[string]string{}
			for k, v := range got {
				gotS[k] = string(v)
			}
			if !maps.Equal(gotS, tt.want) {
				t.Errorf("Manifests(%s) = %v, want %v", ref, gotS, tt.want)
			}
		})
	}
}

func TestManifestsLimits(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	three := layerOf(t, entry{name: "manifests/a", body: "a"}, entry{name: "manifests/b", body: "b"}, entry{name: "manifests/c", body: "c"})
	bomb := layerOf(t, entry{name: "filler", body: strings.Repeat("\x00", 4<<20)}, entry{name: "manifests/a", body: "a"})
	pushImage(t, c, reg.host+"/org/three:v1", imageOf(t, three))
	pushImage(t, c, reg.host+"/org/bomb:v1", imageOf(t, bomb))
	pushImage(t, c, reg.host+"/org/layers:v1", imageOf(t, three, three, three))
	tests := []struct {
		name string
		ref  string
		lim  Limits
	}{
		{"too many files", "/org/three:v1", Limits{MaxFiles: 2}},
		{"too many bytes uncompressed", "/org/bomb:v1", Limits{MaxBytes: 1 << 20}},
		{"too many layers", "/org/layers:v1", Limits{MaxLayers: 2}},
		{"too many bytes compressed", "/org/three:v1", Limits{MaxBytes: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Manifests(testCtx(t), reg.host+tt.ref, tt.lim)
			if !errors.Is(err, ErrLimit) {
				t.Errorf("Manifests(%s, %+v) error = %v, want ErrLimit", tt.ref, tt.lim, err)
			}
		})
	}
	if got, err := c.Manifests(testCtx(t), reg.host+"/org/bomb:v1", Limits{}); err != nil || !slices.Equal(slices.Sorted(maps.Keys(got)), []string{"a"}) {
		t.Errorf("Manifests(bomb within default limits) = %v, %v, want [a]", slices.Sorted(maps.Keys(got)), err)
	}
	if _, err := c.Manifests(testCtx(t), reg.host+"/org/three:v1", Limits{MaxFiles: -1}); err == nil {
		t.Errorf("Manifests with a negative limit: no error, want one")
	}
}

func TestManifestsRegistryErrors(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	tests := []struct {
		ref  string
		want Kind
	}{
		{reg.host + "/org/absent:v1", Missing},
		{"not a reference", Invalid},
		{"localhost:1/org/x:v1", Unverified},
	}
	for _, tt := range tests {
		_, err := c.Manifests(testCtx(t), tt.ref, Limits{})
		var e *Error
		if !errors.As(err, &e) || e.Result.Kind != tt.want {
			t.Errorf("Manifests(%s) error = %v, want an *Error of kind %v", tt.ref, err, tt.want)
		}
	}
}

func TestManifestsRefusesHugeManifest(t *testing.T) {
	var a armed
	reg := newTestRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a.on.Load() && isManifest(r) && r.Method == http.MethodGet {
				w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
				w.WriteHeader(http.StatusOK)
				io.Copy(w, io.LimitReader(zeroReader{}, maxManifestBytes+1<<20))
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	c := newTestClient(t, reg.host)
	push(t, c, reg.host+"/org/bundle:v1")
	a.on.Store(true)
	_, err := c.Manifests(testCtx(t), reg.host+"/org/bundle:v1", Limits{})
	var e *Error
	if !errors.As(err, &e) || e.Result.Kind != Unverified {
		t.Fatalf("Manifests(manifest of %d bytes) error = %v, want an *Error of kind unverified", maxManifestBytes+1<<20, err)
	}
	if !strings.Contains(e.Result.Reason, "manifest larger than") {
		t.Errorf("Manifests(huge manifest).Reason = %q, want the manifest bound named", e.Result.Reason)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
