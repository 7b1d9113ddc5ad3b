package catalog

import (
	"fmt"
	"sort"
	"strings"

	blang "github.com/blang/semver/v4"
)

// EdgeKind is how a channel entry declares an upgrade from an older bundle.
type EdgeKind string

const (
	EdgeReplaces  EdgeKind = "replaces"
	EdgeSkips     EdgeKind = "skips"
	EdgeSkipRange EdgeKind = "skipRange"
)

// UpgradeEdge is an upgrade into a bundle from bundle From, declared by an
// entry of channel Channel.
type UpgradeEdge struct {
	From    string
	Channel string
	Kind    EdgeKind
}

// uniqueEntries returns the first entry of each name, in entry order, as opm's
// model keeps them.
func (ch *Channel) uniqueEntries() []*ChannelEntry {
	out := make([]*ChannelEntry, 0, len(ch.Entries))
	for _, e := range ch.Entries {
		if ch.entryByName[e.Name] == e {
			out = append(out, e)
		}
	}
	return out
}

// Heads returns the entries nothing in the channel replaces or skips, in
// entry order. A valid channel has exactly one. skipRange is not an edge here,
// as in opm: two entries linked only by skipRange are two heads.
func (ch *Channel) Heads() []*ChannelEntry {
	incoming := make(map[string]struct{}, len(ch.Entries))
	entries := ch.uniqueEntries()
	for _, e := range entries {
		if e.Replaces != "" {
			incoming[e.Replaces] = struct{}{}
		}
		for _, s := range e.Skips {
			incoming[s] = struct{}{}
		}
	}
	var heads []*ChannelEntry
	for _, e := range entries {
		if _, ok := incoming[e.Name]; !ok {
			heads = append(heads, e)
		}
	}
	return heads
}

// replacesWalk is the outcome of following replaces from a channel's head, as
// opm's validateReplacesChain does.
type replacesWalk struct {
	// cycle is the loop found, first name repeated at the end; cycleAt is the
	// entry whose replaces closes it. Both empty without a cycle.
	cycle   []string
	cycleAt *ChannelEntry
	// stranded are the entries neither reached from the head nor skipped by
	// any entry, in entry order (only computed without a cycle).
	stranded []*ChannelEntry
}

// walkReplaces follows replaces from head: it stops at a name that is not an
// entry or that some entry skips, and revisiting a name is a cycle.
func (ch *Channel) walkReplaces(head *ChannelEntry) replacesWalk {
	skipped := map[string]struct{}{}
	entries := ch.uniqueEntries()
	for _, e := range entries {
		for _, s := range e.Skips {
			skipped[s] = struct{}{}
		}
	}
	visited := map[string]int{head.Name: 0}
	order := []string{head.Name}
	for cur := head; cur != nil; {
		if _, ok := skipped[cur.Replaces]; ok {
			break
		}
		if i, ok := visited[cur.Replaces]; ok {
			cycle := append(append([]string{}, order[i:]...), cur.Replaces)
			return replacesWalk{cycle: cycle, cycleAt: cur}
		}
		visited[cur.Replaces] = len(order)
		order = append(order, cur.Replaces)
		cur = ch.entryByName[cur.Replaces]
	}
	var w replacesWalk
	for _, e := range entries {
		_, seen := visited[e.Name]
		_, skip := skipped[e.Name]
		if !seen && !skip {
			w.stranded = append(w.stranded, e)
		}
	}
	return w
}

// ChannelHead returns the name of the head of a channel, or why there is none.
func (c *Catalog) ChannelHead(pkg, channel string) (string, error) {
	p := c.Package(pkg)
	if p == nil {
		return "", fmt.Errorf("package %q is not in the catalog", pkg)
	}
	ch := p.Channel(channel)
	if ch == nil {
		return "", fmt.Errorf("package %q has no channel %q", pkg, channel)
	}
	heads := ch.Heads()
	switch len(heads) {
	case 0:
		return "", fmt.Errorf("channel %q of package %q has no head: every entry is replaced or skipped by another", channel, pkg)
	case 1:
		return heads[0].Name, nil
	}
	return "", fmt.Errorf("channel %q of package %q has %d heads: %s", channel, pkg, len(heads), entryNames(heads))
}

func entryNames(es []*ChannelEntry) string {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name
	}
	return strings.Join(names, ", ")
}

// Predecessors returns every upgrade edge into bundle in any channel of the
// package: the bundle it replaces, the bundles it skips, and every bundle of
// the package whose version is inside its skipRange (whatever channel that
// bundle is in: each is a version a user may be upgrading from). Only names
// of existing bundles are returned. Edges are sorted by From, Channel, Kind.
func (c *Catalog) Predecessors(pkg, bundle string) []UpgradeEdge {
	p := c.Package(pkg)
	if p == nil {
		return nil
	}
	seen := map[UpgradeEdge]struct{}{}
	var out []UpgradeEdge
	add := func(e UpgradeEdge) {
		if e.From == bundle || p.Bundle(e.From) == nil {
			return
		}
		if _, ok := seen[e]; !ok {
			seen[e] = struct{}{}
			out = append(out, e)
		}
	}
	var versions map[string]blang.Version // bundle name -> version, built on first skipRange
	for _, ch := range p.Channels {
		e := ch.Entry(bundle)
		if e == nil || p.Channel(ch.Name) != ch {
			continue
		}
		if e.Replaces != "" {
			add(UpgradeEdge{From: e.Replaces, Channel: ch.Name, Kind: EdgeReplaces})
		}
		for _, s := range e.Skips {
			if s != "" {
				add(UpgradeEdge{From: s, Channel: ch.Name, Kind: EdgeSkips})
			}
		}
		if e.SkipRange == "" {
			continue
		}
		r, err := parseRange(e.SkipRange)
		if err != nil {
			continue
		}
		if versions == nil {
			versions = p.bundleVersions()
		}
		for name, v := range versions {
			if r(v) {
				add(UpgradeEdge{From: name, Channel: ch.Name, Kind: EdgeSkipRange})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.From != b.From {
			return a.From < b.From
		}
		if a.Channel != b.Channel {
			return a.Channel < b.Channel
		}
		return a.Kind < b.Kind
	})
	return out
}

// bundleVersions parses the version of each bundle (first of each name) as
// opm does; bundles whose version does not parse are left out.
func (p *Package) bundleVersions() map[string]blang.Version {
	out := make(map[string]blang.Version, len(p.bundleByName))
	for name, b := range p.bundleByName {
		pp, ok := b.PackageProperty()
		if !ok {
			continue
		}
		if v, err := blang.Parse(pp.Version); err == nil {
			out[name] = v
		}
	}
	return out
}

// ParseSkipRange parses a skipRange as opm parses it when it validates a catalog (blang/semver v4 ranges,
// as operator-registry v1.69+ checks them): the rule channel.skiprange-invalid of validate, for callers that
// meet a skipRange before it is in a catalog (a bundle's CSV annotation olm.skipRange).
func ParseSkipRange(s string) (blang.Range, error) { return parseRange(s) }

// parseRange parses a range in opm's syntax (blang/semver v4), turning a
// panic of the parser on hostile input into an error.
func parseRange(s string) (r blang.Range, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("range %q does not parse", s)
		}
	}()
	return blang.ParseRange(s)
}
