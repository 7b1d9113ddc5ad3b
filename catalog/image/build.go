package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ConfigsLabel tells OLM (opm serve, catalogd) where the catalog is.
const ConfigsLabel = "operators.operatorframework.io.index.configs.v1"

// Built is a catalog image: an index (when the base was one) or one image.
type Built struct {
	Index v1.ImageIndex // set when the base was an index
	Image v1.Image      // set when the base was a single image
	// Platforms built, as os/arch[/variant], in the base's order.
	Platforms []string
}

// Digest is the digest of the index or image.
func (b *Built) Digest() (v1.Hash, error) {
	if b.Index != nil {
		return b.Index.Digest()
	}
	return b.Image.Digest()
}

// Build reads the base image, which must be referenced by digest (a tag can
// move, and then the same catalog would give another image), and appends the
// catalog layer to each of its platforms. opts are used to read the base (the
// registry client's RemoteOptions: auth, host guard, budget).
func Build(ctx context.Context, baseRef string, catalog fs.FS, lim Limits, opts ...remote.Option) (*Built, error) {
	ref, err := name.ParseReference(baseRef, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("base image %q: %w", baseRef, err)
	}
	if _, ok := ref.(name.Digest); !ok {
		return nil, fmt.Errorf("base image %q is not pinned by digest; write it as repository@sha256:<digest> so that the same catalog always gives the same image", baseRef)
	}
	layer, err := ConfigsLayer(ctx, catalog, lim)
	if err != nil {
		return nil, err
	}
	return BuildOn(ctx, baseRef, layer, opts...)
}

// BuildOn is Build with the catalog layer already made (ConfigsLayer, or a DiskCache's).
func BuildOn(ctx context.Context, baseRef string, layer v1.Layer, opts ...remote.Option) (*Built, error) {
	ref, err := name.ParseReference(baseRef, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("base image %q: %w", baseRef, err)
	}
	if _, ok := ref.(name.Digest); !ok {
		return nil, fmt.Errorf("base image %q is not pinned by digest; write it as repository@sha256:<digest> so that the same catalog always gives the same image", baseRef)
	}
	desc, err := remote.Get(ref, append([]remote.Option{remote.WithContext(ctx)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("reading base image %s: %w", baseRef, err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("reading base index %s: %w", baseRef, err)
		}
		return FromIndex(idx, layer)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("reading base image %s: %w", baseRef, err)
	}
	out, err := FromImage(img, layer)
	if err != nil {
		return nil, err
	}
	return &Built{Image: out, Platforms: []string{platformOf(img)}}, nil
}

// FromImage appends the catalog layer to one image and sets what opm serve
// needs: the configs label, entrypoint /bin/opm and command "serve /configs".
// The base's layers, user, environment and working directory are kept. No
// cache is pre-built: a cache built elsewhere fails opm's integrity check.
func FromImage(base v1.Image, layer v1.Layer) (v1.Image, error) {
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading base config: %w", err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   cf.Created, // the base's time: nothing of the build's moment leaks in
			CreatedBy: "catalogbot: catalog at " + ConfigsDir,
			Comment:   "file-based catalog",
		},
	})
	if err != nil {
		return nil, err
	}
	cfg := cf.Config.DeepCopy()
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	cfg.Labels[ConfigsLabel] = ConfigsDir
	cfg.Entrypoint = []string{"/bin/opm"}
	cfg.Cmd = []string{"serve", ConfigsDir}
	return mutate.Config(img, *cfg)
}

// FromIndex builds every image of a multi-arch index and returns an index
// with the same platforms (and the base's media type). Entries that are not
// runnable images (attestations, with platform unknown/unknown) are dropped.
func FromIndex(base v1.ImageIndex, layer v1.Layer) (*Built, error) {
	im, err := base.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading base index: %w", err)
	}
	mt, err := base.MediaType()
	if err != nil {
		return nil, err
	}
	out := mutate.IndexMediaType(empty.Index, mt)
	built := &Built{}
	for _, d := range im.Manifests {
		if !d.MediaType.IsImage() || d.Platform == nil || d.Platform.OS == "unknown" {
			continue
		}
		img, err := base.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading base image for %s: %w", d.Platform, err)
		}
		nimg, err := FromImage(img, layer)
		if err != nil {
			return nil, fmt.Errorf("building %s: %w", d.Platform, err)
		}
		out = mutate.AppendManifests(out, mutate.IndexAddendum{
			Add:        nimg,
			Descriptor: v1.Descriptor{Platform: d.Platform, MediaType: mediaTypeFor(mt, d.MediaType)},
		})
		built.Platforms = append(built.Platforms, d.Platform.String())
	}
	if len(built.Platforms) == 0 {
		return nil, errors.New("the base index holds no image for any platform")
	}
	built.Index = out
	return built, nil
}

// mediaTypeFor keeps image manifests of the base's kind.
func mediaTypeFor(index, image types.MediaType) types.MediaType {
	if index == types.DockerManifestList {
		return types.DockerManifestSchema2
	}
	if image != "" {
		return image
	}
	return types.OCIManifestSchema1
}

func platformOf(img v1.Image) string {
	cf, err := img.ConfigFile()
	if err != nil || cf.OS == "" {
		return "unknown"
	}
	p := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	return p.String()
}

// Push writes the image or index to ref (a tag or a repository) with opts.
func (b *Built) Push(ctx context.Context, ref string, opts ...remote.Option) (string, error) {
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		return "", fmt.Errorf("push target %q: %w", ref, err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	if b.Index != nil {
		err = remote.WriteIndex(r, b.Index, opts...)
	} else {
		err = remote.Write(r, b.Image, opts...)
	}
	if err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := b.Digest()
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(r.Context().String(), "/") + "@" + d.String(), nil
}
