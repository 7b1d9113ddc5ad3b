// Package pkgtemplate finds the catalog templates a repository's policy maps to one package (the policy's
// templates: and the fbc.catalog_mapping of a bundle root's <package>/ci.yaml) and renders them into the
// bytes of their catalog files with catalog/template. It is the policy-aware layer over catalog/template, so
// that the pull-request checks (drift, preview, derived pull requests) and the App's catalog update after a
// merge render one way without either importing the other: checks and app import it; it imports catalog,
// catalog/template, gitfs and policy.
package pkgtemplate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// maxCIYamlBytes bounds a package's ci.yaml.
const maxCIYamlBytes = 1 << 20

// PackageTemplate is one template of a package and the catalogs it renders into.
type PackageTemplate struct {
	Template string
	Catalogs []policy.TemplateCatalog
	Opm      string
	// Root is the bundle root whose ci.yaml maps it (nil for the policy's templates:).
	Root *policy.BundleRoot
}

// List lists the templates that render package pkg in fsys: the policy's templates whose catalogs are files
// of a pkg directory, and the fbc.catalog_mapping of <root>/<pkg>/ci.yaml for bundle roots with
// templatesFromCIYaml.
func List(fsys fs.FS, pol *policy.Policy, pkg string) ([]PackageTemplate, error) {
	var out []PackageTemplate
	for _, tm := range pol.Templates {
		for _, c := range tm.Catalogs {
			if strings.Contains("/"+c.Path, "/"+pkg+"/") {
				out = append(out, PackageTemplate{Template: tm.Path, Catalogs: tm.Catalogs, Opm: tm.Opm})
				break
			}
		}
	}
	if !ValidFolder(pkg) {
		return out, nil
	}
	for i := range pol.Bundles {
		root := &pol.Bundles[i]
		if !root.TemplatesFromCIYaml {
			continue
		}
		dir := path.Join(root.Path, pkg)
		data, err := ReadFileCapped(fsys, path.Join(dir, "ci.yaml"), maxCIYamlBytes)
		if err != nil {
			return nil, err
		}
		if data == nil {
			continue
		}
		ms, err := template.CIMappings(dir, pkg, data)
		if err != nil {
			return nil, err
		}
		opm := MakefileOpm(fsys, path.Join(dir, "Makefile"))
		for _, m := range ms {
			pt := PackageTemplate{Template: m.Template, Opm: opm, Root: root}
			for _, c := range m.Catalogs {
				pt.Catalogs = append(pt.Catalogs, policy.TemplateCatalog{Path: c, MigrateLevel: m.MigrateLevel[c]})
			}
			out = append(out, pt)
		}
	}
	return out, nil
}

// Render renders a template of fsys (source src) for each of its catalogs, the bundle images resolved from
// the catalogs of fsys (by digest) and from the package's bundle directories (by digest or the root's image
// pattern). It returns each catalog's new content; findings say why the template does not render.
func Render(ctx context.Context, fsys fs.FS, pol *policy.Policy, pt PackageTemplate, pkg string, src []byte, lim catalog.Limits) (map[string][]byte, []catalog.Finding) {
	return RenderWith(ctx, fsys, DirResolver(fsys, pol, pt.Root, pkg), pt, src, lim)
}

// RenderWith is Render with the bundle directories' resolver given (nil: none).
func RenderWith(ctx context.Context, fsys fs.FS, dirs *template.DirResolver, pt PackageTemplate, src []byte, lim catalog.Limits) (map[string][]byte, []catalog.Finding) {
	tmpl, findings := template.Parse(pt.Template, src, lim)
	if tmpl == nil {
		return nil, findings
	}
	out, rf := NewRenderer(tmpl, pt.Opm, fsys, pt.Catalogs, dirs, lim, nil).RenderFiles(ctx, pt.Template, Targets(pt.Catalogs))
	return out, append(findings, rf...)
}

// NewRenderer is template.NewRenderer over the catalogs' files read from catalogFS (the base revision, for a
// pull request: the head's catalogs are what is being judged), each within lim's file size.
func NewRenderer(tmpl *template.Template, opm string, catalogFS fs.FS, catalogs []policy.TemplateCatalog, dirs *template.DirResolver, lim catalog.Limits, pull func(string) template.Resolver) *template.Renderer {
	maxFile := MaxFileOf(lim)
	return template.NewRenderer(tmpl, opm, Paths(catalogs), func(name string) ([]catalog.Doc, bool) {
		data, err := ReadFileCapped(catalogFS, name, maxFile)
		if err != nil || data == nil {
			return nil, false
		}
		docs, _ := catalog.ParseFile(name, data, lim)
		return docs, true
	}, dirs, pull)
}

// Paths are the catalogs' file paths.
func Paths(catalogs []policy.TemplateCatalog) []string {
	out := make([]string, len(catalogs))
	for i, c := range catalogs {
		out[i] = c.Path
	}
	return out
}

// Targets are the catalogs as catalog/template's render targets.
func Targets(catalogs []policy.TemplateCatalog) []template.Target {
	out := make([]template.Target, len(catalogs))
	for i, c := range catalogs {
		out[i] = template.Target{Path: c.Path, MigrateLevel: c.MigrateLevel}
	}
	return out
}

// DirResolver resolves images from the bundle directories of a package in fsys: those of root's package
// folder when a ci.yaml mapping names the root, else the package folders of any bundle root named by one of
// names (the package, or for a template of the policy the segments of its catalogs' paths:
// catalogs/v4.16/etcd/catalog.yaml names etcd). Nil when there are none.
func DirResolver(fsys fs.FS, pol *policy.Policy, root *policy.BundleRoot, names ...string) *template.DirResolver {
	if root != nil && len(names) > 0 {
		return template.NewDirResolver(fsys, template.BundleDirs(fsys, path.Join(root.Path, names[0])), root.Image, "none")
	}
	var dirs []string
	pattern := ""
	seen := map[string]bool{}
	for _, name := range names {
		if !ValidFolder(name) || seen[name] {
			continue
		}
		seen[name] = true
		for _, r := range pol.Bundles {
			if st, err := fs.Stat(fsys, path.Join(r.Path, name)); err == nil && st.IsDir() {
				dirs = append(dirs, template.BundleDirs(fsys, path.Join(r.Path, name))...)
				if pattern == "" {
					pattern = r.Image
				}
			}
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	return template.NewDirResolver(fsys, dirs, pattern, "none")
}

// opmVersionLine is compiled on first use, not by every process at start (issue 33.1).
var opmVersionLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*OPM_VERSION\s*[?:]?=\s*(v?1\.[0-9]+\.[0-9]+)\s*$`)
})

// MakefileOpm reads the opm release a community package renders with (OPM_VERSION ?= v1.46.0 in its
// Makefile; the file is only read, never run). "" when it does not say.
func MakefileOpm(fsys fs.FS, name string) string {
	data, err := ReadFileCapped(fsys, name, 1<<20)
	if err != nil || data == nil {
		return ""
	}
	if m := opmVersionLine().FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return ""
}

// ValidFolder reports whether name is one path element a package or catalog folder may have.
func ValidFolder(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\")
}

// ReadFileCapped reads a regular file of at most max bytes: nil when it is absent or not a regular file, an
// error when it is larger or its object is missing from a partial clone.
func ReadFileCapped(fsys fs.FS, name string, max int64) ([]byte, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil && errors.Is(err, gitfs.ErrObjectMissing) {
		return nil, err
	}
	if err != nil || !info.Mode().IsRegular() {
		return nil, nil
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	return fs.ReadFile(fsys, name)
}

// MaxFileOf is the largest catalog file read under lim (the loader's default when lim sets none).
func MaxFileOf(lim catalog.Limits) int64 {
	if lim.MaxFileSize > 0 {
		return lim.MaxFileSize
	}
	return catalog.DefaultLimits().MaxFileSize
}
