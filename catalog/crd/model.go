package crd

import (
	"strconv"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
)

// CRD is one CustomResourceDefinition reduced to what upgrade safety needs.
// v1beta1 input is converted to the v1 shape (one schema per version).
type CRD struct {
	// Name is metadata.name, e.g. "samples.test.example.com".
	Name string
	// Group, Kind, ListKind, Singular come from spec.group and spec.names.
	Group, Kind, ListKind, Singular string
	// Scope is "Namespaced" or "Cluster".
	Scope string
	// Conversion is spec.conversion.strategy; empty means None.
	Conversion string
	Versions   []Version
	// Pos is where the document's metadata.name is (the start of the document
	// when it has none).
	Pos catalog.Position
	// ScopeLine is the line of spec.scope, 0 when absent.
	ScopeLine int32
	// APIVersion is the apiVersion the document was written in.
	APIVersion string
	// PreserveUnknownFields is spec.preserveUnknownFields with its default
	// (true in v1beta1, false in v1): when false the API server prunes fields
	// the schema does not list.
	PreserveUnknownFields bool
	// StoredVersions is status.storedVersions when the document has it (a
	// CRD read from a cluster); bundles carry none.
	StoredVersions []Name
}

// Version is one entry of spec.versions.
type Version struct {
	Name    string
	Served  bool
	Storage bool
	// Schema is openAPIV3Schema; never nil for a CRD that Parse returned
	// without an error finding.
	Schema *Schema
	// Subresources is the canonical JSON of the version's subresources ("" when none).
	Subresources string
	// Line is where the version's name is; ServedLine where served is (0: absent).
	Line, ServedLine int32
	// nodes is the number of schema nodes, which bounds the work of comparing it.
	nodes int
}

// Version returns the version named name, or nil.
func (c *CRD) Version(name string) *Version {
	for i := range c.Versions {
		if c.Versions[i].Name == name {
			return &c.Versions[i]
		}
	}
	return nil
}

// Schema is one node of an OpenAPI v3 schema as Kubernetes restricts it.
// Attributes with a rule of their own are typed; every other attribute is
// kept in Extra as canonical JSON so that any change to it is still seen.
type Schema struct {
	// Line is where the schema starts: the line of its key (a property name,
	// "items", …) in the file.
	Line int32
	Type string
	// Nullable is the nullable flag.
	Nullable bool
	// Pattern is set when HasPattern.
	Pattern    string
	HasPattern bool
	// Default is the canonical JSON of the default, "" when there is none.
	Default string
	// Enum is the canonical JSON of each allowed value; HasEnum tells an
	// empty list from no list.
	Enum    []string
	HasEnum bool
	// Bounds are the numeric constraints given (minimum, maxLength, …), at
	// most one of each kind, in file order. Most nodes have none, so they are
	// not kept in a fixed array: large schemas have many thousand nodes.
	Bounds []Bound
	// Required lists the names in required, in file order.
	Required []Name
	// Properties in file order.
	Properties []Property
	Items      *Schema
	// AdditionalProperties is the schema form; AdditionalBool the boolean
	// form, "" when additionalProperties is absent, else "true"/"false"/"schema".
	AdditionalProperties *Schema
	AdditionalKind       string
	AllOf, AnyOf, OneOf  []*Schema
	Not                  *Schema
	// Extra holds every other attribute (format, x-kubernetes-*, …) sorted by key.
	Extra []Attr
	// lines of the typed attributes, for positions in findings.
	lines [numAttrs]int32
	// digest identifies the node with everything below it (descriptions
	// included, keys JSONSchemaProps does not have left out).
	digest [32]byte
}

// Bound is one numeric constraint.
type Bound struct {
	Kind bound
	Line int32
	Text string // canonical JSON of the value
	Num  float64
}

// bound returns the constraint of kind k, if given.
func (s *Schema) bound(k bound) (Bound, bool) {
	for _, b := range s.Bounds {
		if b.Kind == k {
			return b, true
		}
	}
	return Bound{}, false
}

// Name is a string with the line it is on.
type Name struct {
	Name string
	Line int32
}

// Property is one entry of properties.
type Property struct {
	Name   string
	Schema *Schema
}

// Attr is an attribute without a rule of its own, as canonical JSON.
type Attr struct {
	Key  string
	JSON string
	Line int32
	// Subtree marks the digest of a whole allOf, anyOf, oneOf, not or
	// additionalProperties value (see wholeKey).
	Subtree bool
}

// Property returns the property named name, or nil.
func (s *Schema) Property(name string) *Schema {
	for i := range s.Properties {
		if s.Properties[i].Name == name {
			return s.Properties[i].Schema
		}
	}
	return nil
}

type bound uint8

const (
	boundMinimum bound = iota
	boundMinLength
	boundMinItems
	boundMinProperties
	boundMaximum
	boundMaxLength
	boundMaxItems
	boundMaxProperties
	numBounds
)

var boundKeys = [numBounds]string{"minimum", "minLength", "minItems", "minProperties", "maximum", "maxLength", "maxItems", "maxProperties"}

func (b bound) isMin() bool { return b < boundMaximum }

// attr indexes the typed attributes whose line is kept.
type attr int

const (
	attrType attr = iota
	attrNullable
	attrPattern
	attrDefault
	attrEnum
	attrRequired
	attrItems
	attrAdditional
	attrAllOf
	attrAnyOf
	attrOneOf
	attrNot
	numAttrs
)

func (s *Schema) line(a attr) int32 {
	if l := s.lines[a]; l > 0 {
		return l
	}
	return s.Line
}

// NearestLine is the line, in c's file, of the node at path (as Change.Path: ^.spec.a.items) in version,
// or of its nearest ancestor that c has: where a finding about a field c lacks (a removed field) can point
// in the new CRD. It is the CRD's own line when no node of the path is there.
func (c *CRD) NearestLine(version, path string) int {
	line := c.Pos.Line
	v := c.Version(version)
	if v == nil || v.Schema == nil || !strings.HasPrefix(path, "^") {
		return line
	}
	if v.Line > 0 {
		line = int(v.Line)
	}
	s := v.Schema
	if s.Line > 0 {
		line = int(s.Line)
	}
	for _, seg := range strings.Split(strings.TrimPrefix(strings.TrimPrefix(path, "^"), "."), ".") {
		if seg == "" {
			continue
		}
		var next *Schema
		switch {
		case seg == "items":
			next = s.Items
		case seg == "additionalProperties":
			next = s.AdditionalProperties
		case seg == "not":
			next = s.Not
		default:
			if name, idx, ok := combinator(seg); ok {
				var list []*Schema
				switch name {
				case "allOf":
					list = s.AllOf
				case "anyOf":
					list = s.AnyOf
				case "oneOf":
					list = s.OneOf
				}
				if idx < len(list) {
					next = list[idx]
				}
			} else {
				next = s.Property(seg)
			}
		}
		if next == nil {
			return line
		}
		s = next
		if s.Line > 0 {
			line = int(s.Line)
		}
	}
	return line
}

// combinator splits "allOf[2]" into allOf and 2.
func combinator(seg string) (string, int, bool) {
	i := strings.IndexByte(seg, '[')
	if i <= 0 || !strings.HasSuffix(seg, "]") {
		return "", 0, false
	}
	n, err := strconv.Atoi(seg[i+1 : len(seg)-1])
	if err != nil || n < 0 {
		return "", 0, false
	}
	switch seg[:i] {
	case "allOf", "anyOf", "oneOf":
		return seg[:i], n, true
	}
	return "", 0, false
}
