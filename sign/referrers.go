package sign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The artifact types of the referrers Sign writes: cosign's names for its signature and attestation
// attachments in OCI 1.1 mode (its verify --experimental-oci11 looks signatures up by the first).
const (
	SignatureArtifactType   = "application/vnd.dev.cosign.artifact.sig.v1+json"
	AttestationArtifactType = "application/vnd.dev.cosign.artifact.att.v1+json"
)

// referrerManifest is an OCI 1.1 image manifest with the artifactType field go-containerregistry's
// v1.Manifest lacks.
type referrerManifest struct {
	v1.Manifest
	ArtifactType string `json:"artifactType,omitempty"`
}

// rawManifest is a manifest to PUT as it is.
type rawManifest struct {
	raw []byte
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// referrers attaches, when the registry answers the OCI 1.1 referrers API, each digest's signature image
// (and attestation image when attested) once more as a referrer of it: the same config and layers, the
// artifact type in artifactType and config.mediaType, subject the signed manifest. The sha256-<hex>.sig and
// .att tags stay what every client reads; a registry without the API gets those only (and no referrers tag
// schema: that would be a third tag to keep). It returns how many referrers it wrote.
func (s *Signer) referrers(ctx context.Context, digests []name.Digest, attested bool) (int, error) {
	ok, err := s.reg.ReferrersSupported(ctx, digests[0])
	if err != nil {
		return 0, fmt.Errorf("sign: asking whether the registry keeps referrers: %w", err)
	}
	if !ok {
		return 0, nil
	}
	kinds := []struct{ suffix, artifactType string }{{"sig", SignatureArtifactType}}
	if attested {
		kinds = append(kinds, struct{ suffix, artifactType string }{"att", AttestationArtifactType})
	}
	n := 0
	for _, d := range digests {
		subject, err := remote.Head(d, s.reg.RemoteOptions(ctx)...)
		if err != nil {
			return n, fmt.Errorf("sign: reading %s: %w", d, err)
		}
		for _, k := range kinds {
			if err := s.writeReferrer(ctx, d, subject, k.suffix, k.artifactType); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// writeReferrer writes the attachment image of d at its .suffix tag again, by digest, as a referrer of d.
func (s *Signer) writeReferrer(ctx context.Context, d name.Digest, subject *v1.Descriptor, suffix, artifactType string) error {
	tag, err := attachmentTag(d.Context(), d, suffix)
	if err != nil {
		return err
	}
	img, err := remote.Image(tag, s.reg.RemoteOptions(ctx)...)
	if err != nil {
		return fmt.Errorf("sign: reading %s: %w", tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("sign: reading %s: %w", tag, err)
	}
	rm := referrerManifest{Manifest: *m, ArtifactType: artifactType}
	rm.MediaType = types.OCIManifestSchema1
	rm.Config.MediaType = types.MediaType(artifactType)
	rm.Subject = &v1.Descriptor{MediaType: subject.MediaType, Size: subject.Size, Digest: subject.Digest}
	raw, err := json.Marshal(rm)
	if err != nil {
		return err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	// The config and layers are in the repository already (the attachment image holds them).
	if err := remote.Put(d.Context().Digest(h.String()), rawManifest{raw: raw}, s.reg.RemoteOptions(ctx)...); err != nil {
		return fmt.Errorf("sign: writing the %s referrer of %s: %w", suffix, d, err)
	}
	return nil
}
