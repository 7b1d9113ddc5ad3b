package sign

import (
	"encoding/json"
	"strings"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// On a registry that answers the referrers API, the index and each platform manifest get their signature and
// attestation images once more as OCI 1.1 referrers (subject the manifest, cosign's artifact types, the same
// layers as the .sig/.att tags). On one that does not,
// only the tags are written — and no referrers tag schema (a plain sha256-<hex> tag).
func TestReferrersWhereTheRegistryKeepsThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ggcr.Option
		want int
	}{{"referrers API", []ggcr.Option{ggcr.WithReferrersSupport(true)}, 6}, {"no referrers API", nil, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			host, reg := testRegistry(t, tc.opts...)
			key, _ := newKey(t)
			ctx := testCtx(t)
			image, plats := pushIndex(t, reg, host+"/acme/catalog:v1")
			s := NewSigner(key, reg, nil)
			res, err := s.Sign(ctx, Request{Image: image, Provenance: testProvenance("")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Referrers != tc.want {
				t.Fatalf("%d referrers written, want %d", res.Referrers, tc.want)
			}
			top := mustDigest(t, image)
			tags, err := remote.List(top.Context(), reg.RemoteOptions(ctx)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, tag := range tags {
				if strings.HasPrefix(tag, "sha256-") && !strings.HasSuffix(tag, ".sig") && !strings.HasSuffix(tag, ".att") {
					t.Errorf("a referrers tag schema tag was written: %s", tag)
				}
			}
			if tc.want == 0 {
				return
			}
			for _, d := range append([]string{top.DigestStr()}, plats...) {
				subject := top.Context().Digest(d)
				idx, err := remote.Referrers(subject, reg.RemoteOptions(ctx)...)
				if err != nil {
					t.Fatal(err)
				}
				im, _ := idx.IndexManifest()
				byType := map[string]v1.Descriptor{}
				for _, m := range im.Manifests {
					byType[m.ArtifactType] = m
				}
				if len(im.Manifests) != 2 || byType[SignatureArtifactType].Digest.Hex == "" || byType[AttestationArtifactType].Digest.Hex == "" {
					t.Fatalf("referrers of %s: %+v", d, im.Manifests)
				}
				for suffix, at := range map[string]string{"sig": SignatureArtifactType, "att": AttestationArtifactType} {
					raw, err := remote.Get(top.Context().Digest(byType[at].Digest.String()), reg.RemoteOptions(ctx)...)
					if err != nil {
						t.Fatal(err)
					}
					var m referrerManifest
					if err := json.Unmarshal(raw.Manifest, &m); err != nil {
						t.Fatal(err)
					}
					if m.Subject == nil || m.Subject.Digest.String() != d || m.ArtifactType != at || string(m.Config.MediaType) != at {
						t.Errorf("%s referrer of %s: subject %+v, artifactType %q, config %q", suffix, d, m.Subject, m.ArtifactType, m.Config.MediaType)
					}
					tag, _ := attachmentTag(top.Context(), subject, suffix)
					att, err := remote.Image(tag, reg.RemoteOptions(ctx)...)
					if err != nil {
						t.Fatal(err)
					}
					am, _ := att.Manifest()
					if len(am.Layers) == 0 || len(m.Layers) != len(am.Layers) || m.Layers[0].Digest != am.Layers[0].Digest || m.Layers[0].Annotations[SignatureAnnotation] != am.Layers[0].Annotations[SignatureAnnotation] {
						t.Errorf("%s referrer of %s does not hold the layers of %s", suffix, d, tag)
					}
				}
			}
		})
	}
}

// Signing an image again with the same key adds no signature, so its signature referrer stays the one there
// was; the referrers API then lists one signature referrer per manifest.
func TestReferrersOfASecondSignature(t *testing.T) {
	host, reg := testRegistry(t, ggcr.WithReferrersSupport(true))
	key, _ := newKey(t)
	ctx := testCtx(t)
	image := pushImage(t, reg, host+"/acme/bundle:v1")
	for i := 0; i < 2; i++ {
		if _, err := NewSigner(key, reg, nil).Sign(ctx, Request{Image: image}); err != nil {
			t.Fatal(err)
		}
	}
	sigs := 0
	idx, err := remote.Referrers(mustDigest(t, image), reg.RemoteOptions(ctx)...)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	for _, m := range im.Manifests {
		if m.ArtifactType == SignatureArtifactType {
			sigs++
		}
		if m.ArtifactType == AttestationArtifactType {
			t.Errorf("an attestation referrer without an attestation: %+v", m)
		}
	}
	if sigs != 1 {
		t.Errorf("%d signature referrers, want 1: %+v", sigs, im.Manifests)
	}
}
