package template

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
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
// lacks is created after the package's last channel), with its replaces, skips and skipRange. In a semver
// template its image is added to each archetype one of its channels names (candidate, fast, stable: the
// channel equals the archetype or begins with it and a dash), to stable when none does. Comments and the
// order of everything else are kept; the file is written back with two-space indentation.
func AddBundle(src []byte, add Addition) ([]byte, error) {
	if add.Image == "" || add.Name == "" || add.Package == "" {
		return nil, errors.New("a bundle to add needs its package, name and image")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("the template does not parse: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the template is not a YAML mapping")
	}
	root := doc.Content[0]
	schema := mapGet(root, "schema")
	if schema == nil {
		return nil, errors.New("the template has no schema")
	}
	var err error
	switch schema.Value {
	case SchemaBasic:
		err = addBasic(root, add)
	case SchemaSemver:
		err = addSemver(root, add)
	default:
		return nil, fmt.Errorf("unknown template schema %q", schema.Value)
	}
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	if bytes.HasPrefix(src, []byte("---\n")) && !bytes.HasPrefix(out, []byte("---")) {
		out = append([]byte("---\n"), out...)
	}
	return out, nil
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

func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		var v *yaml.Node
		switch x := kv[i+1].(type) {
		case string:
			v = scalar(x)
		case *yaml.Node:
			v = x
		}
		m.Content = append(m.Content, scalar(kv[i].(string)), v)
	}
	return m
}

func addBasic(root *yaml.Node, add Addition) error {
	entries := mapGet(root, "entries")
	if entries == nil {
		entries = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		root.Content = append(root.Content, scalar("entries"), entries)
	}
	if entries.Kind != yaml.SequenceNode {
		return errors.New("the template's entries is not a list")
	}
	lastBundle := -1
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
			lastBundle = i
		case "olm.channel":
			if p := mapGet(e, "package"); p != nil && p.Value == add.Package {
				if n := mapGet(e, "name"); n != nil {
					channels[n.Value] = e
				}
			}
		}
	}
	entry := mapping("name", add.Name)
	if add.Replaces != "" {
		entry.Content = append(entry.Content, scalar("replaces"), scalar(add.Replaces))
	}
	if len(add.Skips) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, s := range add.Skips {
			seq.Content = append(seq.Content, scalar(s))
		}
		entry.Content = append(entry.Content, scalar("skips"), seq)
	}
	if add.SkipRange != "" {
		entry.Content = append(entry.Content, scalar("skipRange"), scalar(add.SkipRange))
	}
	var newChannels []*yaml.Node
	for _, name := range add.Channels {
		ch, ok := channels[name]
		if !ok {
			ch = mapping("schema", "olm.channel", "package", add.Package, "name", name, "entries", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"})
			channels[name] = ch
			newChannels = append(newChannels, ch)
		}
		list := mapGet(ch, "entries")
		if list == nil {
			list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			ch.Content = append(ch.Content, scalar("entries"), list)
		}
		present := false
		for _, it := range list.Content {
			if n := mapGet(it, "name"); n != nil && n.Value == add.Name {
				present = true
			}
		}
		if !present {
			list.Content = append(list.Content, copyNode(entry))
		}
	}
	bundleEntry := mapping("schema", "olm.bundle", "image", add.Image)
	// Insert the new channels after the package's last channel, the bundle after the last bundle.
	insert := func(list []*yaml.Node, at int, nodes ...*yaml.Node) []*yaml.Node {
		out := append([]*yaml.Node{}, list[:at]...)
		out = append(out, nodes...)
		return append(out, list[at:]...)
	}
	content := entries.Content
	if lastBundle < 0 {
		content = append(content, bundleEntry)
	} else {
		content = insert(content, lastBundle+1, bundleEntry)
	}
	if len(newChannels) > 0 {
		// After the package's last channel; without one, before the first bundle.
		at, firstBundle := -1, -1
		for i, e := range content {
			s := mapGet(e, "schema")
			if s == nil {
				continue
			}
			if s.Value == "olm.channel" {
				if p := mapGet(e, "package"); p != nil && p.Value == add.Package {
					at = i + 1
				}
			}
			if s.Value == "olm.bundle" && firstBundle < 0 {
				firstBundle = i
			}
		}
		if at < 0 {
			at = firstBundle
		}
		content = insert(content, at, newChannels...)
	}
	entries.Content = content
	return nil
}

func copyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = nil
	for _, k := range n.Content {
		c.Content = append(c.Content, copyNode(k))
	}
	return &c
}

func addSemver(root *yaml.Node, add Addition) error {
	var targets []string
	for _, a := range archetypes {
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
	for _, a := range targets {
		arch := mapGet(root, a)
		if arch == nil {
			arch = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			root.Content = append(root.Content, scalar(a), arch)
		}
		list := mapGet(arch, "bundles")
		if list == nil {
			list = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			arch.Content = append(arch.Content, scalar("bundles"), list)
		}
		for _, it := range list.Content {
			if img := mapGet(it, "image"); img != nil && img.Value == add.Image {
				return ErrAlreadyThere
			}
		}
		list.Content = append(list.Content, mapping("image", add.Image))
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
