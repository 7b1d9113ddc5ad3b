package authoring

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/template"
)

// Addition is one bundle to add to a template, as a catalog update does after the bundle's image was
// pushed: the image by digest, and the upgrade edges its CSV and annotations declare.
type Addition struct {
	Package string
	// Name is the CSV's name (the bundle's name in channels); Image its image, pinned by digest.
	Name, Image string
	// Channels are the annotations' channels.
	Channels []string
	// Replaces, Skips and SkipRange are the CSV's spec.replaces, spec.skips and olm.skipRange annotation.
	Replaces  string
	Skips     []string
	SkipRange string
}

// ErrAlreadyThere: the template names the image already; nothing to add.
var ErrAlreadyThere = errors.New("the template already names this bundle image")

// AddBundle adds a bundle to a template and returns the new template. In a basic template the bundle gets
// an olm.bundle entry (after the last one) and an entry in each of its channels (a channel the template
// lacks is created after the package's last channel), with its replaces, skips and skipRange; a bundle whose
// CSV names no replaces and no skips replaces the channel's head (the community's catalog update does the
// same: otherwise the channel would have two heads, which opm refuses). In a semver
// template its image is added to each archetype one of its channels names (candidate, fast, stable: the
// channel equals the archetype or begins with it and a dash), to stable when none does.
//
// The file is edited, not written anew: the new entries are inserted as lines of their own where they go,
// spelled and ordered like their neighbours, so the difference is the new lines only — lists keep their
// indentation, long scalars their folding, comments stay. The edit must parse to exactly what writing the
// whole document anew gives; when it cannot be made so (a flow-style list, an empty one), the document is
// written anew with two-space indentation.
func AddBundle(src []byte, add Addition) ([]byte, error) {
	edited, rewritten, err := addBundle(src, add)
	if err != nil {
		return nil, err
	}
	if edited != nil {
		return edited, nil
	}
	return rewritten, nil
}

// addBundle returns both the template edited in place (nil when that cannot be done faithfully) and the
// template written anew.
func addBundle(src []byte, add Addition) (edited, rewritten []byte, err error) {
	if add.Image == "" || add.Name == "" || add.Package == "" {
		return nil, nil, errors.New("a bundle to add needs its package, name and image")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, fmt.Errorf("the template does not parse: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, errors.New("the template is not a YAML mapping")
	}
	root := doc.Content[0]
	schema := mapGet(root, "schema")
	if schema == nil {
		return nil, nil, errors.New("the template has no schema")
	}
	ed := &textEdits{}
	switch schema.Value {
	case template.SchemaBasic:
		err = addBasic(root, add, ed)
	case template.SchemaSemver:
		err = addSemver(root, add, ed)
	default:
		return nil, nil, fmt.Errorf("unknown template schema %q", schema.Value)
	}
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	out := buf.Bytes()
	if bytes.HasPrefix(src, []byte("---\n")) && !bytes.HasPrefix(out, []byte("---")) {
		out = append([]byte("---\n"), out...)
	}
	if edited, ok := ed.apply(src); ok && sameYAML(edited, out) {
		return edited, out, nil
	}
	return nil, out, nil
}

// mapGet finds key in a mapping node, case-insensitively as opm reads templates.
func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if strings.EqualFold(m.Content[i].Value, key) {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func addBasic(root *yaml.Node, add Addition, ed *textEdits) error {
	entries := mapGet(root, "entries")
	if entries == nil {
		entries = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		k := scalar("entries")
		root.Content = append(root.Content, k, entries)
		ed.addKey(root, k, entries)
	}
	if entries.Kind != yaml.SequenceNode {
		return errors.New("the template's entries is not a list")
	}
	lastBundle, lastChannel, firstBundle := -1, -1, -1
	var bundleLike, channelLike *yaml.Node
	channels := map[string]*yaml.Node{}
	for i, e := range entries.Content {
		s := mapGet(e, "schema")
		if s == nil {
			continue
		}
		switch s.Value {
		case "olm.bundle":
			if img := mapGet(e, "image"); img != nil && img.Value == add.Image {
				return ErrAlreadyThere
			}
			lastBundle, bundleLike = i, e
			if firstBundle < 0 {
				firstBundle = i
			}
		case "olm.channel":
			channelLike = e
			if p := mapGet(e, "package"); p != nil && p.Value == add.Package {
				lastChannel = i
				if n := mapGet(e, "name"); n != nil {
					channels[n.Value] = e
				}
			}
		}
	}
	var newChannels []*yaml.Node
	for _, name := range add.Channels {
		ch, ok := channels[name]
		if !ok {
			ch = like(channelLike, "schema", "olm.channel", "package", add.Package, "name", name, "entries", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"})
			channels[name] = ch
			newChannels = append(newChannels, ch)
		}
		list := mapGet(ch, "entries")
		if list == nil {
			list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			k := scalar("entries")
			ch.Content = append(ch.Content, k, list)
			ed.addKey(ch, k, list)
		}
		present := false
		var entryLike *yaml.Node
		for _, it := range list.Content {
			if n := mapGet(it, "name"); n != nil && n.Value == add.Name {
				present = true
			}
			entryLike = it
		}
		if !present {
			replaces := add.Replaces
			if replaces == "" && len(add.Skips) == 0 {
				// A CSV that names no predecessor would become a second head of the channel, which opm refuses:
				// the bundle goes after the channel's head, as the community's catalog update adds it.
				if head := basicChannelHead(list); head != "" && head != add.Name {
					replaces = head
				}
			}
			kv := []any{"name", add.Name}
			if replaces != "" {
				kv = append(kv, "replaces", replaces)
			}
			entry := like(entryLike, kv...)
			if len(add.Skips) > 0 {
				seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
				for _, s := range add.Skips {
					seq.Content = append(seq.Content, scalar(s))
				}
				entry.Content = append(entry.Content, keyLike(entryLike, "skips"), seq)
			}
			if add.SkipRange != "" {
				entry.Content = append(entry.Content, keyLike(entryLike, "skipRange"), scalar(add.SkipRange))
			}
			list.Content = append(list.Content, entry)
			ed.insert(list, len(list.Content)-1, entry)
		}
	}
	bundleEntry := like(bundleLike, "schema", "olm.bundle", "image", add.Image)
	// The new channels go after the package's last channel (without one, before the first bundle), the bundle
	// after the last bundle; positions in the list as it was.
	n := len(entries.Content)
	bundleAt := n
	if lastBundle >= 0 {
		bundleAt = lastBundle + 1
	}
	channelsAt := n
	switch {
	case lastChannel >= 0:
		channelsAt = lastChannel + 1
	case firstBundle >= 0:
		channelsAt = firstBundle
	}
	var content []*yaml.Node
	for i := 0; i <= n; i++ {
		if i == channelsAt {
			content = append(content, newChannels...)
		}
		if i == bundleAt {
			content = append(content, bundleEntry)
		}
		if i < n {
			content = append(content, entries.Content[i])
		}
	}
	ed.insert(entries, channelsAt, newChannels...)
	ed.insert(entries, bundleAt, bundleEntry)
	entries.Content = content
	return nil
}

// basicChannelHead is the head of a basic template's channel entries as opm finds it — the one entry no other
// entry replaces or skips — or "" when there is none or more than one.
func basicChannelHead(list *yaml.Node) string {
	incoming := map[string]bool{}
	var names []string
	for _, it := range list.Content {
		n := mapGet(it, "name")
		if n == nil || n.Value == "" {
			continue
		}
		names = append(names, n.Value)
		if r := mapGet(it, "replaces"); r != nil && r.Value != "" {
			incoming[r.Value] = true
		}
		if sk := mapGet(it, "skips"); sk != nil && sk.Kind == yaml.SequenceNode {
			for _, v := range sk.Content {
				incoming[v.Value] = true
			}
		}
	}
	head := ""
	for _, n := range names {
		if incoming[n] {
			continue
		}
		if head != "" && head != n {
			return ""
		}
		head = n
	}
	return head
}

// like makes a mapping of the keys and values kv (a value is a string or a node) spelled and ordered as the
// sibling has them: its keys in its order and with its case, the others after.
func like(sibling *yaml.Node, kv ...any) *yaml.Node {
	type pair struct {
		key string
		val *yaml.Node
	}
	var pairs []pair
	for i := 0; i+1 < len(kv); i += 2 {
		var v *yaml.Node
		switch x := kv[i+1].(type) {
		case string:
			v = scalar(x)
		case *yaml.Node:
			v = x
		}
		pairs = append(pairs, pair{kv[i].(string), v})
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	used := make([]bool, len(pairs))
	if sibling != nil && sibling.Kind == yaml.MappingNode {
		for i := 0; i < len(sibling.Content); i += 2 {
			for j, p := range pairs {
				if !used[j] && strings.EqualFold(sibling.Content[i].Value, p.key) {
					used[j] = true
					m.Content = append(m.Content, scalar(sibling.Content[i].Value), p.val)
				}
			}
		}
	}
	for j, p := range pairs {
		if !used[j] {
			m.Content = append(m.Content, keyLike(sibling, p.key), p.val)
		}
	}
	return m
}

// keyLike is key spelled as the sibling mapping spells its keys: capitalised when they are.
func keyLike(sibling *yaml.Node, key string) *yaml.Node {
	if sibling != nil && sibling.Kind == yaml.MappingNode && len(sibling.Content) > 0 {
		if k := sibling.Content[0].Value; k != "" && k[0] >= 'A' && k[0] <= 'Z' && key[0] >= 'a' && key[0] <= 'z' {
			return scalar(strings.ToUpper(key[:1]) + key[1:])
		}
	}
	return scalar(key)
}

func addSemver(root *yaml.Node, add Addition, ed *textEdits) error {
	var targets []string
	for _, a := range template.Archetypes() {
		for _, ch := range add.Channels {
			if ch == a || strings.HasPrefix(ch, a+"-") {
				targets = append(targets, a)
				break
			}
		}
	}
	if len(targets) == 0 {
		targets = []string{"stable"}
	}
	// Another archetype, for the spelling of new keys.
	var archLike *yaml.Node
	for _, a := range template.Archetypes() {
		if n := mapGet(root, a); n != nil && n.Kind == yaml.MappingNode && archLike == nil {
			archLike = n
		}
	}
	for _, a := range targets {
		arch := mapGet(root, a)
		if arch == nil {
			arch = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			k := keyLike(root, a)
			root.Content = append(root.Content, k, arch)
			ed.addKey(root, k, arch)
		}
		list := mapGet(arch, "bundles")
		if list == nil {
			list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			k := keyLike(archLike, "bundles")
			if arch.Kind == yaml.MappingNode && len(arch.Content) > 0 {
				k = keyLike(arch, "bundles")
			}
			arch.Content = append(arch.Content, k, list)
			ed.addKey(arch, k, list)
		}
		var itemLike *yaml.Node
		for _, it := range list.Content {
			if img := mapGet(it, "image"); img != nil && img.Value == add.Image {
				return ErrAlreadyThere
			}
			itemLike = it
		}
		if itemLike == nil && archLike != nil {
			if l := mapGet(archLike, "bundles"); l != nil && len(l.Content) > 0 {
				itemLike = l.Content[0]
			}
		}
		item := like(itemLike, "image", add.Image)
		list.Content = append(list.Content, item)
		ed.insert(list, len(list.Content)-1, item)
	}
	return nil
}

// AdditionOf is what adding bundle b, pushed as image, to a template means: its package, CSV name,
// annotations' channels, and the CSV's spec.replaces, spec.skips and olm.skipRange annotation.
func AdditionOf(b *bundle.Bundle, image string) (Addition, error) {
	if b == nil || b.CSV == nil {
		return Addition{}, errors.New("the bundle has no ClusterServiceVersion")
	}
	add := Addition{Package: b.Package, Name: b.CSV.Name, Image: image, Channels: append([]string(nil), b.Channels...)}
	csv := &b.CSV.Value
	if spec := csv.Get("spec"); spec != nil {
		if r := spec.Get("replaces"); r != nil && r.Kind == catalog.KindString {
			add.Replaces = r.Str()
		}
		if sk := spec.Get("skips"); sk != nil {
			for _, it := range sk.Items() {
				if it.Kind == catalog.KindString {
					add.Skips = append(add.Skips, it.Str())
				}
			}
		}
	}
	if md := csv.Get("metadata"); md != nil {
		if ann := md.Get("annotations"); ann != nil {
			if sr := ann.Get("olm.skipRange"); sr != nil && sr.Kind == catalog.KindString {
				add.SkipRange = sr.Str()
			}
		}
	}
	if add.Package == "" || add.Name == "" || len(add.Channels) == 0 {
		return Addition{}, errors.New("the bundle names no package, no CSV name or no channel")
	}
	return add, nil
}
