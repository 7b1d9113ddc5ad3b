package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Limits bound what Manifests reads. Zero fields take the defaults below.
type Limits struct {
	MaxBytes  int64         // layer bytes read in all, compressed and uncompressed each (default 64 MiB)
	MaxFiles  int           // entries kept from manifests/ (and metadata/ for Bundle) (default 1000)
	MaxLayers int           // layers in the image (default 128)
	Timeout   time.Duration // deadline of the whole call (default 2 min)
}

// Defaults of Limits.
const (
	DefaultManifestsMaxBytes  = 64 << 20
	DefaultManifestsMaxFiles  = 1000
	DefaultManifestsMaxLayers = 128
	DefaultManifestsTimeout   = 2 * time.Minute
)

// ErrLimit is wrapped by Manifests errors when an image exceeds a Limits bound.
var ErrLimit = errors.New("bundle image exceeds a limit")

// manifestsDir is where a registry+v1 bundle image keeps its manifests (label
// operators.operatorframework.io.bundle.manifests.v1, reserved and always "manifests/").
const manifestsDir = "manifests"

func (l Limits) withDefaults() (Limits, error) {
	if l.MaxBytes < 0 || l.MaxFiles < 0 || l.MaxLayers < 0 || l.Timeout < 0 {
		return l, fmt.Errorf("registry: manifests limits must not be negative: %+v", l)
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultManifestsMaxBytes
	}
	if l.MaxFiles == 0 {
		l.MaxFiles = DefaultManifestsMaxFiles
	}
	if l.MaxLayers == 0 {
		l.MaxLayers = DefaultManifestsMaxLayers
	}
	if l.Timeout == 0 {
		l.Timeout = DefaultManifestsTimeout
	}
	return l, nil
}

// Manifests returns the regular files directly under manifests/ of the bundle image ref, keyed by file name,
// as the image's layers leave them (whiteouts and opaque directories applied). Everything else in the image is
// skipped; links, devices and subdirectories are never followed or returned. When the registry does not
// provide the image the error is an *Error whose Result says why (as Check would); an image beyond lim gives
// an error wrapping ErrLimit.
func (c *Client) Manifests(ctx context.Context, ref string, lim Limits) (map[string][]byte, error) {
	p, err := c.pull(ctx, ref, lim, false, manifestsDir)
	if err != nil {
		return nil, err
	}
	return p.tree.filesIn(manifestsDir), nil
}

// pulled is what pull read of an image.
type pulled struct {
	digest string
	labels map[string]string // the config's labels, when asked for
	tree   *tree
}

// maxConfigBytes bounds an image's config blob (a bundle image's is a few hundred bytes).
const maxConfigBytes = 1 << 20

// pull reads the image ref: its manifest, its config's labels when withLabels, and the files of its layers
// under roots, within lim.
func (c *Client) pull(ctx context.Context, ref string, lim Limits, withLabels bool, roots ...string) (*pulled, error) {
	lim, err := lim.withDefaults()
	if err != nil {
		return nil, err
	}
	r, err := c.parse(ref)
	if err != nil {
		return nil, &Error{Result{Ref: ref, Kind: Invalid, Reason: err.Error()}}
	}
	opCtx, cancel, st, early := c.start(ctx, ref, r, lim.Timeout)
	if early != nil {
		return nil, &Error{*early}
	}
	defer cancel()
	fail := func(err error) error { return &Error{classify(opCtx, ref, err, st)} }

	img, err := remote.Image(r, c.RemoteOptions(opCtx)...)
	if err != nil {
		return nil, fail(err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fail(err)
	}
	out := &pulled{tree: newTree(lim.MaxFiles, roots...)}
	if d, err := img.Digest(); err == nil {
		out.digest = d.String()
	}
	if len(m.Layers) > lim.MaxLayers {
		return nil, fmt.Errorf("%s: %w: %d layers, at most %d are read", ref, ErrLimit, len(m.Layers), lim.MaxLayers)
	}
	var compressed int64
	for _, l := range m.Layers {
		if l.Size < 0 {
			return nil, fmt.Errorf("%s: layer %s has a negative size", ref, l.Digest)
		}
		compressed += l.Size
		if compressed > lim.MaxBytes {
			return nil, fmt.Errorf("%s: %w: layers hold more than %d bytes", ref, ErrLimit, lim.MaxBytes)
		}
	}
	if withLabels {
		if m.Config.Size < 0 || m.Config.Size > maxConfigBytes {
			return nil, fmt.Errorf("%s: %w: the image config is %d bytes, at most %d are read", ref, ErrLimit, m.Config.Size, maxConfigBytes)
		}
		// go-containerregistry reads the config blob through a reader that stops at the size the
		// manifest gives and checks its digest.
		cf, err := img.ConfigFile()
		if err != nil {
			if isRegistryError(err) {
				return nil, fail(err)
			}
			return nil, fmt.Errorf("%s: the image config is not readable: %v", ref, err)
		}
		out.labels = cf.Config.Labels
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fail(err)
	}
	remaining := lim.MaxBytes
	for i, layer := range layers {
		rc, err := layer.Uncompressed()
		if err != nil {
			return nil, fail(err)
		}
		lr := &boundedReader{r: rc, left: remaining}
		err = out.tree.apply(lr)
		if err == nil {
			// Read to the end so the digest of what was served is verified.
			_, err = io.Copy(io.Discard, lr)
		}
		rc.Close()
		remaining = lr.left
		switch {
		case err == nil:
		case errors.Is(err, ErrLimit), errors.Is(err, errBadName):
			return nil, fmt.Errorf("%s: layer %d: %w", ref, i+1, err)
		case isRegistryError(err):
			return nil, fail(err)
		default:
			return nil, fmt.Errorf("%s: layer %d is not a readable tar stream: %v", ref, i+1, err)
		}
	}
	return out, nil
}

func isRegistryError(err error) bool {
	var te *transport.Error
	var refused *refusedError
	var reqErr *requestError
	return errors.As(err, &te) || errors.As(err, &refused) || errors.As(err, &reqErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// boundedReader fails with ErrLimit once more than left bytes are read through it.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Allow a read that proves the stream is over.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: more than the allowed bytes of uncompressed layer data", ErrLimit)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
