package template

import (
	"fmt"
	"sort"

	mmsemver "github.com/Masterminds/semver/v3"
)

// Stream priorities when choosing the default channel, and archetype priorities (stable wins).
var streamRank = map[string]int{"minor": 2, "major": 1, "": 0}

// highwater is the best default-channel candidate seen so far.
type highwater struct {
	archetype int
	kind      string
	version   *mmsemver.Version
	name      string
}

// beats says whether h is a better default channel than o, preferring a later archetype, then a higher
// version, then the preferred stream.
func (h highwater) beats(o highwater, pref string) bool {
	if h.archetype != o.archetype {
		return h.archetype > o.archetype
	}
	if !h.version.Equal(o.version) {
		return h.version.GreaterThan(o.version)
	}
	if h.kind != o.kind {
		if h.kind == pref {
			return true
		}
		if o.kind == pref {
			return false
		}
		return streamRank[h.kind] > streamRank[o.kind]
	}
	return false
}

// member is one entry of a generated channel, with what linking needs.
type member struct {
	archetype int
	kind      string
	channel   string
	name      string
	version   *mmsemver.Version
	index     int
}

// generateChannels makes the channels of a semver template: one per archetype and major (and/or minor)
// version, each bundle in the channels of its version, then linked with replaces and skips. It returns
// the channels by name and the default channel.
func generateChannels(s *Semver, pkg string, perArchetype [3][]semverEntry, beh Behaviour) ([]channelBlob, string) {
	channels := map[string]*channelBlob{}
	var members []member
	best := highwater{archetype: 0, version: mmsemver.New(0, 0, 0, "", "")}
	for ai, entries := range perArchetype {
		sorted := append([]semverEntry(nil), entries...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].version.LessThan(sorted[j].version) })
		for _, e := range sorted {
			var kinds [][2]string // stream, channel name; major first (the order does not change the result)
			if s.GenerateMajorChannels {
				kinds = append(kinds, [2]string{"major", fmt.Sprintf("%s-v%d", archetypes[ai], e.version.Major())})
			}
			if s.GenerateMinorChannels {
				kinds = append(kinds, [2]string{"minor", fmt.Sprintf("%s-v%d.%d", archetypes[ai], e.version.Major(), e.version.Minor())})
			}
			for _, k := range kinds {
				ch, ok := channels[k[1]]
				if !ok {
					ch = &channelBlob{Schema: "olm.channel", Name: k[1], Package: pkg, Entries: []channelEntry{}}
					channels[k[1]] = ch
					cand := highwater{archetype: ai, kind: k[0], version: e.version, name: k[1]}
					if cand.beats(best, s.Preference) {
						best = cand
					}
				}
				ch.Entries = append(ch.Entries, channelEntry{Name: e.name})
				members = append(members, member{archetype: ai, kind: k[0], channel: k[1], name: e.name, version: e.version, index: len(ch.Entries) - 1})
			}
		}
	}
	if beh.TupleLinking {
		linkSequences(channels, members)
	} else {
		for _, ch := range channels {
			linkChannel(ch, members)
		}
	}
	out := make([]channelBlob, 0, len(channels))
	for _, ch := range channels {
		out = append(out, *ch)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, best.name
}

func sameMinor(a, b *mmsemver.Version) bool { return a.Major() == b.Major() && a.Minor() == b.Minor() }

// linkChannel links one channel as opm up to v1.60 does: entries by version; within each run of one
// minor version the last entry skips the others, and it replaces the last entry of the previous run;
// finally the last entry replaces the one before it when their minor numbers differ.
func linkChannel(ch *channelBlob, members []member) {
	versions := map[string]*mmsemver.Version{}
	for _, m := range members {
		if _, ok := versions[m.name]; !ok {
			versions[m.name] = m.version
		}
	}
	e := ch.Entries
	sort.SliceStable(e, func(i, j int) bool { return versions[e[i].Name].LessThan(versions[e[j].Name]) })
	n := len(e)
	prevHead := ""
	for start := 0; start < n; {
		end := start + 1
		for end < n && sameMinor(versions[e[end].Name], versions[e[start].Name]) {
			end++
		}
		last := end - 1
		if prevHead != "" {
			e[last].Replaces = prevHead
		}
		prevHead = e[last].Name
		for i := start; i < last; i++ {
			if e[last].Replaces != e[i].Name {
				e[last].Skips = append(e[last].Skips, e[i].Name)
			}
		}
		start = end
	}
	if n > 1 && versions[e[n-1].Name].Minor() != versions[e[n-2].Name].Minor() {
		e[n-1].Replaces = e[n-2].Name
	}
}

// linkSequences links the channels as opm v1.61 and later do: all entries of one archetype and stream in
// one sequence by version; at every change of minor version the entry before the change replaces the
// head of the previous minor version and skips the other entries since the last major change.
func linkSequences(channels map[string]*channelBlob, members []member) {
	sort.SliceStable(members, func(i, j int) bool {
		a, b := members[i], members[j]
		if a.archetype != b.archetype {
			return a.archetype < b.archetype
		}
		if streamRank[a.kind] != streamRank[b.kind] {
			return streamRank[a.kind] < streamRank[b.kind]
		}
		return a.version.LessThan(b.version)
	})
	prevHead := ""
	skips := map[string]bool{}
	finish := func(m member) {
		entry := &channels[m.channel].Entries[m.index]
		entry.Replaces = prevHead
		var list []string
		for s := range skips {
			if s != entry.Replaces {
				list = append(list, s)
			}
		}
		sort.Strings(list)
		if len(list) > 0 {
			entry.Skips = list
		}
	}
	for i := 1; i < len(members); i++ {
		prev, cur := members[i-1], members[i]
		archChange := cur.archetype != prev.archetype
		kindChange := cur.kind != prev.kind
		majorChange := cur.version.Major() != prev.version.Major()
		minorChange := !sameMinor(cur.version, prev.version)
		if archChange || kindChange || majorChange || minorChange {
			finish(prev)
		}
		if archChange || kindChange || majorChange {
			skips = map[string]bool{}
			prevHead = ""
		} else {
			if minorChange {
				prevHead = prev.name
			}
			skips[prev.name] = true
		}
	}
	if n := len(members); n > 1 {
		last, pen := members[n-1], members[n-2]
		if last.archetype == pen.archetype && last.kind == pen.kind && last.version.Major() == pen.version.Major() {
			finish(last)
		}
	}
}
