package render

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/internal/markdown"
)

const (
	// maxGraphs bounds the upgrade graphs drawn for one pull request.
	maxGraphs = 10
	// maxGraphMarkdown bounds their markdown (the summary's limit is 65,535).
	maxGraphMarkdown = 30000
)

// upgradeGraphs draws, for each channel whose blob the pull request adds,
// changes or removes, its upgrade graph before and after. The "before"
// catalog is the head's blobs of the touched packages with the changed
// blobs put back as they are in the base, so nothing more is read from git.
func UpgradeGraphs(in *change.PullRequest) string {
	if in == nil || in.Changes == nil {
		return ""
	}
	var sb strings.Builder
	drawn, omitted := 0, 0
	for _, cc := range in.Changes.Catalogs {
		if cc.Head == nil {
			continue
		}
		type channelKey struct{ pkg, name string }
		channels := map[channelKey]bool{}
		touched := map[string]bool{}
		dropFromHead := map[catalog.Position]bool{}
		var baseOnly []catalog.Doc
		for _, dc := range cc.Docs {
			if dc.Key.Schema == catalog.SchemaChannel {
				channels[channelKey{dc.Key.Package, dc.Key.Name}] = true
				touched[dc.Key.Package] = true
			}
			if dc.Head != nil {
				dropFromHead[dc.Head.Pos] = true
			}
			if dc.Base != nil {
				baseOnly = append(baseOnly, *dc.Base)
			}
		}
		if len(channels) == 0 {
			continue
		}
		var afterDocs, beforeDocs []catalog.Doc
		for _, d := range cc.Head.Docs() {
			if !touched[docPackage(d)] {
				continue
			}
			afterDocs = append(afterDocs, d)
			if !dropFromHead[d.Pos] {
				beforeDocs = append(beforeDocs, d)
			}
		}
		for _, d := range baseOnly {
			if touched[docPackage(d)] {
				beforeDocs = append(beforeDocs, d)
			}
		}
		before, after := catalog.NewCatalog(beforeDocs, nil), catalog.NewCatalog(afterDocs, nil)
		keys := make([]channelKey, 0, len(channels))
		for k := range channels {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].pkg != keys[j].pkg {
				return keys[i].pkg < keys[j].pkg
			}
			return keys[i].name < keys[j].name
		})
		for _, k := range keys {
			md := UpgradeGraphMermaid(before, after, k.pkg, k.name)
			if md == "" {
				continue
			}
			if drawn >= maxGraphs || sb.Len()+len(md) > maxGraphMarkdown {
				omitted++
				continue
			}
			fmt.Fprintf(&sb, "#### Upgrade graph of `%s`, channel `%s`\n\n%s\n", k.pkg, k.name, md)
			drawn++
		}
	}
	// Bundle pull requests: the channels the catalog update would change, from the preview. A channel drawn
	// the same in several catalogs (one template rendered into v4.20, v4.21, v4.22) is drawn once.
	if in.Changes.Memo(previewMemo).Started() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p := Preview(ctx, in)
		cancel()
		type drawnKey struct{ pkg, channel, before, after string }
		index := map[drawnKey]int{}
		type graph struct {
			pkg, channel, md string
			catalogs         []string
		}
		var graphs []graph
		for _, pp := range previewPackages(p) {
			for _, pc := range pp.Catalogs {
				names := append(channelNames(pc.Before, pp.Package), channelNames(pc.After, pp.Package)...)
				sort.Strings(names)
				for i, ch := range names {
					if i > 0 && names[i-1] == ch {
						continue
					}
					before, after := channelSignature(pc.Before, pp.Package, ch), channelSignature(pc.After, pp.Package, ch)
					if before == after {
						continue
					}
					k := drawnKey{pp.Package, ch, before, after}
					if j, ok := index[k]; ok {
						graphs[j].catalogs = append(graphs[j].catalogs, catalogLabel(pc.Path))
						continue
					}
					index[k] = len(graphs)
					graphs = append(graphs, graph{pkg: pp.Package, channel: ch, catalogs: []string{catalogLabel(pc.Path)},
						md: UpgradeGraphMermaid(pc.Before, pc.After, pp.Package, ch)})
				}
			}
		}
		for _, g := range graphs {
			if g.md == "" {
				continue
			}
			if drawn >= maxGraphs || sb.Len()+len(g.md) > maxGraphMarkdown {
				omitted++
				continue
			}
			fmt.Fprintf(&sb, "#### Upgrade graph of `%s`, channel `%s`, after the catalog update (previewed; %s)\n\n%s\n",
				markdown.Code(g.pkg), markdown.Code(g.channel), strings.Join(g.catalogs, ", "), g.md)
			drawn++
		}
	}
	if omitted > 0 {
		fmt.Fprintf(&sb, "\n%d more changed channel(s) not drawn.\n", omitted)
	}
	return sb.String()
}

// previewPackages are the previewed packages rendered from templates.
func previewPackages(p *CatalogPreview) []*PackagePreview {
	if p == nil {
		return nil
	}
	var out []*PackagePreview
	for _, pp := range p.Packages {
		if pp.Templates && len(pp.Catalogs) > 0 {
			out = append(out, pp)
		}
	}
	return out
}

// docPackage is the package a blob belongs to.
func docPackage(d catalog.Doc) string {
	if d.Schema == catalog.SchemaPackage {
		return d.Name
	}
	return d.Package
}

// channelNames lists the channels of pkg in c (nil when either is absent).
func channelNames(c *catalog.Catalog, pkg string) []string {
	if c == nil {
		return nil
	}
	p := c.Package(pkg)
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.Channels))
	for _, ch := range p.Channels {
		out = append(out, ch.Name)
	}
	return out
}
