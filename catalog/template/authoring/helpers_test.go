package authoring

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/template"
)

// The shared test data beside the repository (see the README), as package template's tests name it.
const (
	realBundles   = "../../../../shared/testdata/bundles"
	realTemplates = "../../../../shared/testdata/templates"
)

// opmGolden is one recorded opm render of ../testdata/opm (package template's TestRenderMatchesOpm).
type opmGolden struct {
	Outputs  map[string]string `json:"outputs"`
	Skeleton []json.RawMessage `json:"skeleton"`
	Error    string            `json:"error"`
}

// fakeBundles resolves images named "<package>:<version>" into minimal bundles.
var fakeBundles = template.ResolverFunc(func(_ context.Context, image string) (*template.Resolved, error) {
	pkg, version, ok := strings.Cut(image, ":")
	if !ok || strings.HasPrefix(pkg, "missing") {
		return nil, fmt.Errorf("no such image: %w", template.ErrNotFound)
	}
	val, _ := json.Marshal(map[string]string{"packageName": pkg, "version": version})
	return &template.Resolved{Bundle: &bundle.Rendered{Schema: "olm.bundle", Name: pkg + ".v" + version, Package: pkg, Image: image,
		Properties: []bundle.Property{{Type: "olm.package", Value: val}}}}, nil
})

// realBundleDirs lists the bundle directories of the shared test data's bundles (relative to it), or skips.
func realBundleDirs(tb testing.TB) []string {
	tb.Helper()
	if _, err := os.Stat(realBundles); err != nil {
		tb.Skipf("no %s (the shared test data is not on this machine)", realBundles)
	}
	var dirs []string
	anns, _ := filepath.Glob(filepath.Join(realBundles, "*", "*", "metadata", "annotations.yaml"))
	for _, a := range anns {
		rel, _ := filepath.Rel(realBundles, filepath.Dir(filepath.Dir(a)))
		dirs = append(dirs, filepath.ToSlash(rel))
	}
	return dirs
}
