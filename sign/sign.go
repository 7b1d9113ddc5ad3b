package sign

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/catalogbot/catalogbot/registry"
)

// maxPlatforms bounds the platform manifests of one index that are signed.
const maxPlatforms = 64

// Signer signs pushed images with one key, through one registry client. It is safe for concurrent use;
// appends to one image's attachments are serialised within a Signer. Registries have no compare-and-swap on
// tags, so a writer elsewhere is caught only when it replaces the attachment image between this write and its
// read-back (the append is then made again on top); two processes that each read, write and confirm before
// the other writes can still lose one signature, as two cosign runs can. Sign one repository's images from
// one place (the App does it under its rebuild lease).
type Signer struct {
	key    *Key
	reg    *registry.Client
	logger *slog.Logger
	locks  sync.Map // attachment tag -> *sync.Mutex
}

// NewSigner returns a Signer using key and reg. logger may be nil.
func NewSigner(key *Key, reg *registry.Client, logger *slog.Logger) *Signer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Signer{key: key, reg: reg, logger: logger}
}

// Request is one image to sign.
type Request struct {
	// Image is the pushed image or index, by digest: registry/repository@sha256:<hex>.
	Image string
	// Identities are the references the signatures claim (critical.identity.docker-reference), one
	// signature each: the tags about to name the image (registry/repository:tag), so that a policy
	// requiring the exact tag (containers/image's default matchRepoDigestOrExact) accepts a pull by tag.
	// Empty: one signature claiming the repository, as cosign does. Each must be in Image's repository.
	Identities []string
	// Provenance, when set, is attested (an in-toto SLSA provenance v1 statement in a DSSE envelope).
	Provenance *Provenance
}

// Result says what Sign attached.
type Result struct {
	// Signed are the manifests signed: the image or index first, then each platform manifest.
	Signed []string
	// Added counts the signature layers added; signatures already there (the same payload, valid under
	// this key) are not added again.
	Added int
	// Attested says whether an attestation was attached to each signed manifest.
	Attested bool
	// Referrers counts the OCI 1.1 referrers written (the signature and attestation of each manifest
	// again, subject the manifest); 0 where the registry does not answer the referrers API.
	Referrers int
}

// Sign signs req.Image (and, for an index, each platform manifest) and attaches the attestation. It never
// moves a tag that names the image: sign by digest first, then tag. A partial failure leaves the signatures
// already written (they sign the same content) and returns an error.
func (s *Signer) Sign(ctx context.Context, req Request) (*Result, error) {
	ref, err := s.reg.Reference(req.Image)
	if err != nil {
		return nil, err
	}
	top, ok := ref.(name.Digest)
	if !ok {
		return nil, fmt.Errorf("sign: %s is not a reference by digest; sign the pushed digest, then move the tag", req.Image)
	}
	repo := top.Context()
	identities, err := claimedIdentities(repo, req.Identities)
	if err != nil {
		return nil, err
	}
	digests, err := s.manifests(ctx, top)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, d := range digests {
		n, err := s.signOne(ctx, d, identities)
		if err != nil {
			return res, err
		}
		res.Signed = append(res.Signed, d.String())
		res.Added += n
	}
	if req.Provenance != nil {
		env, err := s.attestation(ctx, req.Provenance, digests)
		if err != nil {
			return res, err
		}
		for _, d := range digests {
			if _, err := s.attach(ctx, d, "att", []attachment{{content: env, mediaType: DSSEMediaType, annotations: map[string]string{
				SignatureAnnotation: "", PredicateTypeAnnotation: SLSAProvenanceV1,
			}}}); err != nil {
				return res, err
			}
		}
		res.Attested = true
	}
	n, err := s.referrers(ctx, digests, res.Attested)
	res.Referrers = n
	if err != nil {
		return res, err
	}
	s.logger.Debug("signed image", "image", top.String(), "manifests", len(res.Signed), "added", res.Added, "attested", res.Attested, "referrers", res.Referrers, "key", s.key.Fingerprint())
	return res, nil
}

// claimedIdentities checks and normalises the identities; none means the repository.
func claimedIdentities(repo name.Repository, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return []string{dockerReference(repo.Name())}, nil
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		r, err := name.ParseReference(id, name.StrictValidation)
		if err != nil {
			if rr, rerr := name.NewRepository(id, name.StrictValidation); rerr == nil {
				r = rr.Tag("")
				if rr.Name() != repo.Name() {
					return nil, fmt.Errorf("sign: identity %s is not in the image's repository %s", id, repo.Name())
				}
				out = append(out, dockerReference(rr.Name()))
				continue
			}
			return nil, fmt.Errorf("sign: identity %q is not registry/repository[:tag]: %v", id, err)
		}
		t, ok := r.(name.Tag)
		if !ok {
			return nil, fmt.Errorf("sign: identity %s must be a tag or a repository, not a digest", id)
		}
		if t.Context().Name() != repo.Name() {
			return nil, fmt.Errorf("sign: identity %s is not in the image's repository %s", id, repo.Name())
		}
		out = append(out, dockerReference(t.Context().Name())+":"+t.TagStr())
	}
	return out, nil
}

// dockerReference writes a repository name as containers/image reads it: Docker Hub as docker.io.
func dockerReference(repo string) string {
	if rest, ok := strings.CutPrefix(repo, name.DefaultRegistry+"/"); ok {
		return "docker.io/" + rest
	}
	return repo
}

// manifests is top, then, when top is an index, each manifest it lists.
func (s *Signer) manifests(ctx context.Context, top name.Digest) ([]name.Digest, error) {
	desc, err := remote.Get(top, s.reg.RemoteOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("sign: reading %s: %w", top, err)
	}
	if desc.Digest.String() != top.DigestStr() {
		return nil, fmt.Errorf("sign: the registry answered %s for %s", desc.Digest, top)
	}
	out := []name.Digest{top}
	if !desc.MediaType.IsIndex() {
		return out, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("sign: reading the index %s: %w", top, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("sign: reading the index %s: %w", top, err)
	}
	if len(im.Manifests) > maxPlatforms {
		return nil, fmt.Errorf("sign: the index %s lists %d manifests; at most %d are signed", top, len(im.Manifests), maxPlatforms)
	}
	for _, m := range im.Manifests {
		out = append(out, top.Context().Digest(m.Digest.String()))
	}
	return out, nil
}

// signOne appends one signature per identity to d's .sig image.
func (s *Signer) signOne(ctx context.Context, d name.Digest, identities []string) (int, error) {
	var atts []attachment
	for _, id := range identities {
		p, err := simpleSigning(id, d)
		if err != nil {
			return 0, err
		}
		sig, err := s.key.sv.SignMessage(strings.NewReader(string(p)))
		if err != nil {
			return 0, fmt.Errorf("sign: signing %s: %w", d, err)
		}
		atts = append(atts, attachment{
			content: p, mediaType: SimpleSigningMediaType,
			annotations: map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)},
			// ECDSA signatures differ each time: a layer with this payload that this key signed is the same.
			same: func(e existingLayer) bool {
				return e.mediaType == SimpleSigningMediaType && bytes.Equal(e.content, p) && s.key.Verifier().verifyLayer(e) == nil
			},
		})
	}
	return s.attach(ctx, d, "sig", atts)
}

// attestation is the DSSE envelope of p's statement about digests, signed with the key.
func (s *Signer) attestation(ctx context.Context, p *Provenance, digests []name.Digest) ([]byte, error) {
	st, err := p.statement(digests)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	es, err := dsse.NewEnvelopeSigner(dsseKey{s.key})
	if err != nil {
		return nil, err
	}
	env, err := es.SignPayload(ctx, InTotoPayloadType, st)
	if err != nil {
		return nil, fmt.Errorf("sign: signing the attestation: %w", err)
	}
	return json.Marshal(env)
}

// dsseKey adapts a Key to the DSSE library. The key id is left empty, as cosign leaves it.
type dsseKey struct{ k *Key }

func (d dsseKey) Sign(_ context.Context, data []byte) ([]byte, error) {
	return d.k.sv.SignMessage(strings.NewReader(string(data)))
}
func (dsseKey) KeyID() (string, error) { return "", nil }
