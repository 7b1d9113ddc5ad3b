package crd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
)

// Limits bound the size of the schemas Parse accepts, so that a hostile or
// broken file cannot make the diff run for long or use much memory.
type Limits struct {
	// MaxDepth is the deepest nesting of schema nodes in one version.
	MaxDepth int
	// MaxNodes is the most schema nodes in one CRD (all versions together).
	MaxNodes int
}

// DefaultLimits are far above any real CRD: the largest CRDs in the
// community catalogs have a few thousand nodes and nest about 30 deep.
var DefaultLimits = Limits{MaxDepth: 80, MaxNodes: 500_000}

// schemaKey reports whether k is a field of apiextensions.k8s.io/v1
// JSONSchemaProps. The API server (and OLM's preflight, which decodes into that
// type) drops every other key, so a change to one of them changes nothing.
func schemaKey(k string) bool {
	switch k {
	case "id", "$schema", "$ref", "description", "type", "format", "title", "default",
		"maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength",
		"pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties",
		"minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties",
		"additionalProperties", "patternProperties", "dependencies", "additionalItems",
		"definitions", "externalDocs", "example", "nullable",
		"x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
		"x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
		"x-kubernetes-map-type", "x-kubernetes-validations":
		return true
	}
	return false
}

// wholeKey reports whether OLM's preflight compares the attribute k of a node
// as a whole, subtree included, when it compares the node: it splits only
// properties and items off a node, so a change anywhere below allOf, anyOf,
// oneOf, not or additionalProperties, even to a description, is an unhandled
// change of the node that holds them (besides what the nested nodes show).
func wholeKey(k string) bool {
	switch k {
	case "allOf", "anyOf", "oneOf", "not", "additionalProperties":
		return true
	}
	return false
}

// digestOf hashes text; nodeDigest hashes a node's parts, each a key and
// the digest of its value, sorted by key. A schema child's part is the child's
// own digest, so every node is hashed once and the whole schema in linear time.
func digestOf(text string) [sha256.Size]byte { return sha256.Sum256([]byte(text)) }

type digestPart struct {
	key  string
	line int32
	sum  [sha256.Size]byte
}

func nodeDigest(parts []digestPart) [sha256.Size]byte {
	sort.Slice(parts, func(i, j int) bool { return parts[i].key < parts[j].key })
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p.key))
		h.Write([]byte{0})
		h.Write(p.sum[:])
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// propertiesDigest hashes the properties by name, in name order.
func propertiesDigest(props []Property) [sha256.Size]byte {
	idx := make([]int, len(props))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return props[idx[a]].Name < props[idx[b]].Name })
	h := sha256.New()
	for _, i := range idx {
		h.Write([]byte(props[i].Name))
		h.Write([]byte{0})
		h.Write(props[i].Schema.digest[:])
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// listDigest hashes the digests of a list of schemas, in order.
func listDigest(list []*Schema) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range list {
		h.Write(c.digest[:])
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// schemaBuilder turns positioned values into Schema nodes, counting nodes.
type schemaBuilder struct {
	ctx   context.Context
	lim   Limits
	nodes int
	// err is the first limit or shape problem met, with its line.
	err     string
	errLine int32
	errRule string
}

// fail records a schema of the wrong shape; tooLarge a limit reached.
func (b *schemaBuilder) fail(line int32, format string, args ...any) {
	b.failRule(RuleInvalidCRD, line, format, args...)
}

func (b *schemaBuilder) tooLarge(line int32, format string, args ...any) {
	b.failRule(RuleSchemaTooLarge, line, format, args...)
}

func (b *schemaBuilder) failRule(rule string, line int32, format string, args ...any) {
	if b.err == "" {
		b.err = fmt.Sprintf(format, args...)
		b.errLine, b.errRule = line, rule
	}
}

// build converts v (a schema object) found at keyLine. depth counts schema levels.
func (b *schemaBuilder) build(v *catalog.Value, keyLine int32, depth int, path string) *Schema {
	if b.err != "" {
		return nil
	}
	// null is what encoding/json (and so the API server and the preflight,
	// which decode into apiextensions' types) reads as the zero value: an
	// empty schema here, an absent attribute below.
	if v.Kind != catalog.KindObject && v.Kind != catalog.KindNull {
		b.fail(v.Line, "schema at %s is a %s, want an object", path, v.Kind)
		return nil
	}
	if depth > b.lim.MaxDepth {
		b.tooLarge(v.Line, "schema nests deeper than %d levels at %s", b.lim.MaxDepth, path)
		return nil
	}
	b.nodes++
	if b.nodes%1024 == 0 && b.ctx != nil {
		if err := b.ctx.Err(); err != nil {
			b.failRule(RuleSchemaTooLarge, v.Line, "not read to the end: %v", err)
			return nil
		}
	}
	if b.nodes > b.lim.MaxNodes {
		b.tooLarge(v.Line, "schema has more than %d nodes", b.lim.MaxNodes)
		return nil
	}
	s := &Schema{Line: keyLine}
	if s.Line == 0 {
		s.Line = v.Line
	}
	fields := v.Fields()
	parts := make([]digestPart, 0, len(fields))
	for i := range fields {
		f := &fields[i]
		fv := &f.Value
		if !schemaKey(f.Key) || fv.Kind == catalog.KindNull {
			continue
		}
		switch f.Key {
		case "properties", "allOf", "anyOf", "oneOf", "not":
			// Their parts are added below, from the children's digests.
		case "items", "additionalProperties":
			if fv.Kind != catalog.KindObject {
				parts = append(parts, digestPart{f.Key, f.KeyLine, digestOf(canonicalJSON(fv))})
			}
		default:
			parts = append(parts, digestPart{f.Key, f.KeyLine, digestOf(canonicalJSON(fv))})
		}
		switch f.Key {
		case "type":
			s.Type = scalarText(fv)
			s.lines[attrType] = f.KeyLine
		case "nullable":
			s.Nullable = fv.Kind == catalog.KindBool && fv.Str() == "true"
			s.lines[attrNullable] = f.KeyLine
		case "pattern":
			s.Pattern, s.HasPattern = scalarText(fv), true
			s.lines[attrPattern] = f.KeyLine
		case "default":
			s.Default = canonicalJSON(fv)
			s.lines[attrDefault] = f.KeyLine
		case "enum":
			s.HasEnum = true
			s.lines[attrEnum] = f.KeyLine
			items := fv.Items()
			for j := range items {
				s.Enum = append(s.Enum, canonicalJSON(&items[j]))
			}
			if fv.Kind != catalog.KindArray {
				s.Enum = append(s.Enum, canonicalJSON(fv))
			}
		case "required":
			s.lines[attrRequired] = f.KeyLine
			items := fv.Items()
			for j := range items {
				s.Required = append(s.Required, Name{Name: scalarText(&items[j]), Line: items[j].Line})
			}
		case "properties":
			if fv.Kind != catalog.KindObject {
				b.fail(fv.Line, "properties at %s is a %s, want an object", path, fv.Kind)
				return nil
			}
			props := fv.Fields()
			s.Properties = make([]Property, 0, len(props))
			for j := range props {
				pf := &props[j]
				c := b.build(&pf.Value, pf.KeyLine, depth+1, path+"."+pf.Key)
				if c == nil {
					return nil
				}
				s.Properties = append(s.Properties, Property{Name: pf.Key, Schema: c})
			}
			parts = append(parts, digestPart{f.Key, f.KeyLine, propertiesDigest(s.Properties)})
		case "items":
			s.lines[attrItems] = f.KeyLine
			if fv.Kind == catalog.KindArray {
				// A tuple of schemas: Kubernetes rejects it; keep it comparable.
				s.Extra = append(s.Extra, Attr{Key: f.Key, JSON: canonicalJSON(fv), Line: f.KeyLine})
				continue
			}
			if s.Items = b.build(fv, f.KeyLine, depth+1, path+".items"); s.Items == nil {
				return nil
			}
			parts = append(parts, digestPart{f.Key, f.KeyLine, s.Items.digest})
		case "additionalProperties":
			s.lines[attrAdditional] = f.KeyLine
			if fv.Kind == catalog.KindBool {
				s.AdditionalKind = fv.Str()
				continue
			}
			s.AdditionalKind = "schema"
			if s.AdditionalProperties = b.build(fv, f.KeyLine, depth+1, path+".additionalProperties"); s.AdditionalProperties == nil {
				return nil
			}
			parts = append(parts, digestPart{f.Key, f.KeyLine, s.AdditionalProperties.digest})
		case "allOf", "anyOf", "oneOf":
			if fv.Kind != catalog.KindArray {
				b.fail(fv.Line, "%s at %s is a %s, want a list", f.Key, path, fv.Kind)
				return nil
			}
			items := fv.Items()
			list := make([]*Schema, 0, len(items))
			for j := range items {
				c := b.build(&items[j], items[j].Line, depth+1, fmt.Sprintf("%s.%s[%d]", path, f.Key, j))
				if c == nil {
					return nil
				}
				list = append(list, c)
			}
			if len(list) > 0 { // an empty list is no list
				parts = append(parts, digestPart{f.Key, f.KeyLine, listDigest(list)})
			}
			switch f.Key {
			case "allOf":
				s.AllOf, s.lines[attrAllOf] = list, f.KeyLine
			case "anyOf":
				s.AnyOf, s.lines[attrAnyOf] = list, f.KeyLine
			default:
				s.OneOf, s.lines[attrOneOf] = list, f.KeyLine
			}
		case "not":
			s.lines[attrNot] = f.KeyLine
			if s.Not = b.build(fv, f.KeyLine, depth+1, path+".not"); s.Not == nil {
				return nil
			}
			parts = append(parts, digestPart{f.Key, f.KeyLine, s.Not.digest})
		default:
			if bi := boundIndex(f.Key); bi >= 0 {
				nb := Bound{Kind: bound(bi), Line: f.KeyLine, Text: canonicalJSON(fv), Num: number(fv)}
				replaced := false
				for j := range s.Bounds {
					if s.Bounds[j].Kind == nb.Kind {
						s.Bounds[j], replaced = nb, true
					}
				}
				if !replaced {
					s.Bounds = append(s.Bounds, nb)
				}
				continue
			}
			if f.Key == "description" {
				continue // OLM's preflight ignores descriptions
			}
			s.Extra = append(s.Extra, Attr{Key: f.Key, JSON: canonicalJSON(fv), Line: f.KeyLine})
		}
	}
	for _, p := range parts {
		if wholeKey(p.key) {
			s.Extra = append(s.Extra, Attr{Key: p.key, JSON: "sha256:" + hex.EncodeToString(p.sum[:8]), Line: p.line, Subtree: true})
		}
	}
	s.digest = nodeDigest(parts)
	if len(s.Extra) > 1 {
		sort.Slice(s.Extra, func(i, j int) bool { return s.Extra[i].Key < s.Extra[j].Key })
	}
	return s
}

func boundIndex(k string) int {
	for i, b := range boundKeys {
		if b == k {
			return i
		}
	}
	return -1
}

// scalarText is the text of a scalar, or its canonical JSON when it is not a string.
func scalarText(v *catalog.Value) string {
	if v.Kind == catalog.KindString {
		return v.Str()
	}
	return canonicalJSON(v)
}

// number reads a numeric constraint; a non-number compares as NaN, which the
// rules treat as a change they cannot classify.
func number(v *catalog.Value) float64 {
	if v.Kind != catalog.KindNumber {
		return math.NaN()
	}
	f, err := strconv.ParseFloat(v.Str(), 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// canonicalJSON renders v as JSON with object keys sorted and numbers in
// their shortest form, so that equal values have equal text.
func canonicalJSON(v *catalog.Value) string {
	switch v.Kind {
	case catalog.KindNull:
		return "null"
	case catalog.KindBool:
		return v.Str()
	case catalog.KindNumber:
		return canonicalNumber(v.Str())
	case catalog.KindString:
		return strconv.Quote(v.Str())
	}
	var sb strings.Builder
	writeCanonical(&sb, v)
	return sb.String()
}

func canonicalNumber(s string) string {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return s
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func writeCanonical(sb *strings.Builder, v *catalog.Value) {
	switch v.Kind {
	case catalog.KindObject:
		fields := v.Fields()
		idx := make([]int, len(fields))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return fields[idx[a]].Key < fields[idx[b]].Key })
		sb.WriteByte('{')
		for n, i := range idx {
			if n > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Quote(fields[i].Key))
			sb.WriteByte(':')
			writeCanonical(sb, &fields[i].Value)
		}
		sb.WriteByte('}')
	case catalog.KindArray:
		sb.WriteByte('[')
		items := v.Items()
		for i := range items {
			if i > 0 {
				sb.WriteByte(',')
			}
			writeCanonical(sb, &items[i])
		}
		sb.WriteByte(']')
	default:
		sb.WriteString(canonicalJSON(v))
	}
}
