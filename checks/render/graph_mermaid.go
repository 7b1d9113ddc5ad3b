package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/internal/markdown"
)

// maxGraphNodes bounds the entries drawn per side; a larger channel is drawn
// around its changes only.
const maxGraphNodes = 40

// maxNodeLabel bounds a bundle name in the picture, in runes.
const maxNodeLabel = 60

// channelGraph is a channel's upgrade graph: entries in channel order (plus
// names only referenced by an edge), edges into each entry, and heads.
type channelGraph struct {
	exists bool
	// entries are the channel's entries; other nodes are only named by an edge.
	entries map[string]bool
	nodes   []string
	inGraph map[string]bool
	edges   []graphEdge
	heads   map[string]bool
}

type graphEdge struct {
	from, to string
	kind     catalog.EdgeKind
}

func buildChannelGraph(c *catalog.Catalog, pkg, channel string) channelGraph {
	g := channelGraph{inGraph: map[string]bool{}, heads: map[string]bool{}, entries: map[string]bool{}}
	if c == nil {
		return g
	}
	p := c.Package(pkg)
	if p == nil {
		return g
	}
	ch := p.Channel(channel)
	if ch == nil {
		return g
	}
	g.exists = true
	add := func(n string) {
		if n != "" && !g.inGraph[n] {
			g.inGraph[n] = true
			g.nodes = append(g.nodes, n)
		}
	}
	for _, e := range ch.Entries {
		add(e.Name)
	}
	entries := len(g.nodes)
	seen := map[graphEdge]bool{}
	addEdge := func(e graphEdge) {
		if e.from == "" || e.from == e.to || seen[e] {
			return
		}
		seen[e] = true
		g.edges = append(g.edges, e)
	}
	inChannel := g.entries
	for _, n := range g.nodes[:entries] {
		inChannel[n] = true
	}
	var referenced []string
	for _, e := range ch.Entries {
		if e.Replaces != "" {
			addEdge(graphEdge{from: e.Replaces, to: e.Name, kind: catalog.EdgeReplaces})
			if !inChannel[e.Replaces] {
				referenced = append(referenced, e.Replaces)
			}
		}
		for _, s := range e.Skips {
			if s == "" {
				continue
			}
			addEdge(graphEdge{from: s, to: e.Name, kind: catalog.EdgeSkips})
			if !inChannel[s] {
				referenced = append(referenced, s)
			}
		}
		if e.SkipRange != "" {
			for _, pe := range c.Predecessors(pkg, e.Name) {
				if pe.Kind == catalog.EdgeSkipRange && pe.Channel == channel && inChannel[pe.From] {
					addEdge(graphEdge{from: pe.From, to: e.Name, kind: catalog.EdgeSkipRange})
				}
			}
		}
	}
	sort.Strings(referenced)
	for _, n := range referenced {
		add(n)
	}
	for _, h := range ch.Heads() {
		g.heads[h.Name] = true
	}
	return g
}

// UpgradeGraphMermaid draws a channel's upgrade graph before and after a
// change as a mermaid flowchart GitHub renders: two subgraphs, arrows from
// the older bundle to the newer (solid: replaces, dotted: skips and
// skipRange), new entries and edges and the new head marked in colour and in
// words. A large channel is drawn around its changes only. Names are escaped,
// so a hostile bundle name cannot break out of the block. It returns "" when
// the channel exists on neither side.
func UpgradeGraphMermaid(before, after *catalog.Catalog, pkg, channel string) string {
	b := buildChannelGraph(before, pkg, channel)
	a := buildChannelGraph(after, pkg, channel)
	if !b.exists && !a.exists {
		return ""
	}
	edgeSet := func(g channelGraph) map[graphEdge]bool {
		m := make(map[graphEdge]bool, len(g.edges))
		for _, e := range g.edges {
			m[e] = true
		}
		return m
	}
	bEdges, aEdges := edgeSet(b), edgeSet(a)

	// What changed, in a stable order.
	var changed []string
	mark := map[string]bool{}
	note := func(n string) {
		if !mark[n] {
			mark[n] = true
			changed = append(changed, n)
		}
	}
	for _, n := range a.nodes {
		if a.heads[n] && !b.heads[n] {
			note(n)
		}
	}
	for _, n := range a.nodes {
		if !b.inGraph[n] {
			note(n)
		}
	}
	for _, e := range a.edges {
		if !bEdges[e] {
			note(e.to)
			note(e.from)
		}
	}
	for _, n := range b.nodes {
		if !a.inGraph[n] {
			note(n)
		}
	}
	for _, e := range b.edges {
		if !aEdges[e] {
			note(e.to)
			note(e.from)
		}
	}

	total := len(union(b.nodes, a.nodes))
	shown := map[string]bool{}
	if total <= maxGraphNodes {
		for _, n := range union(b.nodes, a.nodes) {
			shown[n] = true
		}
	} else {
		for _, n := range changed {
			if len(shown) < maxGraphNodes {
				shown[n] = true
			}
		}
		for _, n := range a.nodes {
			if a.heads[n] && len(shown) < maxGraphNodes {
				shown[n] = true
			}
		}
		// One step around what is shown, in edge order, while there is room.
		seeds := map[string]bool{}
		for n := range shown {
			seeds[n] = true
		}
		for _, es := range [][]graphEdge{a.edges, b.edges} {
			for _, e := range es {
				if len(shown) >= maxGraphNodes {
					break
				}
				if seeds[e.from] {
					shown[e.to] = true
				}
				if len(shown) < maxGraphNodes && seeds[e.to] {
					shown[e.from] = true
				}
			}
		}
	}

	var sb strings.Builder
	sb.WriteString("```mermaid\nflowchart LR\n")
	links := 0
	var newLinks []int
	var classes []string
	side := func(id, title string, g channelGraph, other channelGraph, otherEdges map[graphEdge]bool, isAfter bool) {
		fmt.Fprintf(&sb, "  subgraph %s[\"%s\"]\n", id, mermaidText(title))
		ids := map[string]string{}
		drawn := 0
		for i, n := range g.nodes {
			if !shown[n] {
				continue
			}
			nid := id[:1] + strconv.Itoa(i)
			ids[n] = nid
			drawn++
			label := n
			switch {
			case !g.entries[n]:
				label += " (not in channel)"
				classes = append(classes, "  class "+nid+" outside\n")
			case isAfter && g.heads[n] && !other.heads[n]:
				label += " (new head)"
				classes = append(classes, "  class "+nid+" newHead\n")
			case isAfter && !other.inGraph[n]:
				label += " (new)"
				classes = append(classes, "  class "+nid+" added\n")
			case !isAfter && other.exists && !other.inGraph[n]:
				label += " (removed)"
				classes = append(classes, "  class "+nid+" removed\n")
			case g.heads[n]:
				label += " (head)"
			}
			fmt.Fprintf(&sb, "    %s[\"%s\"]\n", nid, mermaidLabel(label))
		}
		if !g.exists {
			fmt.Fprintf(&sb, "    %s_none[\"%s\"]\n", id[:1], mermaidText("no channel "+channel))
		}
		if hidden := len(g.nodes) - drawn; hidden > 0 {
			fmt.Fprintf(&sb, "    %s_more[\"%s\"]\n", id[:1], mermaidText(fmt.Sprintf("… %d more entries not shown", hidden)))
		}
		for _, e := range g.edges {
			from, ok1 := ids[e.from]
			to, ok2 := ids[e.to]
			if !ok1 || !ok2 {
				continue
			}
			switch e.kind {
			case catalog.EdgeReplaces:
				fmt.Fprintf(&sb, "    %s --> %s\n", from, to)
			case catalog.EdgeSkips:
				fmt.Fprintf(&sb, "    %s -. skips .-> %s\n", from, to)
			default:
				fmt.Fprintf(&sb, "    %s -. skipRange .-> %s\n", from, to)
			}
			if isAfter && !otherEdges[e] {
				newLinks = append(newLinks, links)
			}
			links++
		}
		sb.WriteString("  end\n")
	}
	side("before", "before: "+channel, b, a, aEdges, false)
	side("after", "after: "+channel, a, b, bEdges, true)
	sb.WriteString("  classDef newHead fill:#dafbe1,stroke:#1a7f37,stroke-width:3px\n")
	sb.WriteString("  classDef added fill:#ddf4ff,stroke:#0969da,stroke-width:2px\n")
	sb.WriteString("  classDef removed fill:#ffebe9,stroke:#cf222e,stroke-dasharray:4 3\n")
	sb.WriteString("  classDef outside fill:#f6f8fa,stroke:#8c959f,stroke-dasharray:2 2\n")
	for _, c := range classes {
		sb.WriteString(c)
	}
	if len(newLinks) > 0 {
		parts := make([]string, len(newLinks))
		for i, l := range newLinks {
			parts[i] = strconv.Itoa(l)
		}
		fmt.Fprintf(&sb, "  linkStyle %s stroke:#1a7f37,stroke-width:3px\n", strings.Join(parts, ","))
	}
	sb.WriteString("```\n")
	return sb.String()
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, xs := range [][]string{a, b} {
		for _, x := range xs {
			if !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
		}
	}
	return out
}

// mermaidLabel shortens a bundle name and escapes it for a quoted label.
func mermaidLabel(s string) string {
	return mermaidText(markdown.TruncateRunes(s, maxNodeLabel+len(" (not in channel)"), "…"))
}

// mermaidText escapes text for a quoted mermaid label: anything but letters,
// digits and a few harmless punctuation marks becomes an entity code (#NN;),
// so quotes, brackets, backticks, markdown and HTML stay text.
func mermaidText(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			sb.WriteRune(r)
		case strings.ContainsRune(" .-_+:,()/", r):
			sb.WriteRune(r)
		case r == utf8.RuneError || r < 0x20 || r == 0x7f:
			sb.WriteString("#65533;")
		default:
			fmt.Fprintf(&sb, "#%d;", r)
		}
	}
	return sb.String()
}

// maxGraphChannels bounds how many channel pictures one summary carries; a
// picture is at most a few kilobytes, so three stay well inside GitHub's
// 65,535-character summary.
const maxGraphChannels = 3

// ChangedChannelGraphs returns markdown with the before/after upgrade graph
// of each channel whose entries or edges differ between the two catalogs
// (either may be nil), at most maxGraphChannels of them; further changed
// channels are named in one line. It returns "" when no channel changed.
func ChangedChannelGraphs(before, after *catalog.Catalog) string {
	type key struct{ pkg, channel string }
	var changed []key
	seen := map[key]bool{}
	consider := func(c *catalog.Catalog) {
		if c == nil {
			return
		}
		for _, p := range c.Packages {
			for _, ch := range p.Channels {
				k := key{p.Name, ch.Name}
				if seen[k] {
					continue
				}
				seen[k] = true
				if channelSignature(before, k.pkg, k.channel) != channelSignature(after, k.pkg, k.channel) {
					changed = append(changed, k)
				}
			}
		}
	}
	consider(before)
	consider(after)
	if len(changed) == 0 {
		return ""
	}
	sort.Slice(changed, func(i, j int) bool {
		if changed[i].pkg != changed[j].pkg {
			return changed[i].pkg < changed[j].pkg
		}
		return changed[i].channel < changed[j].channel
	})
	var sb strings.Builder
	sb.WriteString("### Upgrade graphs of the changed channels\n")
	for i, k := range changed {
		if i == maxGraphChannels {
			rest := make([]string, 0, len(changed)-i)
			for _, r := range changed[i:] {
				rest = append(rest, "`"+markdown.Code(r.pkg+"/"+r.channel)+"`")
			}
			fmt.Fprintf(&sb, "\nAlso changed (not drawn): %s\n", strings.Join(rest, ", "))
			break
		}
		fmt.Fprintf(&sb, "\n**Package `%s`, channel `%s`**\n\n", markdown.Code(k.pkg), markdown.Code(k.channel))
		sb.WriteString(UpgradeGraphMermaid(before, after, k.pkg, k.channel))
	}
	return sb.String()
}

// channelSignature summarizes a channel's entries and edges, "" when absent.
func channelSignature(c *catalog.Catalog, pkg, channel string) string {
	g := buildChannelGraph(c, pkg, channel)
	if !g.exists {
		return ""
	}
	var sb strings.Builder
	for _, n := range g.nodes {
		sb.WriteString(n)
		sb.WriteByte(0)
	}
	sb.WriteByte(1)
	for _, e := range g.edges {
		sb.WriteString(e.from + "\x00" + e.to + "\x00" + string(e.kind) + "\x00")
	}
	return sb.String()
}
