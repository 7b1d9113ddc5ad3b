package image

import (
	"context"
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
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// benchCatalog is the community catalog v4.16 of the shared test data
// (221 bundles, 20.7 MB), or a skip when ../shared is not there.
func benchCatalog(b *testing.B) string {
	dir := filepath.Join("..", "..", "..", "shared", "testdata", "catalogs", "community-operators-prod-v4.16")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("the shared test data is absent (%v): the benchmark needs ../shared/testdata/catalogs/community-operators-prod-v4.16", err)
	}
	return dir
}

// uploadCounter counts the blob uploads a registry receives and their bytes.
type uploadCounter struct {
	next   http.Handler
	blobs  atomic.Int64
	bytes  atomic.Int64
	mounts atomic.Int64 // blobs taken from another repository of the registry, not uploaded
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (u *uploadCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.URL.Path, "/blobs/uploads/") {
		switch r.Method {
		case http.MethodPost:
			if r.URL.Query().Get("mount") != "" {
				u.mounts.Add(1)
			}
		case http.MethodPut:
			u.blobs.Add(1)
			r.Body = countedBody{r.Body, &u.bytes}
		case http.MethodPatch:
			r.Body = countedBody{r.Body, &u.bytes}
		}
	}
	u.next.ServeHTTP(w, r)
}

// benchRegistry starts a registry holding a two-platform base (two 4 MiB
// random layers per platform, about the size of opm's own layers) and
// returns the base's reference by digest.
func benchRegistry(b *testing.B, base v1.ImageIndex) (*uploadCounter, string, func()) {
	u := &uploadCounter{next: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	srv := httptest.NewServer(u)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, err := name.ParseReference(host + "/opm/base:v1")
	if err != nil {
		b.Fatal(err)
	}
	if err := remote.WriteIndex(ref, base); err != nil {
		b.Fatal(err)
	}
	d, err := base.Digest()
	if err != nil {
		b.Fatal(err)
	}
	u.blobs.Store(0)
	u.bytes.Store(0)
	u.mounts.Store(0)
	return u, host + "/opm/base@" + d.String(), srv.Close
}

func benchBase(b *testing.B) v1.ImageIndex {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(4<<20, 2)
		if err != nil {
			b.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return idx
}

// buildAndPush is the App's rebuild: build on the base, push with two tags.
func buildAndPush(b *testing.B, ctx context.Context, baseRef, host, dir string) {
	built, err := Build(ctx, baseRef, os.DirFS(dir), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	for _, tag := range []string{"latest", "0123456789abcdef0123456789abcdef01234567"} {
		if _, err := built.Push(ctx, host+"/acme/catalog:"+tag); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild measures the catalog image of community-operators-prod
// v4.16 on a two-platform base, pushed to the in-process registry:
//
//   - layer: the deterministic /configs layer and its digest alone (the
//     reference the others compare with, measured in the same run);
//   - push-first: build and push into a registry that has only the base
//     (go-containerregistry's in-process registry keeps blobs across
//     repositories, so the base's layers are found, neither uploaded nor
//     mounted: what is uploaded is the catalog layer and the configs);
//   - push-unchanged: the same catalog built and pushed again, which must
//     upload no blob (blobs/op and upload-B/op are 0).
//
// Run: go test ./catalog/image -run '^$' -bench Build -benchtime 3x
func BenchmarkBuild(b *testing.B) {
	dir := benchCatalog(b)
	ctx := context.Background()
	base := benchBase(b)
	if _, err := ConfigsLayer(context.Background(), os.DirFS(dir), Limits{}); err != nil { // warm the file cache for every case alike
		b.Fatal(err)
	}

	b.Run("layer", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			l, err := ConfigsLayer(context.Background(), os.DirFS(dir), Limits{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Digest(); err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				size, _ := l.Size()
				b.ReportMetric(float64(size), "layer-B")
			}
		}
	})

	b.Run("push-first", func(b *testing.B) {
		var blobs, bytes, mounts int64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			u, baseRef, stop := benchRegistry(b, base)
			host := baseRef[:strings.Index(baseRef, "/")]
			b.StartTimer()
			buildAndPush(b, ctx, baseRef, host, dir)
			b.StopTimer()
			blobs += u.blobs.Load()
			bytes += u.bytes.Load()
			mounts += u.mounts.Load()
			stop()
			b.StartTimer()
		}
		b.ReportMetric(float64(blobs)/float64(b.N), "blobs/op")
		b.ReportMetric(float64(bytes)/float64(b.N), "upload-B/op")
		b.ReportMetric(float64(mounts)/float64(b.N), "mounts/op")
	})

	b.Run("push-unchanged", func(b *testing.B) {
		u, baseRef, stop := benchRegistry(b, base)
		defer stop()
		host := baseRef[:strings.Index(baseRef, "/")]
		buildAndPush(b, ctx, baseRef, host, dir)
		u.blobs.Store(0)
		u.bytes.Store(0)
		u.mounts.Store(0)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			buildAndPush(b, ctx, baseRef, host, dir)
		}
		b.StopTimer()
		b.ReportMetric(float64(u.blobs.Load())/float64(b.N), "blobs/op")
		b.ReportMetric(float64(u.bytes.Load())/float64(b.N), "upload-B/op")
		b.ReportMetric(float64(u.mounts.Load())/float64(b.N), "mounts/op")
	})
}
