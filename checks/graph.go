package checks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
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
func UpgradeGraphs(in *PullRequest) string {
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
	if omitted > 0 {
		fmt.Fprintf(&sb, "\n%d more changed channel(s) not drawn.\n", omitted)
	}
	return sb.String()
}

// docPackage is the package a blob belongs to.
func docPackage(d catalog.Doc) string {
	if d.Schema == catalog.SchemaPackage {
		return d.Name
	}
	return d.Package
}
