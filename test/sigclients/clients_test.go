package sigclients

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/sigtools"
	"github.com/catalogbot/catalogbot/registry"
	"github.com/catalogbot/catalogbot/sign"
)

// world is a loopback registry, a signing key and its public key file.
type world struct {
	host   string
	reg    *registry.Client
	key    *sign.Key
	pubPEM string // path of the public key file
}

func newWorld(t *testing.T) *world {
	t.Helper()
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	reg, err := registry.New(registry.WithAllowedHosts(host), registry.WithInsecureHosts(host), registry.WithPushSettle(0))
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	key, err := sign.ParseKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	pubPath := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(pubPath, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return &world{host: host, reg: reg, key: key, pubPEM: pubPath}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pushBundle builds a small registry+v1 bundle image for package pkg and pushes it to ref (a tag); it
// returns repository@digest.
func (w *world) pushBundle(t *testing.T, ref, pkg, version string) string {
	t.Helper()
	ctx := ctxFor(t)
	fsys := fstest.MapFS{
		"manifests/op.clusterserviceversion.yaml": {Data: []byte(fmt.Sprintf("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: %s.v%s\nspec:\n  version: %s\n  installModes: [{type: AllNamespaces, supported: true}]\n", pkg, version, version))},
		"metadata/annotations.yaml": {Data: []byte(fmt.Sprintf(`annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: %s
  operators.operatorframework.io.bundle.channels.v1: alpha
`, pkg))},
	}
	b, _, err := bundle.Load(ctx, fsys, bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.BundleImage(ctx, fsys, b.Annotations, image.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.reg.PushOnce(ctx, ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	r, _ := w.reg.Reference(ref)
	return r.Context().Name() + "@" + d.String()
}

// signed pushes a bundle to ref, signs it by digest claiming ref, and attests its provenance.
func (w *world) signed(t *testing.T, ref, pkg string) string {
	t.Helper()
	image := w.pushBundle(t, ref, pkg, "1.0.0")
	prov := &sign.Provenance{
		BuildType: sign.BuildTypeBundle, Repository: "acme/operators", Ref: "refs/heads/main",
		Commit: strings.Repeat("ab", 20), Path: "operators/" + pkg + "/1.0.0", BuilderVersion: "test",
		PullRequests: []sign.PullRequest{{Number: 7, HeadSHA: strings.Repeat("cd", 20), Approvals: []sign.Approval{{User: "alice", HeadSHA: strings.Repeat("cd", 20)}}}},
		CheckRuns:    []sign.CheckRun{{Name: "catalog-check", HeadSHA: strings.Repeat("cd", 20), Conclusion: "success"}},
	}
	if _, err := sign.NewSigner(w.key, w.reg, nil).Sign(ctxFor(t), sign.Request{Image: image, Identities: []string{ref}, Provenance: prov}); err != nil {
		t.Fatal(err)
	}
	return image
}

// signedCatalog builds the sample catalog into a two-platform catalog image (on a random base index, as
// catalogbot build does on opm's), pushes it to ref by digest, signs the index and both platforms and
// attests them, then tags it; it returns repository@digest.
func (w *world) signedCatalog(t *testing.T, ref string) string {
	t.Helper()
	ctx := ctxFor(t)
	base := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		img, _ = mutate.ConfigFile(img, cf)
		base = mutate.AppendManifests(base, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	layer, err := image.ConfigsLayer(ctx, os.DirFS(filepath.Join("..", "..", "testdata", "catalogs", "sample")), image.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	built, err := image.FromIndex(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := built.Digest()
	r, _ := w.reg.Reference(ref)
	byDigest := r.Context().Name() + "@" + d.String()
	if _, err := built.Push(ctx, byDigest, w.reg.RemoteOptions(ctx)...); err != nil {
		t.Fatal(err)
	}
	prov := &sign.Provenance{BuildType: sign.BuildTypeCatalog, Repository: "acme/operators", Commit: strings.Repeat("ef", 20), Path: "catalogs/v4.16", BuilderVersion: "test"}
	res, err := sign.NewSigner(w.key, w.reg, nil).Sign(ctx, sign.Request{Image: byDigest, Identities: []string{ref}, Provenance: prov})
	if err != nil || len(res.Signed) != 3 {
		t.Fatalf("signing the catalog: %+v, %v", res, err)
	}
	if _, err := built.Push(ctx, ref, w.reg.RemoteOptions(ctx)...); err != nil {
		t.Fatal(err)
	}
	return byDigest
}

// copyImage copies the image at src (by digest) to the tag dst, and its signature and attestation images
// too when withAttachments, as `cosign copy` does.
func (w *world) copyImage(t *testing.T, src, dst string, withAttachments bool) {
	t.Helper()
	ctx := ctxFor(t)
	opts := w.reg.RemoteOptions(ctx)
	from, _ := w.reg.Reference(src)
	to, _ := w.reg.Reference(dst)
	img, err := remote.Image(from, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(to, img, opts...); err != nil {
		t.Fatal(err)
	}
	if !withAttachments {
		return
	}
	d, _ := img.Digest()
	for _, suffix := range []string{".sig", ".att"} {
		tag := "sha256-" + strings.TrimPrefix(d.String(), "sha256:") + suffix
		a, err := remote.Image(from.Context().Tag(tag), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(to.Context().Tag(tag), a, opts...); err != nil {
			t.Fatal(err)
		}
	}
}

func tool(t *testing.T, env, name string) string { return sigtools.Tool(t, env, name) }

func run(t *testing.T, home string, bin string, args ...string) (string, bool) {
	return sigtools.Run(t, home, bin, args...)
}

// policyHome is a HOME holding the containers policy and registries.d file of docs/signing.md, for host and
// the public key file pubPEM.
func policyHome(t *testing.T, host, pubPEM string) string {
	return sigtools.PolicyHome(t, filepath.Join("..", "..", "docs", "signing.md"), host, pubPEM)
}

func TestOpmRenderEnforcesSigstorePolicy(t *testing.T) {
	opm := tool(t, "OPM", "opm")
	w := newWorld(t)
	home := policyHome(t, w.host, w.pubPEM)
	render := func(ref string) (string, bool) {
		return run(t, home, opm, "render", ref, "--use-http", "-o", "json")
	}

	signedRef := w.host + "/acme/etcd-bundle:v1.0.0"
	image := w.signed(t, signedRef, "etcd")
	for _, ref := range []string{signedRef, image} {
		out, ok := render(ref)
		if !ok || !strings.Contains(out, `"schema": "olm.bundle"`) {
			t.Fatalf("opm render %s refused or did not render a signed bundle:\n%s", ref, out)
		}
	}
	// A multi-platform catalog image: opm picks its platform from the index and checks the signature.
	catalogRef := w.host + "/acme/catalog:v4.16"
	catalogImage := w.signedCatalog(t, catalogRef)
	for _, ref := range []string{catalogRef, catalogImage} {
		out, ok := render(ref)
		if !ok || !strings.Contains(out, `"schema": "olm.package"`) {
			t.Fatalf("opm render %s refused or did not render a signed catalog image:\n%s", ref, out)
		}
	}

	refusals := map[string]string{}
	// The catalog under a moving tag that the signature does not claim.
	w.copyImage(t, catalogImage, w.host+"/acme/catalog:latest", false)
	refusals["catalog re-tagged"] = w.host + "/acme/catalog:latest"
	unsignedRef := w.host + "/acme/etcd-bundle:v1.0.1"
	w.pushBundle(t, unsignedRef, "etcd", "1.0.1")
	refusals["unsigned"] = unsignedRef
	// The signed image under another tag of the same repository: the signature claims v1.0.0 only.
	retagged := w.host + "/acme/etcd-bundle:latest"
	w.copyImage(t, image, retagged, false)
	refusals["re-tagged in its repository"] = retagged
	// Copied with its signatures to another repository: the signature claims the original one.
	mirrored := w.host + "/mirror/etcd-bundle:v1.0.0"
	w.copyImage(t, image, mirrored, true)
	refusals["copied with its signature to another repository"] = mirrored
	// Copied without them.
	bare := w.host + "/bare/etcd-bundle:v1.0.0"
	w.copyImage(t, image, bare, false)
	refusals["copied without its signature"] = bare
	for what, ref := range refusals {
		out, ok := render(ref)
		if ok {
			t.Errorf("opm render accepted an image %s (%s):\n%s", what, ref, out)
			continue
		}
		t.Logf("%s: %s", what, lastLine(out))
		if !strings.Contains(out, "signature") && !strings.Contains(out, "Signature") {
			t.Errorf("opm render refused %s (%s), but not for its signature:\n%s", what, ref, out)
		}
	}
}

func lastLine(out string) string { return sigtools.LastLine(out) }
