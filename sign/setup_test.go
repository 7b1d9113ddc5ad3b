package sign

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/catalogbot/catalogbot/registry"
)

// testRegistry starts ggcr's registry on loopback and returns its host:port and a guarded client allowed
// to reach it over plain HTTP. opts are the registry's (the referrers API is off by default).
func testRegistry(t testing.TB, opts ...ggcr.Option) (string, *registry.Client) {
	t.Helper()
	srv := httptest.NewServer(ggcr.New(append([]ggcr.Option{ggcr.Logger(log.New(io.Discard, "", 0))}, opts...)...))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	reg, err := registry.New(registry.WithAllowedHosts(host), registry.WithInsecureHosts(host), registry.WithPushSettle(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	return host, reg
}

// newKey makes a P-256 key and writes it to a PKCS#8 PEM file.
func newKey(t testing.TB) (*Key, string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "signing.key")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := LoadKey(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k, path
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pushImage pushes a random image to ref (a tag) and returns repo@digest.
func pushImage(t testing.TB, reg *registry.Client, ref string) string {
	t.Helper()
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reg.Reference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, reg.RemoteOptions(testCtx(t))...); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return r.Context().Name() + "@" + d.String()
}

// pushIndex pushes a two-platform index to ref and returns repo@digest and the platform digests.
func pushIndex(t testing.TB, reg *registry.Client, ref string) (string, []string) {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var plats []string
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		plats = append(plats, d.String())
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	r, err := reg.Reference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx, reg.RemoteOptions(testCtx(t))...); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	return r.Context().Name() + "@" + d.String(), plats
}

func mustDigest(t testing.TB, s string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// testProvenance is what the App would record for a merged pull request.
func testProvenance(base string) *Provenance {
	return &Provenance{
		BuildType:  BuildTypeCatalog,
		Repository: "acme/operators",
		Ref:        "refs/heads/main",
		Commit:     strings.Repeat("a1", 20),
		Path:       "catalogs/v4.16",
		PullRequests: []PullRequest{{
			Number: 42, HeadSHA: strings.Repeat("b2", 20), MergeCommit: strings.Repeat("a1", 20),
			Approvals: []Approval{{User: "alice", HeadSHA: strings.Repeat("b2", 20), At: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}},
		}},
		CheckRuns:      []CheckRun{{Name: "catalog-check", HeadSHA: strings.Repeat("b2", 20), Conclusion: "success"}},
		BaseImage:      base,
		BuilderVersion: "v1.2.3",
		InvocationID:   "delivery-1",
		StartedOn:      time.Date(2026, 11, 26, 10, 1, 0, 0, time.UTC),
		FinishedOn:     time.Date(2026, 11, 26, 10, 2, 0, 0, time.UTC),
	}
}

type (
	ctxT    = context.Context
	digestT = name.Digest
)
