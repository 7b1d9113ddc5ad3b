package sign

import (
	"context"
	"errors"
	"fmt"

	"github.com/catalogbot/catalogbot/registry"
)

// Publication is one built image to push under its tags, signed first when there is a Signer. The caller
// says how content and tags are written (an index or an image, a tag that may move or one written once);
// Publish owns the order.
type Publication struct {
	// Digest is the content's digest, sha256:<hex>.
	Digest string
	// Tags are the references to write, in order: registry/repository:tag, all in one repository. The
	// signatures claim them (Request.Identities).
	Tags []string
	// WriteOnce: a tag that already names other content is refused, with a *registry.TagTakenError,
	// before anything is written or signed. (WriteTag must still refuse it itself: a tag can be written
	// between this look-up and the tag's write.)
	WriteOnce bool
	// WriteContent writes the content to ref, the reference by digest in the tags' repository.
	WriteContent func(ctx context.Context, ref string) error
	// Signed, when set, is called after the content is signed and before the first tag is written.
	Signed func(ctx context.Context, byDigest string, res *Result) error
	// WriteTag writes one tag.
	WriteTag func(ctx context.Context, ref string) error
	// Provenance, when set, is called once the content is written and before it is signed; nil (or a nil
	// statement) attests nothing.
	Provenance func(ctx context.Context) *Provenance
}

// SigningError is a failed signature or attestation of content already written by digest: no tag was
// written.
type SigningError struct {
	Image string // registry/repository@sha256:<hex>
	Err   error
}

func (e *SigningError) Error() string {
	return fmt.Sprintf("signing %s failed, so no tag was moved to it: %v", e.Image, e.Err)
}

func (e *SigningError) Unwrap() error { return e.Err }

// Publish pushes p as catalogbot pushes every image it signs: the content by digest, then its signatures
// and attestation, and only then its tags, so that a tag never names content that is not signed and a
// failure before the tags leaves every tag where it was. With a nil Signer nothing is signed and the tags
// are written directly; the Result is then nil.
//
// Errors are the callbacks' own, a *registry.TagTakenError (WriteOnce), or a *SigningError.
func Publish(ctx context.Context, s *Signer, p Publication) (*Result, error) {
	if len(p.Tags) == 0 {
		return nil, errors.New("sign: nothing to publish: no tag")
	}
	if s == nil {
		return nil, writeTags(ctx, p)
	}
	first, err := s.reg.Reference(p.Tags[0])
	if err != nil {
		return nil, err
	}
	byDigest := first.Context().Digest(p.Digest).String()
	if p.WriteOnce {
		for _, t := range p.Tags {
			if c := s.reg.Check(ctx, t); c.Kind == registry.Exists && c.Digest != p.Digest {
				return nil, &registry.TagTakenError{Ref: t, Existing: c.Digest, Refused: p.Digest}
			}
		}
	}
	if err := p.WriteContent(ctx, byDigest); err != nil {
		return nil, err
	}
	var prov *Provenance
	if p.Provenance != nil {
		prov = p.Provenance(ctx)
	}
	res, err := s.Sign(ctx, Request{Image: byDigest, Identities: p.Tags, Provenance: prov})
	if err != nil {
		return nil, &SigningError{Image: byDigest, Err: err}
	}
	if p.Signed != nil {
		if err := p.Signed(ctx, byDigest, res); err != nil {
			return res, err
		}
	}
	return res, writeTags(ctx, p)
}

func writeTags(ctx context.Context, p Publication) error {
	for _, t := range p.Tags {
		if err := p.WriteTag(ctx, t); err != nil {
			return err
		}
	}
	return nil
}
