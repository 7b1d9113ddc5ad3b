package checks_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/registry"
)

// testRegistry is go-containerregistry's in-process registry on loopback,
// counting the requests it serves by method.
type testRegistry struct {
	host string
	mu   sync.Mutex
	reqs map[string]int
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	tr := &testRegistry{reqs: map[string]int{}}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.reqs[r.Method]++
		tr.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tr.host = strings.TrimPrefix(srv.URL, "http://")
	return tr
}

func (tr *testRegistry) client(t *testing.T) *registry.Client {
	t.Helper()
	c, err := registry.New(registry.WithAllowedHosts(tr.host), registry.WithInsecureHosts(tr.host))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// push writes img to repo:tag and returns the reference by digest.
func (tr *testRegistry) push(t *testing.T, repo string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(tr.host+"/"+repo+":latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tr.host + "/" + repo + "@" + d.String()
}

func bundleWithImages(pkg, version, image string, related ...string) string {
	var rel strings.Builder
	if len(related) > 0 {
		rel.WriteString("relatedImages:\n")
		for i, r := range related {
			fmt.Fprintf(&rel, "  - name: img%d\n    image: %s\n", i, r)
		}
	}
	return fmt.Sprintf(`---
schema: olm.bundle
package: %[1]s
name: %[1]s.v%[2]s
image: %[3]s
properties:
  - type: olm.package
    value: {packageName: %[1]s, version: %[2]s}
%[4]s`, pkg, version, image, rel.String())
}

func TestImagesCheck(t *testing.T) {
	reg := newTestRegistry(t)
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	present := reg.push(t, "acme/etcd-bundle", img)
	missing := reg.host + "/acme/etcd-bundle@sha256:" + strings.Repeat("0", 64)
	outside := "quay.io/evil/x@sha256:" + strings.Repeat("1", 64)
	tagged := reg.host + "/acme/etcd-bundle:latest"

	r := newGitRepo(t)
	policy := strings.Replace(testPolicy, "protectedPaths", fmt.Sprintf("images: {allowedRegistries: [%q], requireDigest: true}\nprotectedPaths", reg.host+"/acme/"), 1)
	r.write(".catalogbot.yaml", policy)
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0")+bundleWithImages("etcd", "1.0.0", present))
	base := r.commit("base")
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundleWithImages("etcd", "1.0.0", present)+
		bundleWithImages("etcd", "1.1.0", present, missing, outside, tagged, "not a ref"))
	head := r.commit("1.1.0")

	reg.mu.Lock()
	clear(reg.reqs) // count only what the check sends
	reg.mu.Unlock()
	v := runChecksWith(t, r, base, head, "bob", checks.Images{Registry: reg.client(t)}, checks.Validation{})
	v.expect(t, "images", checks.Failure, "images.missing", "images.invalid-reference")
	// The rules about the text of references are validation's, and need no registry.
	v.expect(t, "validation", checks.Failure, "images.registry-not-allowed", "images.not-pinned")
	for _, name := range []string{"images", "validation"} {
		for _, f := range v[name].Findings {
			if f.Line < 30 {
				t.Errorf("finding %v should point at the reference's line in the new bundle", f)
			}
			if name == "images" && (f.Rule == "images.registry-not-allowed" || f.Rule == "images.not-pinned") {
				t.Errorf("the images check repeats validation's finding %v", f)
			}
		}
	}
	if !strings.Contains(v["images"].Summary, "2 references were not looked up") {
		t.Errorf("the images summary does not say what it left to validation:\n%s", v["images"].Summary)
	}
	reg.mu.Lock()
	gets, heads := reg.reqs[http.MethodGet], reg.reqs[http.MethodHead]
	reg.mu.Unlock()
	// Only HEAD requests for manifests: the ping is a GET of /v2/ (one per repository at most).
	if heads != 2 || gets > 1 {
		t.Errorf("registry saw %d HEAD and %d GET requests, want 2 HEAD (present, missing) and at most one GET /v2/ ping", heads, gets)
	}

	// A registry that is down: could not verify, never a pass, never "missing".
	down := checks.Images{Registry: unreachable{}}
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundleWithImages("etcd", "1.0.0", present)+bundleWithImages("etcd", "1.1.0", present))
	head2 := r.commit("only good refs")
	runChecksWith(t, r, base, head2, "bob", down).expect(t, "images", checks.Neutral, "images.unverified")
	runChecksWith(t, r, base, head2, "bob", checks.Images{Registry: reg.client(t)}).expect(t, "images", checks.Success)
}

type unreachable struct{}

func (unreachable) CheckAll(_ context.Context, refs []string) map[string]registry.Result {
	out := map[string]registry.Result{}
	for _, r := range refs {
		out[r] = registry.Result{Ref: r, Kind: registry.Unverified, Status: 503, Reason: "registry error (503 Service Unavailable)"}
	}
	return out
}

func runChecksWith(t *testing.T, r *gitRepo, base, head, author string, cs ...checks.Check) verdict {
	t.Helper()
	pr := buildPR(t, r, base, head, author, nil)
	out := verdict{}
	for _, res := range checks.NewRunner(cs).Run(context.Background(), pr) {
		out[res.Check] = res
	}
	return out
}

// bundleImage builds a bundle image whose manifests/ holds the given files.
func bundleImage(t *testing.T, files map[string]string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestCRDSafetyFromBundleImages(t *testing.T) {
	reg := newTestRegistry(t)
	v1ref := reg.push(t, "acme/etcd-bundle", bundleImage(t, map[string]string{"manifests/widgets.crd.yaml": crdDoc("size", "version"), "metadata/annotations.yaml": "annotations: {}\n"}))
	v2ref := reg.push(t, "acme/etcd-bundle", bundleImage(t, map[string]string{"manifests/widgets.crd.yaml": crdDoc("size")}))

	r := newGitRepo(t)
	r.write(".catalogbot.yaml", testPolicy)
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0")+bundleWithImages("etcd", "1.0.0", v1ref))
	base := r.commit("base")
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundleWithImages("etcd", "1.0.0", v1ref)+bundleWithImages("etcd", "1.1.0", v2ref))
	head := r.commit("1.1.0 drops a field")

	src := checks.RegistryManifests{Client: reg.client(t)}
	v := runChecksWith(t, r, base, head, "bob", checks.CRDSafety{Manifests: src})
	v.expect(t, "crd-safety", checks.Failure)
	// Without an image source the check cannot verify: neutral, not a pass.
	runChecksWith(t, r, base, head, "bob", checks.CRDSafety{}).expect(t, "crd-safety", checks.Neutral, "crd-safety.no-source")
}

// TestCRDSafetySummarySaysWhyNothingWasCompared: a bundle without a
// predecessor and a predecessor whose CRDs cannot be read are different
// stories, and the summary tells them apart.
func TestCRDSafetySummarySaysWhyNothingWasCompared(t *testing.T) {
	reg := newTestRegistry(t)
	v2ref := reg.push(t, "acme/etcd-bundle", bundleImage(t, map[string]string{"manifests/widgets.crd.yaml": crdDoc("size")}))
	gone := strings.Replace(v2ref, "acme/etcd-bundle", "acme/gone-bundle", 1)
	src := checks.RegistryManifests{Client: reg.client(t)}

	r := newGitRepo(t)
	r.write(".catalogbot.yaml", testPolicy)
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0")+bundleWithImages("etcd", "1.0.0", gone))
	base := r.commit("base")
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundleWithImages("etcd", "1.0.0", gone)+bundleWithImages("etcd", "1.1.0", v2ref))
	head := r.commit("1.1.0")
	v := runChecksWith(t, r, base, head, "bob", checks.CRDSafety{Manifests: src})
	v.expect(t, "crd-safety", checks.Neutral, "crd-safety.no-source")
	sum := v["crd-safety"].Summary
	if !strings.Contains(sum, "the predecessor's CRDs cannot be read") || strings.Contains(sum, "no predecessor") {
		t.Errorf("summary with an unreadable predecessor:\n%s", sum)
	}

	r.git("checkout", "-q", base)
	r.git("checkout", "-q", "-b", "pr2")
	r.write("catalogs/v4.16/fresh/catalog.yaml", pkgHeader("fresh", "1.0.0")+bundleWithImages("fresh", "1.0.0", v2ref))
	head2 := r.commit("a new package")
	// A new package is a maintainer's to add (newPackages: maintainers): for bob, who owns nothing it touches,
	// the runner's ownership gate would skip the registry work.
	v = runChecksWith(t, r, base, head2, "alice", checks.CRDSafety{Manifests: src})
	v.expect(t, "crd-safety", checks.Success)
	if sum := v["crd-safety"].Summary; !strings.Contains(sum, "no predecessor") {
		t.Errorf("summary without a predecessor:\n%s", sum)
	}
}
