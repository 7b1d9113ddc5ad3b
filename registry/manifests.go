package registry

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Limits bound what Manifests reads. Zero fields take the defaults below.
type Limits struct {
	MaxBytes  int64         // layer bytes read in all, compressed and uncompressed each (default 64 MiB)
	MaxFiles  int           // files kept from manifests/ (default 1000)
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
	layers, err := img.Layers()
	if err != nil {
		return nil, fail(err)
	}
	files := map[string][]byte{}
	remaining := lim.MaxBytes
	for i, layer := range layers {
		rc, err := layer.Uncompressed()
		if err != nil {
			return nil, fail(err)
		}
		lr := &boundedReader{r: rc, left: remaining}
		err = applyLayer(files, lr, lim.MaxFiles)
		if err == nil {
			// Read to the end so the digest of what was served is verified.
			_, err = io.Copy(io.Discard, lr)
		}
		rc.Close()
		remaining = lr.left
		switch {
		case err == nil:
		case errors.Is(err, ErrLimit):
			return nil, fmt.Errorf("%s: layer %d: %w", ref, i+1, err)
		case isRegistryError(err):
			return nil, fail(err)
		default:
			return nil, fmt.Errorf("%s: layer %d is not a readable tar stream: %v", ref, i+1, err)
		}
	}
	return files, nil
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

// applyLayer reads one layer's tar stream and applies it to files (name → content under manifests/).
// Whiteouts and opaque markers act on the layers below; entries of this layer then replace same-named files,
// a non-regular entry removing the file it shadows.
func applyLayer(files map[string][]byte, r *boundedReader, maxFiles int) error {
	tr := tar.NewReader(r)
	added := map[string][]byte{} // nil value: shadowed by something that is not a regular file
	var removed []string
	clearAll := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		p := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		dir, base := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case p == "" || p == ".":
			continue
		case base == ".wh..wh..opq":
			if dir == "" || dir == manifestsDir {
				clearAll = true
			}
		case strings.HasPrefix(base, ".wh."):
			target := path.Join(dir, strings.TrimPrefix(base, ".wh."))
			if target == manifestsDir {
				clearAll = true
			} else if path.Dir(target) == manifestsDir {
				removed = append(removed, path.Base(target))
			}
		case p == manifestsDir:
			if hdr.Typeflag != tar.TypeDir {
				clearAll = true // manifests itself replaced by a link or a file
			}
		case dir == manifestsDir:
			if hdr.Typeflag != tar.TypeReg {
				added[base] = nil
				continue
			}
			if hdr.Size > r.left {
				return fmt.Errorf("%w: file %s is %d bytes, more than remain allowed", ErrLimit, p, hdr.Size)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			added[base] = data
			if len(added) > maxFiles {
				return fmt.Errorf("%w: more than %d files under %s/", ErrLimit, maxFiles, manifestsDir)
			}
		}
	}
	if clearAll {
		clear(files)
	}
	for _, name := range removed {
		delete(files, name)
	}
	for name, data := range added {
		if data == nil {
			delete(files, name)
		} else {
			files[name] = data
		}
	}
	if len(files) > maxFiles {
		return fmt.Errorf("%w: more than %d files under %s/", ErrLimit, maxFiles, manifestsDir)
	}
	return nil
}
