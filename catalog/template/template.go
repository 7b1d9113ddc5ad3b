package template

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
)

// The template schemas opm renders.
const (
	SchemaBasic  = "olm.template.basic"
	SchemaSemver = "olm.semver"
)

// Template is one template file as read.
type Template struct {
	File   string
	Schema string
	Pos    catalog.Position // the document

	// Entries are the blobs of a basic template, in file order.
	Entries []Entry

	// Semver is the body of an olm.semver template.
	Semver *Semver
}

// Entry is one item of a basic template's entries.
type Entry struct {
	Schema, Package, Name string
	Pos                   catalog.Position
	// Canonical is the entry as opm holds it after reading: keys sorted at every level, numbers as
	// float64, no HTML escaping.
	Canonical []byte
	// Image is set for a bundle entry (an olm.bundle naming only its image).
	Image    string
	ImagePos catalog.Position
}

// Semver is the body of an olm.semver template after opm's defaults are applied.
type Semver struct {
	GenerateMajorChannels bool
	GenerateMinorChannels bool
	// Preference is the stream the default channel is taken from: "minor" or "major".
	Preference string
	// Channels are the bundles of the candidate, fast and stable archetypes, in that order.
	Channels [3][]Ref
}

// Archetypes are the semver template's channel archetypes, lowest priority first.
var archetypes = [3]string{"candidate", "fast", "stable"}

// Archetypes returns the semver template's channel archetypes, lowest priority first (a copy).
func Archetypes() [3]string { return archetypes }

// Ref is a bundle named by image in a template.
type Ref struct {
	Image string
	Pos   catalog.Position
}

// Refs lists every bundle image the template names, in file order (a semver template's candidate, fast,
// then stable bundles), each once.
func (t *Template) Refs() []Ref {
	var out []Ref
	seen := map[string]bool{}
	add := func(r Ref) {
		if !seen[r.Image] {
			seen[r.Image] = true
			out = append(out, r)
		}
	}
	for _, e := range t.Entries {
		if e.Image != "" {
			add(Ref{Image: e.Image, Pos: e.ImagePos})
		}
	}
	if t.Semver != nil {
		for _, ch := range t.Semver.Channels {
			for _, r := range ch {
				add(r)
			}
		}
	}
	return out
}

// Parse reads a template file. A template opm would refuse to read gives findings (and a nil
// Template when nothing can be rendered); lim bounds the input as for catalogs.
func Parse(file string, data []byte, lim catalog.Limits) (*Template, []catalog.Finding) {
	docs, findings := catalog.ParseDocuments(file, data, lim)
	for i := range findings {
		if findings[i].Rule != "" && !strings.HasPrefix(findings[i].Rule, "template.") {
			findings[i].Rule = ruleParse
			findings[i].Severity = catalog.SeverityError
		}
	}
	if len(findings) > 0 {
		return nil, findings
	}
	if len(docs) == 0 {
		return nil, []catalog.Finding{finding(ruleParse, catalog.Position{File: file, Line: 1}, "the file holds no template document")}
	}
	doc := &docs[0]
	t := &Template{File: file, Pos: doc.Pos}
	// opm reads the first document only; say so rather than let later ones be ignored silently.
	for i := 1; i < len(docs); i++ {
		findings = append(findings, catalog.Finding{Rule: ruleExtraDocument, Severity: catalog.SeverityWarning, Position: docs[i].Pos,
			Message: "opm reads only the first document of a template; this one is ignored", Hint: "keep one template per file"})
	}
	schema := field(&doc.Value, "schema", true)
	if schema == nil || schema.Kind != catalog.KindString {
		return nil, append(findings, finding(ruleSchema, doc.Pos, fmt.Sprintf("the template has no schema; want %q or %q", SchemaBasic, SchemaSemver)))
	}
	t.Schema = schema.Str()
	switch t.Schema {
	case SchemaBasic:
		findings = append(findings, t.parseBasic(&doc.Value)...)
	case SchemaSemver:
		findings = append(findings, t.parseSemver(&doc.Value)...)
	default:
		return nil, append(findings, finding(ruleSchema, schema.Pos(file), fmt.Sprintf("unknown template schema %q; want %q or %q", t.Schema, SchemaBasic, SchemaSemver)))
	}
	if hasErrors(findings) {
		return nil, findings
	}
	return t, findings
}

// field finds key in an object: exactly, or (fold) case-insensitively as encoding/json matches struct
// fields, the last of several spellings winning as in a Go map.
func field(v *catalog.Value, key string, fold bool) *catalog.Value {
	if v == nil || v.Kind != catalog.KindObject {
		return nil
	}
	var found *catalog.Value
	fields := v.Fields()
	for i := range fields {
		if fields[i].Key == key {
			found = &fields[i].Value
		}
	}
	if found != nil || !fold {
		return found
	}
	for i := range fields {
		if strings.EqualFold(fields[i].Key, key) {
			found = &fields[i].Value
		}
	}
	return found
}

func (t *Template) parseBasic(doc *catalog.Value) []catalog.Finding {
	var findings []catalog.Finding
	entries := field(doc, "entries", true)
	if entries == nil || entries.Kind == catalog.KindNull {
		return nil
	}
	if entries.Kind != catalog.KindArray {
		return []catalog.Finding{finding(ruleShape, entries.Pos(t.File), "entries is not a list of blobs")}
	}
	items := entries.Items()
	for i := range items {
		it := &items[i]
		pos := it.Pos(t.File)
		if it.Kind != catalog.KindObject {
			findings = append(findings, finding(ruleShape, pos, fmt.Sprintf("entry %d is not an object", i+1)))
			continue
		}
		e := Entry{Pos: pos, Canonical: appendCanonical(nil, it)}
		// opm refuses an entry with two spellings of schema, package or name (its keys compared folded).
		seen := map[string]string{}
		bad := false
		for _, f := range it.Fields() {
			k := strings.ToLower(f.Key)
			if prev, ok := seen[k]; ok && prev != f.Key {
				findings = append(findings, finding(ruleShape, f.KeyPos(t.File), fmt.Sprintf("keys %q and %q differ only in case", prev, f.Key)))
				bad = true
			}
			seen[k] = f.Key
		}
		for _, key := range []string{"schema", "package", "name"} {
			v := field(it, key, true)
			if v == nil {
				continue
			}
			if v.Kind != catalog.KindString { // null too: opm refuses "expected value for key ... to be a string"
				findings = append(findings, finding(ruleShape, v.Pos(t.File), fmt.Sprintf("%s is %s, not a string", key, v.String())))
				bad = true
				continue
			}
			switch key {
			case "schema":
				e.Schema = v.Str()
			case "package":
				e.Package = v.Str()
			case "name":
				e.Name = v.Str()
			}
		}
		if bad {
			continue
		}
		if e.Schema == "" {
			findings = append(findings, finding(ruleShape, pos, "the entry has no schema"))
			continue
		}
		if e.Schema == "olm.bundle" {
			if f := bundleEntryError(it); f != "" {
				findings = append(findings, catalog.Finding{Rule: ruleBundleEntry, Severity: catalog.SeverityError, Position: pos,
					Message: f, Hint: "a basic template's bundle entry is `schema: olm.bundle` and `image: <bundle image>` only; rendering fills in the rest"})
				continue
			}
			img := field(it, "image", true)
			e.Image = img.Str()
			e.ImagePos = img.Pos(t.File)
		} else if err := checkTyped(e.Schema, e.Canonical); err != "" {
			findings = append(findings, finding(ruleShape, pos, err))
			continue
		}
		t.Entries = append(t.Entries, e)
	}
	return findings
}

// bundleEntryError says why a basic template's olm.bundle entry is not one opm renders ("" if it is).
func bundleEntryError(v *catalog.Value) string {
	var b struct {
		Image         string            `json:"image"`
		Package       string            `json:"package"`
		Properties    []json.RawMessage `json:"properties"`
		RelatedImages []json.RawMessage `json:"relatedImages"`
	}
	if err := json.Unmarshal(appendCanonical(nil, v), &b); err != nil {
		return "the bundle entry does not decode: " + jsonErr(err)
	}
	switch {
	case b.Image == "":
		return "the bundle entry has no image"
	case b.Package != "" || len(b.Properties) > 0 || len(b.RelatedImages) > 0:
		return "unexpected fields present in basic template bundle (package, properties or relatedImages)"
	}
	return ""
}

// checkTyped decodes an entry as opm does for its schema and says what fails ("" when nothing does).
func checkTyped(schema string, canonical []byte) string {
	var err error
	switch schema {
	case "olm.package":
		err = json.Unmarshal(canonical, new(packageBlob))
	case "olm.channel":
		err = json.Unmarshal(canonical, new(channelBlob))
	case "olm.deprecations":
		err = json.Unmarshal(canonical, new(deprecationBlob))
	}
	if err != nil {
		return fmt.Sprintf("the %s entry does not decode: %s", schema, jsonErr(err))
	}
	return ""
}

func jsonErr(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

func (t *Template) parseSemver(doc *catalog.Value) []catalog.Finding {
	var findings []catalog.Finding
	s := &Semver{}
	known := map[string]bool{"schema": true, "generateMajorChannels": true, "generateMinorChannels": true,
		"defaultChannelTypePreference": true, "candidate": true, "fast": true, "stable": true}
	seen := map[string]bool{}
	for _, f := range doc.Fields() {
		key := canonicalKey(f.Key, known)
		pos := f.KeyPos(t.File)
		if key == "" {
			findings = append(findings, catalog.Finding{Rule: ruleSemverField, Severity: catalog.SeverityError, Position: pos,
				Message: fmt.Sprintf("unknown field %q in an olm.semver template", f.Key),
				Hint:    "an olm.semver template has schema, generateMajorChannels, generateMinorChannels, defaultChannelTypePreference, candidate, fast and stable"})
			continue
		}
		if seen[key] {
			findings = append(findings, finding(ruleSemverField, pos, fmt.Sprintf("field %q is set twice", key)))
			continue
		}
		seen[key] = true
		v := &f.Value
		switch key {
		case "generateMajorChannels", "generateMinorChannels":
			if v.Kind != catalog.KindBool && v.Kind != catalog.KindNull {
				findings = append(findings, finding(ruleSemverField, v.Pos(t.File), key+" is not true or false"))
				continue
			}
			if key == "generateMajorChannels" {
				s.GenerateMajorChannels = v.Bool()
			} else {
				s.GenerateMinorChannels = v.Bool()
			}
		case "defaultChannelTypePreference":
			if v.Kind != catalog.KindString && v.Kind != catalog.KindNull {
				findings = append(findings, finding(ruleSemverField, v.Pos(t.File), key+" is not a string"))
				continue
			}
			s.Preference = v.Str()
		case "candidate", "fast", "stable":
			idx := map[string]int{"candidate": 0, "fast": 1, "stable": 2}[key]
			refs, fs := t.semverBundles(key, v)
			findings = append(findings, fs...)
			s.Channels[idx] = refs
		}
	}
	if hasErrors(findings) {
		return findings
	}
	if !s.GenerateMajorChannels && !s.GenerateMinorChannels {
		s.GenerateMinorChannels = true
	}
	prefPos := doc.Pos(t.File)
	if p := field(doc, "defaultChannelTypePreference", true); p != nil {
		prefPos = p.Pos(t.File)
	}
	switch s.Preference {
	case "":
		if s.GenerateMinorChannels {
			s.Preference = "minor"
		} else {
			s.Preference = "major"
		}
	case "minor":
		if !s.GenerateMinorChannels {
			findings = append(findings, finding(ruleSemverPreference, prefPos, "defaultChannelTypePreference is minor but minor-version channels are not generated"))
		}
	case "major":
		if !s.GenerateMajorChannels {
			findings = append(findings, finding(ruleSemverPreference, prefPos, "defaultChannelTypePreference is major but major-version channels are not generated"))
		}
	default:
		findings = append(findings, finding(ruleSemverPreference, prefPos, fmt.Sprintf("unknown defaultChannelTypePreference %q; valid values are major and minor", s.Preference)))
	}
	t.Semver = s
	return findings
}

// canonicalKey maps a key to the field encoding/json would fill: exact, else case-insensitive ("" if none).
func canonicalKey(k string, known map[string]bool) string {
	if known[k] {
		return k
	}
	for name := range known {
		if strings.EqualFold(name, k) {
			return name
		}
	}
	return ""
}

func (t *Template) semverBundles(archetype string, v *catalog.Value) ([]Ref, []catalog.Finding) {
	if v.Kind == catalog.KindNull {
		return nil, nil
	}
	if v.Kind != catalog.KindObject {
		return nil, []catalog.Finding{finding(ruleSemverField, v.Pos(t.File), archetype+" is not an object with a bundles list")}
	}
	var refs []Ref
	var findings []catalog.Finding
	for _, f := range v.Fields() {
		if canonicalKey(f.Key, map[string]bool{"bundles": true}) == "" {
			findings = append(findings, finding(ruleSemverField, f.KeyPos(t.File), fmt.Sprintf("unknown field %q in %s (only bundles)", f.Key, archetype)))
			continue
		}
		list := &f.Value
		if list.Kind == catalog.KindNull {
			continue
		}
		if list.Kind != catalog.KindArray {
			findings = append(findings, finding(ruleSemverField, list.Pos(t.File), archetype+".bundles is not a list"))
			continue
		}
		for _, it := range list.Items() {
			if it.Kind != catalog.KindObject {
				findings = append(findings, finding(ruleSemverField, it.Pos(t.File), "a bundle of "+archetype+" is not an object with an image"))
				continue
			}
			var ref Ref
			ref.Pos = it.Pos(t.File)
			for _, g := range it.Fields() {
				if canonicalKey(g.Key, map[string]bool{"image": true}) == "" {
					findings = append(findings, finding(ruleSemverField, g.KeyPos(t.File), fmt.Sprintf("unknown field %q in a bundle of %s (only image)", g.Key, archetype)))
					continue
				}
				if g.Value.Kind != catalog.KindString && g.Value.Kind != catalog.KindNull {
					findings = append(findings, finding(ruleSemverField, g.Value.Pos(t.File), "image is not a string"))
					continue
				}
				ref.Image = g.Value.Str()
				ref.Pos = g.Value.Pos(t.File)
			}
			refs = append(refs, ref)
		}
	}
	return refs, findings
}

// appendCanonical writes v as opm holds a template entry after reading it into a Go map: keys sorted (the
// last of duplicates kept), numbers as float64 (Value.Str already spells them so), strings without HTML
// escaping.
func appendCanonical(b []byte, v *catalog.Value) []byte {
	switch v.Kind {
	case catalog.KindNull:
		return append(b, "null"...)
	case catalog.KindBool, catalog.KindNumber:
		return append(b, v.Str()...)
	case catalog.KindString:
		return catalog.AppendJSONString(b, v.Str(), false)
	case catalog.KindArray:
		b = append(b, '[')
		for i, it := range v.Items() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, &it)
		}
		return append(b, ']')
	case catalog.KindObject:
		fields := v.Fields()
		order := make([]int, len(fields))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool { return fields[order[i]].Key < fields[order[j]].Key })
		b = append(b, '{')
		wrote := false
		for n, i := range order {
			if n+1 < len(order) && fields[order[n+1]].Key == fields[i].Key {
				continue
			}
			if wrote {
				b = append(b, ',')
			}
			wrote = true
			b = catalog.AppendJSONString(b, fields[i].Key, false)
			b = append(b, ':')
			b = appendCanonical(b, &fields[i].Value)
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

func hasErrors(fs []catalog.Finding) bool {
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return true
		}
	}
	return false
}
