package sign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/catalogbot/catalogbot/registry"
)

// ErrNotSigned: a manifest has no signature that verifies under the key (and, unless allowed, claims the
// image's repository).
var ErrNotSigned = errors.New("no valid signature")

// ErrNoAttestation: a manifest has no provenance attestation that verifies under the key.
var ErrNoAttestation = errors.New("no valid provenance attestation")

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// AnyRepository accepts a signature whose identity names another repository. By default it is refused,
	// as containers/image refuses it: a signed image copied elsewhere is not what was signed.
	AnyRepository bool
	// RequireAttestation makes a manifest without a valid provenance attestation an error.
	RequireAttestation bool
}

// Verification is what Verify found, manifest by manifest.
type Verification struct {
	// Image is the image verified, by digest.
	Image     string
	Manifests []ManifestVerification
}

// ManifestVerification is the verified attachments of one manifest (the image or index, then each platform).
type ManifestVerification struct {
	Digest string
	// Identities are the docker-references the valid signatures claim.
	Identities []string
	// Statements are the valid attestations' contents.
	Statements []*Statement
	// Rejected says why each layer that did not verify was set aside.
	Rejected []string
}

// Verify checks the signatures (and attestations) of image — a tag is resolved to its digest first — and,
// when it is an index, of each platform manifest, against pub. It returns an error wrapping ErrNotSigned
// when any manifest has no valid signature, and ErrNoAttestation when an attestation is required and
// missing; the Verification says what was found either way.
func Verify(ctx context.Context, reg *registry.Client, pub *PublicKey, image string, o VerifyOptions) (*Verification, error) {
	ref, err := reg.Reference(image)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Get(ref, reg.RemoteOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("verify: reading %s: %w", image, err)
	}
	top := ref.Context().Digest(desc.Digest.String())
	if d, ok := ref.(name.Digest); ok && d.DigestStr() != desc.Digest.String() {
		return nil, fmt.Errorf("verify: the registry answered %s for %s", desc.Digest, image)
	}
	s := &Signer{reg: reg}
	digests, err := s.manifests(ctx, top)
	if err != nil {
		return nil, err
	}
	out := &Verification{Image: top.String()}
	var errs []error
	opts := reg.RemoteOptions(ctx)
	for _, d := range digests {
		mv := ManifestVerification{Digest: d.DigestStr()}
		sigTag, _ := attachmentTag(d.Context(), d, "sig")
		_, layers, err := readAttachments(ctx, sigTag, opts)
		if err != nil {
			return out, fmt.Errorf("verify: %w", err)
		}
		for i, l := range layers {
			id, err := pub.verifySignature(l, d, o.AnyRepository)
			if err != nil {
				mv.Rejected = append(mv.Rejected, fmt.Sprintf("%s layer %d: %v", sigTag.TagStr(), i, err))
				continue
			}
			mv.Identities = append(mv.Identities, id)
		}
		if len(mv.Identities) == 0 {
			errs = append(errs, fmt.Errorf("%s: %w under key %s", d, ErrNotSigned, pub.Fingerprint()))
		}
		attTag, _ := attachmentTag(d.Context(), d, "att")
		_, layers, err = readAttachments(ctx, attTag, opts)
		if err != nil {
			return out, fmt.Errorf("verify: %w", err)
		}
		for i, l := range layers {
			st, err := pub.verifyAttestation(ctx, l, d)
			if err != nil {
				mv.Rejected = append(mv.Rejected, fmt.Sprintf("%s layer %d: %v", attTag.TagStr(), i, err))
				continue
			}
			mv.Statements = append(mv.Statements, st)
		}
		if o.RequireAttestation && len(mv.Statements) == 0 {
			errs = append(errs, fmt.Errorf("%s: %w under key %s", d, ErrNoAttestation, pub.Fingerprint()))
		}
		out.Manifests = append(out.Manifests, mv)
	}
	return out, errors.Join(errs...)
}

// verifyLayer checks a signature layer's signature over its content.
func (p *PublicKey) verifyLayer(l existingLayer) error {
	if l.mediaType != SimpleSigningMediaType {
		return fmt.Errorf("media type %s is not %s", l.mediaType, SimpleSigningMediaType)
	}
	if l.content == nil {
		return fmt.Errorf("the payload is larger than %d bytes", maxPayloadBytes)
	}
	b64, ok := l.annotations[SignatureAnnotation]
	if !ok || b64 == "" {
		return fmt.Errorf("no %s annotation", SignatureAnnotation)
	}
	sig, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("the signature annotation is not base64: %v", err)
	}
	v, err := p.verifier()
	if err != nil {
		return err
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(l.content)); err != nil {
		return fmt.Errorf("the signature does not verify under key %s", p.Fingerprint())
	}
	return nil
}

// verifySignature checks a signature layer against the manifest d and returns the identity it claims.
func (p *PublicKey) verifySignature(l existingLayer, d name.Digest, anyRepo bool) (string, error) {
	if err := p.verifyLayer(l); err != nil {
		return "", err
	}
	pl, err := parseSimpleSigning(l.content)
	if err != nil {
		return "", err
	}
	if pl.Digest != d.DigestStr() {
		return "", fmt.Errorf("the signature is for %s, not %s", pl.Digest, d.DigestStr())
	}
	if !anyRepo {
		repo := pl.Identity
		if r, err := name.ParseReference(pl.Identity, name.StrictValidation); err == nil {
			repo = r.Context().Name()
		} else if r, err := name.NewRepository(pl.Identity, name.StrictValidation); err == nil {
			repo = r.Name()
		}
		if dockerReference(repo) != dockerReference(d.Context().Name()) {
			return "", fmt.Errorf("the signature claims %s, not an image of %s (copied from elsewhere?)", pl.Identity, dockerReference(d.Context().Name()))
		}
	}
	return pl.Identity, nil
}

// verifyAttestation checks an attestation layer: a DSSE envelope signed by the key, holding an in-toto
// statement about d.
func (p *PublicKey) verifyAttestation(ctx context.Context, l existingLayer, d name.Digest) (*Statement, error) {
	if l.mediaType != DSSEMediaType {
		return nil, fmt.Errorf("media type %s is not %s", l.mediaType, DSSEMediaType)
	}
	if l.content == nil {
		return nil, fmt.Errorf("the envelope is larger than %d bytes", maxEnvelopeBytes)
	}
	var env dsse.Envelope
	if err := json.Unmarshal(l.content, &env); err != nil {
		return nil, fmt.Errorf("not a DSSE envelope: %v", err)
	}
	if env.PayloadType != InTotoPayloadType {
		return nil, fmt.Errorf("payload type %q is not %s", env.PayloadType, InTotoPayloadType)
	}
	ev, err := dsse.NewEnvelopeVerifier(dsseVerifier{p})
	if err != nil {
		return nil, err
	}
	if _, err := ev.Verify(ctx, &env); err != nil {
		return nil, fmt.Errorf("the envelope does not verify under key %s", p.Fingerprint())
	}
	body, err := env.DecodeB64Payload()
	if err != nil {
		return nil, err
	}
	st, err := parseStatement(body)
	if err != nil {
		return nil, err
	}
	if want := l.annotations[PredicateTypeAnnotation]; want != st.PredicateType {
		return nil, fmt.Errorf("the layer says predicate type %q, the statement %q", want, st.PredicateType)
	}
	for _, s := range st.Subjects {
		if strings.HasSuffix(s, "@"+d.DigestStr()) {
			return st, nil
		}
	}
	return nil, fmt.Errorf("the statement is not about %s (subjects: %s)", d.DigestStr(), strings.Join(st.Subjects, ", "))
}

// dsseVerifier adapts a PublicKey to the DSSE library.
type dsseVerifier struct{ p *PublicKey }

func (d dsseVerifier) Verify(_ context.Context, data, sig []byte) error {
	v, err := d.p.verifier()
	if err != nil {
		return err
	}
	return v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(data))
}
func (dsseVerifier) KeyID() (string, error)     { return "", nil }
func (d dsseVerifier) Public() crypto.PublicKey { return d.p.pub }
