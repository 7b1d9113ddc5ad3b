package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// BundleLabelPrefix starts the annotations of metadata/annotations.yaml that a
// bundle image carries as labels (mediatype, manifests and metadata paths,
// package, channels, default channel): what the Dockerfile that
// operator-sdk and opm generate for a bundle sets.
const BundleLabelPrefix = "operators.operatorframework.io.bundle."

// bundleDirs are the bundle directory's folders the image holds, at its root.
var bundleDirs = [...]string{"manifests", "metadata"}

// BundleImage builds a registry+v1 bundle image without Docker, as the
// bundle's generated Dockerfile would: FROM scratch, one layer holding the
// directory's manifests/ and metadata/ at the image's root, and the
// operators.operatorframework.io.bundle.* annotations as labels. Anything
// else in the directory (tests/, a Dockerfile, a README) stays out.
//
// The image is a function of the files and the annotations only: every entry
// has the same fixed time, owner 0 and mode 0644 (directories 0755), and the
// config's creation time is the epoch, so the same directory always gives the
// same digest. A symbolic link or special file is refused, never followed.
func BundleImage(ctx context.Context, bundleFS fs.FS, annotations map[string]string, lim Limits) (v1.Image, error) {
	lim = lim.withDefaults()
	labels := map[string]string{}
	for k, v := range annotations {
		if strings.HasPrefix(k, BundleLabelPrefix) {
			labels[k] = v
		}
	}
	if len(labels) == 0 {
		return nil, errors.New("metadata/annotations.yaml sets no operators.operatorframework.io.bundle.* annotation; a bundle image needs at least its mediatype and package")
	}
	entries, err := bundleEntries(ctx, bundleFS, lim)
	if err != nil {
		return nil, err
	}
	layer, err := writeLayer(ctx, bundleFS, entries, "", lim.TempDir)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: "catalogbot: bundle manifests/ and metadata/",
			Comment:   "registry+v1 bundle",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: epoch}
	// A scratch image runs nothing; OS and architecture are what a build on
	// the usual host records, and what opm and podman expect to find.
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Labels = labels
	return mutate.ConfigFile(img, cf)
}

// bundleEntries lists manifests/ and metadata/ with every file and directory
// below them, sorted by path. Both folders must exist.
func bundleEntries(ctx context.Context, bundleFS fs.FS, lim Limits) ([]entry, error) {
	var entries []entry
	var total int64
	// The folders are found by listing the bundle directory, never by path: a manifests or metadata link
	// (to a folder anywhere on the machine) is refused, not followed.
	listed, err := fs.ReadDir(bundleFS, ".")
	if err != nil {
		return nil, fmt.Errorf("reading the bundle directory: %w", err)
	}
	for _, top := range bundleDirs {
		var found fs.DirEntry
		for _, e := range listed {
			if e.Name() == top {
				found = e
			}
		}
		switch {
		case found != nil && found.Type()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s: %w", top, errBundleLink)
		case found == nil || !found.IsDir():
			return nil, fmt.Errorf("the bundle directory has no %s/ folder; a registry+v1 bundle holds manifests/ and metadata/", top)
		}
		err = fs.WalkDir(bundleFS, top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("reading %s: %w", p, err)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			switch {
			case d.IsDir():
				entries = append(entries, entry{name: p, dir: true})
				return nil
			case d.Type()&fs.ModeSymlink != 0:
				return fmt.Errorf("%s: %w", p, errBundleLink)
			case !d.Type().IsRegular():
				return fmt.Errorf("%s is not a regular file; a bundle image holds only files and folders", p)
			}
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("reading %s: %w", p, err)
			}
			total += info.Size()
			if len(entries) >= lim.MaxFiles || total > lim.MaxTotalBytes {
				return fmt.Errorf("the bundle directory is larger than %d files or %d bytes", lim.MaxFiles, lim.MaxTotalBytes)
			}
			entries = append(entries, entry{name: p})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	for _, e := range entries {
		if path.Clean(e.name) != e.name {
			return nil, fmt.Errorf("unexpected path %q in the bundle directory", e.name)
		}
	}
	return entries, nil
}

// errBundleLink: links never go into a bundle image.
var errBundleLink = errors.New("symbolic links are not copied into a bundle image; replace the link with the file")
