package sign

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestSignIndexThenVerifySignaturesAndProvenance(t *testing.T) {
	host, reg := testRegistry(t)
	ctx := testCtx(t)
	key, _ := newKey(t)
	image, plats := pushIndex(t, reg, host+"/acme/catalog:latest")
	base := host + "/opm/base@sha256:" + strings.Repeat("c3", 32)
	prov := testProvenance(base)

	res, err := NewSigner(key, reg, nil).Sign(ctx, Request{Image: image, Identities: []string{host + "/acme/catalog:latest", host + "/acme/catalog:v4.16"}, Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	wantSigned := append([]string{image}, host+"/acme/catalog@"+plats[0], host+"/acme/catalog@"+plats[1])
	if !reflect.DeepEqual(res.Signed, wantSigned) || res.Added != 6 || !res.Attested {
		t.Fatalf("result = %+v, want %v signed with 2 signatures each, attested", res, wantSigned)
	}

	v, err := Verify(ctx, reg, key.Verifier(), host+"/acme/catalog:latest", VerifyOptions{RequireAttestation: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.Image != image || len(v.Manifests) != 3 {
		t.Fatalf("verification = %+v", v)
	}
	for _, m := range v.Manifests {
		if len(m.Identities) != 2 || m.Identities[0] != host+"/acme/catalog:latest" || len(m.Rejected) != 0 {
			t.Errorf("%s: identities %v, rejected %v", m.Digest, m.Identities, m.Rejected)
		}
		if len(m.Statements) != 1 {
			t.Fatalf("%s: %d statements", m.Digest, len(m.Statements))
		}
		st := m.Statements[0]
		if st.PredicateType != SLSAProvenanceV1 || len(st.Subjects) != 3 {
			t.Errorf("statement %+v", st)
		}
		got, want := st.Provenance, *prov
		want.BuilderID = DefaultBuilderID // filled in when empty
		if !reflect.DeepEqual(got, want) {
			t.Errorf("provenance round trip:\n got %+v\nwant %+v", got, want)
		}
	}
}

// TestAttachmentsAreCosignsFormat reads the attachment images as cosign writes them: the tag, the media
// types, the annotations and the simple-signing payload.
func TestAttachmentsAreCosignsFormat(t *testing.T) {
	host, reg := testRegistry(t)
	ctx := testCtx(t)
	key, _ := newKey(t)
	image := pushImage(t, reg, host+"/acme/etcd-bundle:v0.9.4")
	if _, err := NewSigner(key, reg, nil).Sign(ctx, Request{Image: image, Provenance: testProvenance("")}); err != nil {
		t.Fatal(err)
	}
	d := mustDigest(t, image)
	hexd := strings.TrimPrefix(d.DigestStr(), "sha256:")
	sigImg, err := remote.Image(d.Context().Tag("sha256-"+hexd+".sig"), reg.RemoteOptions(ctx)...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sigImg.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 {
		t.Fatalf("signature manifest %+v", m)
	}
	l := m.Layers[0]
	if l.MediaType != SimpleSigningMediaType || l.Annotations[SignatureAnnotation] == "" {
		t.Fatalf("signature layer %+v", l)
	}
	if _, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation]); err != nil {
		t.Fatal(err)
	}
	layers, _ := sigImg.Layers()
	rc, _ := layers[0].Uncompressed()
	var p struct {
		Critical struct {
			Identity map[string]string `json:"identity"`
			Image    map[string]string `json:"image"`
			Type     string            `json:"type"`
		} `json:"critical"`
	}
	if err := json.NewDecoder(rc).Decode(&p); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	crit := p.Critical
	if crit.Identity["docker-reference"] != host+"/acme/etcd-bundle" || crit.Image["docker-manifest-digest"] != d.DigestStr() || crit.Type != CosignSignatureType {
		t.Errorf("payload critical = %v", crit)
	}
	attImg, err := remote.Image(d.Context().Tag("sha256-"+hexd+".att"), reg.RemoteOptions(ctx)...)
	if err != nil {
		t.Fatal(err)
	}
	am, _ := attImg.Manifest()
	if len(am.Layers) != 1 || am.Layers[0].MediaType != DSSEMediaType || am.Layers[0].Annotations[PredicateTypeAnnotation] != SLSAProvenanceV1 {
		t.Fatalf("attestation manifest %+v", am)
	}
}

func TestSignAppendsAndIsIdempotent(t *testing.T) {
	host, reg := testRegistry(t)
	ctx := testCtx(t)
	key, _ := newKey(t)
	other, _ := newKey(t)
	image := pushImage(t, reg, host+"/acme/b:v1")
	s := NewSigner(key, reg, nil)

	// Another signer's signature is there first: it is kept.
	if _, err := NewSigner(other, reg, nil).Sign(ctx, Request{Image: image}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Sign(ctx, Request{Image: image, Identities: []string{host + "/acme/b:v1"}})
	if err != nil || res.Added != 1 {
		t.Fatalf("first sign: %+v, %v", res, err)
	}
	res, err = s.Sign(ctx, Request{Image: image, Identities: []string{host + "/acme/b:v1"}})
	if err != nil || res.Added != 0 {
		t.Fatalf("signing again added %+v (%v); want nothing added", res, err)
	}
	res, err = s.Sign(ctx, Request{Image: image, Identities: []string{host + "/acme/b:latest"}})
	if err != nil || res.Added != 1 {
		t.Fatalf("a new identity: %+v, %v", res, err)
	}
	for _, k := range []*Key{key, other} {
		v, err := Verify(ctx, reg, k.Verifier(), image, VerifyOptions{})
		if err != nil {
			t.Fatalf("key %s: %v", k, err)
		}
		if n := len(v.Manifests[0].Identities); (k == key && n != 2) || (k == other && n != 1) {
			t.Errorf("key %s: identities %v", k, v.Manifests[0].Identities)
		}
	}
}

func TestSignRefusesTagsAndForeignIdentities(t *testing.T) {
	host, reg := testRegistry(t)
	ctx := testCtx(t)
	key, _ := newKey(t)
	image := pushImage(t, reg, host+"/acme/b:v1")
	s := NewSigner(key, reg, nil)
	if _, err := s.Sign(ctx, Request{Image: host + "/acme/b:v1"}); err == nil || !strings.Contains(err.Error(), "not a reference by digest") {
		t.Errorf("signing a tag: %v", err)
	}
	if _, err := s.Sign(ctx, Request{Image: image, Identities: []string{host + "/other/b:v1"}}); err == nil || !strings.Contains(err.Error(), "not in the image's repository") {
		t.Errorf("a foreign identity: %v", err)
	}
	bad := testProvenance("")
	bad.Commit = "main"
	if _, err := s.Sign(ctx, Request{Image: image, Provenance: bad}); err == nil || !strings.Contains(err.Error(), "not a full hex commit id") {
		t.Errorf("a bad commit: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	host, reg := testRegistry(t)
	ctx := testCtx(t)
	key, _ := newKey(t)
	other, _ := newKey(t)
	image := pushImage(t, reg, host+"/acme/b:v1")
	s := NewSigner(key, reg, nil)
	if _, err := s.Sign(ctx, Request{Image: image, Provenance: testProvenance("")}); err != nil {
		t.Fatal(err)
	}
	d := mustDigest(t, image)

	t.Run("unsigned", func(t *testing.T) {
		unsigned := pushImage(t, reg, host+"/acme/b:v2")
		_, err := Verify(ctx, reg, key.Verifier(), unsigned, VerifyOptions{})
		if !errors.Is(err, ErrNotSigned) {
			t.Errorf("err = %v, want ErrNotSigned", err)
		}
	})
	t.Run("another key", func(t *testing.T) {
		v, err := Verify(ctx, reg, other.Verifier(), image, VerifyOptions{RequireAttestation: true})
		if !errors.Is(err, ErrNotSigned) || !errors.Is(err, ErrNoAttestation) || len(v.Manifests[0].Rejected) != 2 {
			t.Errorf("err = %v, rejected %v", err, v.Manifests[0].Rejected)
		}
	})
	t.Run("copied to another repository with its signature", func(t *testing.T) {
		copyWithAttachments(t, reg, d, host+"/mirror/b")
		copied := host + "/mirror/b@" + d.DigestStr()
		v, err := Verify(ctx, reg, key.Verifier(), copied, VerifyOptions{})
		if !errors.Is(err, ErrNotSigned) || !strings.Contains(strings.Join(v.Manifests[0].Rejected, "\n"), "copied from elsewhere") {
			t.Errorf("err = %v, rejected %v", err, v.Manifests[0].Rejected)
		}
		if _, err := Verify(ctx, reg, key.Verifier(), copied, VerifyOptions{AnyRepository: true}); err != nil {
			t.Errorf("AnyRepository: %v", err)
		}
	})
	t.Run("payload changed", func(t *testing.T) {
		// The layer keeps its signature, but its payload names another digest.
		victim := mustDigest(t, pushImage(t, reg, host+"/acme/b:v3"))
		sigs := readLayers(t, reg, d, "sig")
		forged := strings.Replace(string(sigs[0].content), d.DigestStr(), victim.DigestStr(), 1)
		writeLayers(t, reg, victim, "sig", attachment{content: []byte(forged), mediaType: SimpleSigningMediaType, annotations: sigs[0].annotations})
		v, err := Verify(ctx, reg, key.Verifier(), victim.String(), VerifyOptions{})
		if !errors.Is(err, ErrNotSigned) || !strings.Contains(v.Manifests[0].Rejected[0], "does not verify") {
			t.Errorf("err = %v, rejected %v", err, v.Manifests[0].Rejected)
		}
	})
	t.Run("signature of another image replayed", func(t *testing.T) {
		victim := mustDigest(t, pushImage(t, reg, host+"/acme/b:v4"))
		sigs := readLayers(t, reg, d, "sig")
		writeLayers(t, reg, victim, "sig", attachment{content: sigs[0].content, mediaType: SimpleSigningMediaType, annotations: sigs[0].annotations})
		atts := readLayers(t, reg, d, "att")
		writeLayers(t, reg, victim, "att", attachment{content: atts[0].content, mediaType: DSSEMediaType, annotations: atts[0].annotations})
		v, err := Verify(ctx, reg, key.Verifier(), victim.String(), VerifyOptions{RequireAttestation: true})
		rej := strings.Join(v.Manifests[0].Rejected, "\n")
		if !errors.Is(err, ErrNotSigned) || !errors.Is(err, ErrNoAttestation) || !strings.Contains(rej, "the signature is for") || !strings.Contains(rej, "not about") {
			t.Errorf("err = %v, rejected %v", err, rej)
		}
	})
	t.Run("attestation changed", func(t *testing.T) {
		victim := mustDigest(t, pushImage(t, reg, host+"/acme/b:v5"))
		if _, err := s.Sign(ctx, Request{Image: victim.String()}); err != nil {
			t.Fatal(err)
		}
		atts := readLayers(t, reg, d, "att")
		var env map[string]any
		if err := json.Unmarshal(atts[0].content, &env); err != nil {
			t.Fatal(err)
		}
		body, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
		env["payload"] = base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(body), d.DigestStr()[7:], victim.DigestStr()[7:])))
		b, _ := json.Marshal(env)
		writeLayers(t, reg, victim, "att", attachment{content: b, mediaType: DSSEMediaType, annotations: atts[0].annotations})
		v, err := Verify(ctx, reg, key.Verifier(), victim.String(), VerifyOptions{RequireAttestation: true})
		if !errors.Is(err, ErrNoAttestation) || errors.Is(err, ErrNotSigned) || !strings.Contains(strings.Join(v.Manifests[0].Rejected, "\n"), "envelope does not verify") {
			t.Errorf("err = %v, rejected %v", err, v.Manifests[0].Rejected)
		}
	})
}

// readLayers reads the attachment layers of d.
func readLayers(t *testing.T, reg interface{ RemoteOptions(ctxT) []remote.Option }, d digestT, suffix string) []existingLayer {
	t.Helper()
	tag, _ := attachmentTag(d.Context(), d, suffix)
	_, layers, err := readAttachments(testCtx(t), tag, reg.RemoteOptions(testCtx(t)))
	if err != nil {
		t.Fatal(err)
	}
	return layers
}

// writeLayers writes an attachment image holding exactly atts for d, as a forger with push rights would.
func writeLayers(t *testing.T, reg interface{ RemoteOptions(ctxT) []remote.Option }, d digestT, suffix string, atts ...attachment) {
	t.Helper()
	img := emptyAttachments()
	for _, a := range atts {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(a.content, a.mediaType), Annotations: a.annotations, MediaType: a.mediaType})
		if err != nil {
			t.Fatal(err)
		}
	}
	tag, _ := attachmentTag(d.Context(), d, suffix)
	if err := remote.Write(tag, img, reg.RemoteOptions(testCtx(t))...); err != nil {
		t.Fatal(err)
	}
}

// copyWithAttachments copies the image d and its .sig and .att images to repo, as cosign copy does.
func copyWithAttachments(t *testing.T, reg interface{ RemoteOptions(ctxT) []remote.Option }, d digestT, repo string) {
	t.Helper()
	opts := reg.RemoteOptions(testCtx(t))
	img, err := remote.Image(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	dst := mustDigest(t, repo+"@"+d.DigestStr())
	if err := remote.Write(dst, img, opts...); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"sig", "att"} {
		from, _ := attachmentTag(d.Context(), d, suffix)
		to, _ := attachmentTag(dst.Context(), dst, suffix)
		a, err := remote.Image(from, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(to, a, opts...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentSignsKeepEverySignature: signs of one image from many goroutines of one Signer are
// serialised per attachment image, so every identity's signature is kept.
func TestConcurrentSignsKeepEverySignature(t *testing.T) {
	host, reg := testRegistry(t)
	ctx := testCtx(t)
	key, _ := newKey(t)
	image := pushImage(t, reg, host+"/acme/b:v1")
	s := NewSigner(key, reg, nil)
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, err := s.Sign(ctx, Request{Image: image, Identities: []string{fmt.Sprintf("%s/acme/b:t%d", host, i)}})
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	v, err := Verify(ctx, reg, key.Verifier(), image, VerifyOptions{})
	if err != nil || len(v.Manifests[0].Identities) != n {
		t.Fatalf("after %d concurrent signs: %v identities, %v", n, v.Manifests[0].Identities, err)
	}
}
