package sign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// attachment is one layer to add to an attachment image.
type attachment struct {
	content     []byte
	mediaType   types.MediaType
	annotations map[string]string
	// same, when set, says whether an existing layer already is this attachment; else content and
	// annotations are compared.
	same func(existingLayer) bool
}

// maxAppendTries bounds the read-modify-write of one attachment image when another writer interleaves.
const maxAppendTries = 4

// emptyAttachments is the image cosign starts an attachment image from: an OCI manifest with an OCI config
// and no layer.
func emptyAttachments() v1.Image {
	return mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1)
}

// attach appends atts to the sha256-<hex>.<suffix> image of d, keeping every layer already there and
// skipping an attachment whose content and annotations are already a layer. Registries have no
// compare-and-swap on tags, so the write is read back: if another writer replaced it meanwhile, the append
// is made again on top of theirs. It returns how many layers were added.
func (s *Signer) attach(ctx context.Context, d name.Digest, suffix string, atts []attachment) (int, error) {
	tag, err := attachmentTag(d.Context(), d, suffix)
	if err != nil {
		return 0, err
	}
	mu, _ := s.locks.LoadOrStore(tag.String(), &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()

	for try := 1; ; try++ {
		base, existing, err := s.readAttachments(ctx, tag)
		if err != nil {
			return 0, err
		}
		var adds []mutate.Addendum
		for _, a := range atts {
			if hasLayer(existing, a) {
				continue
			}
			adds = append(adds, mutate.Addendum{Layer: static.NewLayer(a.content, a.mediaType), Annotations: a.annotations, MediaType: a.mediaType})
		}
		if len(adds) == 0 {
			return 0, nil
		}
		if len(existing)+len(adds) > maxLayers {
			return 0, fmt.Errorf("sign: %s already holds %d layers; at most %d are kept", tag, len(existing), maxLayers)
		}
		img, err := mutate.Append(base, adds...)
		if err != nil {
			return 0, err
		}
		want, err := img.Digest()
		if err != nil {
			return 0, err
		}
		if err := remote.Write(tag, img, s.reg.RemoteOptions(ctx)...); err != nil {
			return 0, fmt.Errorf("sign: writing %s: %w", tag, err)
		}
		desc, err := remote.Head(tag, s.reg.RemoteOptions(ctx)...)
		if err != nil {
			return 0, fmt.Errorf("sign: %s was written but cannot be read back: %w", tag, err)
		}
		if desc.Digest == want {
			return len(adds), nil
		}
		if try == maxAppendTries {
			return 0, fmt.Errorf("sign: %s was replaced by another writer %d times while this one appended to it; not confirmed", tag, try)
		}
		s.logger.Debug("attachment image replaced concurrently; appending again", "tag", tag.String(), "try", try)
	}
}

// existingLayer is one layer of an attachment image, read (bounded) for comparison and verification.
type existingLayer struct {
	mediaType   types.MediaType
	annotations map[string]string
	content     []byte
}

// readAttachments reads the attachment image at tag: the image to append to (an empty one when the tag
// does not exist) and its layers' contents.
func (s *Signer) readAttachments(ctx context.Context, tag name.Tag) (v1.Image, []existingLayer, error) {
	return readAttachments(ctx, tag, s.reg.RemoteOptions(ctx))
}

func readAttachments(ctx context.Context, tag name.Tag, opts []remote.Option) (v1.Image, []existingLayer, error) {
	img, err := remote.Image(tag, opts...)
	if err != nil {
		var terr *transport.Error
		if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
			return emptyAttachments(), nil, nil
		}
		return nil, nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	if len(m.Layers) > maxLayers {
		return nil, nil, fmt.Errorf("%s holds %d layers; at most %d are read", tag, len(m.Layers), maxLayers)
	}
	out := make([]existingLayer, 0, len(m.Layers))
	for _, ld := range m.Layers {
		limit := int64(maxPayloadBytes)
		if ld.MediaType == DSSEMediaType {
			limit = maxEnvelopeBytes
		}
		el := existingLayer{mediaType: ld.MediaType, annotations: ld.Annotations}
		if ld.Size <= limit {
			b, err := readBlob(ctx, tag.Context(), ld.Digest, limit, opts)
			if err != nil {
				return nil, nil, fmt.Errorf("reading a layer of %s: %w", tag, err)
			}
			el.content = b
		}
		out = append(out, el)
	}
	return img, out, nil
}

// readBlob reads a blob of at most limit bytes and checks its digest.
func readBlob(ctx context.Context, repo name.Repository, d v1.Hash, limit int64, opts []remote.Option) ([]byte, error) {
	l, err := remote.Layer(repo.Digest(d.String()), opts...)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("blob %s is larger than %d bytes", d, limit)
	}
	if got := digestOf(b); got != d.String() {
		return nil, fmt.Errorf("blob %s has digest %s", d, got)
	}
	return b, ctx.Err()
}

func hasLayer(existing []existingLayer, a attachment) bool {
	for _, e := range existing {
		if a.same != nil {
			if a.same(e) {
				return true
			}
			continue
		}
		if e.mediaType != a.mediaType || !bytes.Equal(e.content, a.content) || len(e.annotations) != len(a.annotations) {
			continue
		}
		same := true
		for k, v := range a.annotations {
			if e.annotations[k] != v {
				same = false
			}
		}
		if same {
			return true
		}
	}
	return false
}
