package template

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
)

// Renderer renders one template at the migrate levels of its catalogs, each level once. Bundle images are
// resolved by digest from the committed catalogs the template renders into (read once), then from the
// package's bundle directories, then from a tag those catalogs hold verbatim, then, when pull is set, from
// a registry. The pull-request check, the preview and the App's catalog update after a merge all render
// through it.
type Renderer struct {
	tmpl     *Template
	beh      Behaviour
	catalogs *CatalogResolver
	dirs     *DirResolver
	pull     func(level string) Resolver
	done     map[string]*Output
	// Incomplete, when set, is told each image whose bundle directories could not all be read, with why.
	Incomplete func(ref, reason string)
}

// NewRenderer renders tmpl as opm release opm does ("" or an unknown release: the newest known behaviour).
// catalogs are the paths of the catalog files the template renders into; docsOf reads one (false when it
// cannot be read). dirs (may be nil) resolves from bundle directories; pull (may be nil) gives the registry
// resolver of a migrate level.
func NewRenderer(tmpl *Template, opm string, catalogs []string, docsOf func(string) ([]catalog.Doc, bool), dirs *DirResolver, pull func(level string) Resolver) *Renderer {
	beh, err := BehaviourOf(opm)
	if err != nil {
		beh, _ = BehaviourOf("")
	}
	cr, _ := NewCatalogResolver("none")
	for _, c := range catalogs {
		if docs, ok := docsOf(c); ok {
			cr.Add(docs)
		}
	}
	return &Renderer{tmpl: tmpl, beh: beh, catalogs: cr, dirs: dirs, pull: pull, done: map[string]*Output{}}
}

// Render renders at migrate level level; the findings come with the first render of a level only.
func (r *Renderer) Render(ctx context.Context, level string) (*Output, []catalog.Finding) {
	if out, ok := r.done[level]; ok {
		return out, nil
	}
	var chain Chain
	cr, err := r.catalogs.AtLevel(level)
	if err == nil {
		chain = append(chain, cr)
	}
	if r.dirs != nil {
		var dr Resolver = r.dirs.AtLevel(level)
		if incomplete := r.Incomplete; incomplete != nil {
			inner := dr
			dr = ResolverFunc(func(ctx context.Context, ref string) (*Resolved, error) {
				res, err := inner.Resolve(ctx, ref)
				if errors.Is(err, ErrIncomplete) {
					incomplete(ref, err.Error())
				}
				return res, err
			})
		}
		chain = append(chain, dr)
	}
	if err == nil {
		chain = append(chain, cr.ByTag())
	}
	if r.pull != nil {
		chain = append(chain, r.pull(level))
	}
	out, findings := Render(ctx, r.tmpl, Options{Resolver: chain, Behaviour: r.beh})
	r.done[level] = out
	return out, findings
}

// Target is one catalog file a template renders into, with opm's --migrate-level for it.
type Target struct {
	Path         string
	MigrateLevel string
}

// RenderFiles renders the template for each target and encodes it as the target's file name asks
// (OutputFormat). It returns each target's content by path, or nil and findings saying why the template does
// not render; file names the template in those findings.
func (r *Renderer) RenderFiles(ctx context.Context, file string, targets []Target) (map[string][]byte, []catalog.Finding) {
	var findings []catalog.Finding
	out := map[string][]byte{}
	for _, t := range targets {
		rendered, rf := r.Render(ctx, t.MigrateLevel)
		findings = append(findings, rf...)
		if rendered == nil {
			return nil, findings
		}
		var buf bytes.Buffer
		var err error
		if OutputFormat(t.Path) == "json" {
			err = rendered.WriteJSON(&buf)
		} else {
			err = rendered.WriteYAML(&buf)
		}
		if err != nil {
			return nil, append(findings, catalog.Finding{Rule: RuleDriftMapping, Severity: catalog.SeverityError, Position: catalog.Position{File: file}, Message: err.Error()})
		}
		out[t.Path] = buf.Bytes()
	}
	return out, findings
}

// OutputFormat is how a catalog file is written: "json" for a .json file, "yaml" otherwise.
func OutputFormat(file string) string {
	if strings.HasSuffix(file, ".json") {
		return "json"
	}
	return "yaml"
}

// BundleDirs lists the <version>/ directories of a package folder that hold metadata/annotations.yaml.
func BundleDirs(fsys fs.FS, pkgDir string) []string {
	entries, err := fs.ReadDir(fsys, pkgDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := path.Join(pkgDir, e.Name())
		if info, err := fs.Stat(fsys, path.Join(dir, "metadata", "annotations.yaml")); err == nil && info.Mode().IsRegular() {
			out = append(out, dir)
		}
	}
	return out
}
