package sign

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Media types and annotations of cosign's attachments.
const (
	// SimpleSigningMediaType is the media type of a signature layer: its content is the signed payload.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// DSSEMediaType is the media type of an attestation layer: its content is a DSSE envelope.
	DSSEMediaType = "application/vnd.dsse.envelope.v1+json"
	// SignatureAnnotation holds a signature layer's base64 signature (empty on attestation layers).
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// PredicateTypeAnnotation names an attestation layer's predicate type.
	PredicateTypeAnnotation = "predicateType"
	// CosignSignatureType is the value of critical.type in a simple-signing payload.
	CosignSignatureType = payload.CosignSignatureType
)

// Bounds of what is read back from a registry.
const (
	maxPayloadBytes  = 64 << 10 // one simple-signing payload
	maxEnvelopeBytes = 4 << 20  // one DSSE envelope (the statement with its approvals and check runs)
	maxLayers        = 512      // signatures or attestations attached to one image
)

// simpleSigning builds the payload cosign signs for the image digest d, claiming identity (a repository, or
// a repository:tag).
func simpleSigning(identity string, d name.Digest) ([]byte, error) {
	return json.Marshal(payload.Cosign{Image: d, ClaimedIdentity: identity})
}

// parsedPayload is what a verified simple-signing payload says.
type parsedPayload struct {
	Identity string // critical.identity.docker-reference
	Digest   string // critical.image.docker-manifest-digest
}

// parseSimpleSigning reads a payload strictly: the fields containers/image and cosign read must be there
// and well formed. Unknown fields are refused in "critical", as the format asks.
func parseSimpleSigning(b []byte) (parsedPayload, error) {
	if len(b) > maxPayloadBytes {
		return parsedPayload{}, fmt.Errorf("the payload is %d bytes; at most %d are read", len(b), maxPayloadBytes)
	}
	var doc struct {
		Critical json.RawMessage `json:"critical"`
		Optional json.RawMessage `json:"optional"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return parsedPayload{}, fmt.Errorf("the payload is not JSON: %v", err)
	}
	if doc.Critical == nil {
		return parsedPayload{}, fmt.Errorf("the payload has no critical section")
	}
	var crit payload.Critical
	dec := json.NewDecoder(bytes.NewReader(doc.Critical))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&crit); err != nil {
		return parsedPayload{}, fmt.Errorf("the payload's critical section: %v", err)
	}
	if crit.Type != CosignSignatureType {
		return parsedPayload{}, fmt.Errorf("critical.type is %q, not %q", crit.Type, CosignSignatureType)
	}
	if hexd, ok := strings.CutPrefix(crit.Image.DockerManifestDigest, "sha256:"); !ok || !isHex(hexd, 64) {
		return parsedPayload{}, fmt.Errorf("critical.image.docker-manifest-digest %q is not sha256:<64 hex>", crit.Image.DockerManifestDigest)
	}
	if crit.Identity.DockerReference == "" {
		return parsedPayload{}, fmt.Errorf("critical.identity.docker-reference is empty")
	}
	return parsedPayload{Identity: crit.Identity.DockerReference, Digest: crit.Image.DockerManifestDigest}, nil
}

// digestOf is "sha256:<hex>" of b.
func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// attachmentTag is the tag cosign keeps an image's attachments under: sha256-<hex>.sig or .att.
func attachmentTag(repo name.Repository, d name.Digest, suffix string) (name.Tag, error) {
	alg, hexd, ok := strings.Cut(d.DigestStr(), ":")
	if !ok {
		return name.Tag{}, fmt.Errorf("digest %q has no algorithm", d.DigestStr())
	}
	return repo.Tag(alg + "-" + hexd + "." + suffix), nil
}
