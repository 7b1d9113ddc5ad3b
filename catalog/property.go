package catalog

import (
	"errors"
	"fmt"
	"strconv"

	mmsemver "github.com/Masterminds/semver/v3"
	blang "github.com/blang/semver/v4"
)

// Property types OLM knows. Others are kept verbatim (Property.Value).
const (
	PropertyPackage         = "olm.package"
	PropertyGVK             = "olm.gvk"
	PropertyPackageRequired = "olm.package.required"
	PropertyGVKRequired     = "olm.gvk.required"
	PropertyBundleObject    = "olm.bundle.object"
	PropertyCSVMetadata     = "olm.csv.metadata"
	PropertyDeprecated      = "olm.deprecated"
	PropertyChannel         = "olm.channel"
	PropertyConstraint      = "olm.constraint"
)

// Property is one entry of a blob's properties.
type Property struct {
	Type string
	// Value is the property's value as written, nil when the value key is absent.
	Value *Value
	Pos   Position // the property object
	// TypePos and ValuePos point at the type and value (at the property when absent).
	TypePos  Position
	ValuePos Position
	// Index is the property's place in the list.
	Index int
}

// PackageProperty is the value of olm.package: the bundle's package and version.
type PackageProperty struct {
	PackageName    string
	Version        string
	PackageNamePos Position
	VersionPos     Position
}

// GVK is the value of olm.gvk and olm.gvk.required.
type GVK struct {
	Group, Version, Kind string
}

// PackageRequired is the value of olm.package.required.
type PackageRequired struct {
	PackageName     string
	VersionRange    string
	PackageNamePos  Position
	VersionRangePos Position
}

// ChannelProperty is the value of olm.channel (internal to OLM).
type ChannelProperty struct {
	ChannelName string
	Priority    int
}

// CSVMetadata is part of the value of olm.csv.metadata; the whole is in the Property's Value.
type CSVMetadata struct {
	DisplayName    string
	Description    string
	Maturity       string
	MinKubeVersion string
	Keywords       []string
	Annotations    map[string]string
	// OwnedCRDs are the crdDescriptions.owned entries: name (plural.group), version, kind.
	OwnedCRDs []CRDDescription
}

// CRDDescription names one CRD a CSV owns or requires.
type CRDDescription struct {
	Name, Version, Kind string
}

// knownPropertyShape is the Go type opm decodes a property value of that type
// into; nil for types opm keeps as raw JSON.
func knownPropertyShape(typ string) *shape {
	switch typ {
	case PropertyPackage:
		return shPackageProp
	case PropertyPackageRequired:
		return shPackageRequiredProp
	case PropertyGVK, PropertyGVKRequired:
		return shGVKProp
	case PropertyBundleObject:
		return shBundleObjectProp
	case PropertyCSVMetadata:
		return shCSVMetadataProp
	case PropertyChannel:
		return shChannelProp
	}
	return nil
}

// decodeProperties reads a properties list (already shape-checked by the blob's check).
func decodeProperties(d *Doc, list *Value) []Property {
	if list == nil || list.Kind != KindArray {
		return nil
	}
	file := d.Pos.File
	items := list.Items()
	out := make([]Property, 0, len(items))
	for i := range items {
		pv := &items[i]
		if pv.Kind != KindObject && pv.Kind != KindNull {
			continue // a type error the blob check reported
		}
		p := Property{Pos: pv.Pos(file), Index: i}
		p.Type, p.TypePos = strAt(pv, "type", file)
		if f := fieldFold(pv, "value"); f != nil {
			p.Value = &f.Value
			p.ValuePos = f.Value.Pos(file)
		} else {
			p.ValuePos = p.Pos
		}
		out = append(out, p)
	}
	return out
}

// problems returns what opm's property.Parse refuses in this property: a
// missing value, or a value of a known type that does not fit its Go type.
func (p *Property) problems() []shapeError {
	if p.Value == nil {
		return []shapeError{{path: "value", want: "a value"}}
	}
	s := knownPropertyShape(p.Type)
	if s == nil {
		return nil
	}
	return checkShape(p.Value, s, "value", nil)
}

// Valid reports whether opm would decode the property.
func (p *Property) Valid() bool { return len(p.problems()) == 0 }

func (p *Property) str(key string) (string, Position) {
	if p.Value == nil || p.Value.Kind != KindObject {
		return "", p.ValuePos
	}
	return strAt(p.Value, key, p.Pos.File)
}

// AsPackage decodes an olm.package property.
func (p *Property) AsPackage() (PackageProperty, bool) {
	if p.Type != PropertyPackage || !p.Valid() {
		return PackageProperty{}, false
	}
	var out PackageProperty
	out.PackageName, out.PackageNamePos = p.str("packageName")
	out.Version, out.VersionPos = p.str("version")
	return out, true
}

// AsGVK decodes an olm.gvk or olm.gvk.required property.
func (p *Property) AsGVK() (GVK, bool) {
	if (p.Type != PropertyGVK && p.Type != PropertyGVKRequired) || !p.Valid() {
		return GVK{}, false
	}
	var g GVK
	g.Group, _ = p.str("group")
	g.Version, _ = p.str("version")
	g.Kind, _ = p.str("kind")
	return g, true
}

// AsPackageRequired decodes an olm.package.required property.
func (p *Property) AsPackageRequired() (PackageRequired, bool) {
	if p.Type != PropertyPackageRequired || !p.Valid() {
		return PackageRequired{}, false
	}
	var r PackageRequired
	r.PackageName, r.PackageNamePos = p.str("packageName")
	r.VersionRange, r.VersionRangePos = p.str("versionRange")
	return r, true
}

// AsChannel decodes an olm.channel property.
func (p *Property) AsChannel() (ChannelProperty, bool) {
	if p.Type != PropertyChannel || !p.Valid() {
		return ChannelProperty{}, false
	}
	var c ChannelProperty
	c.ChannelName, _ = p.str("channelName")
	if v := getFold(p.Value, "priority"); v != nil && v.Kind == KindNumber {
		f, _ := strconv.ParseFloat(v.Str(), 64)
		c.Priority = int(f)
	}
	return c, true
}

// AsCSVMetadata decodes the commonly used parts of an olm.csv.metadata property.
func (p *Property) AsCSVMetadata() (*CSVMetadata, bool) {
	if p.Type != PropertyCSVMetadata || !p.Valid() {
		return nil, false
	}
	v := p.Value
	m := &CSVMetadata{
		DisplayName:    strFold(v, "displayName"),
		Description:    strFold(v, "description"),
		Maturity:       strFold(v, "maturity"),
		MinKubeVersion: strFold(v, "minKubeVersion"),
	}
	if kw := getFold(v, "keywords"); kw != nil && kw.Kind == KindArray {
		for _, k := range kw.Items() {
			m.Keywords = append(m.Keywords, k.Str())
		}
	}
	if an := getFold(v, "annotations"); an != nil && an.Kind == KindObject {
		fields := an.Fields()
		m.Annotations = make(map[string]string, len(fields))
		for i := range fields {
			m.Annotations[fields[i].Key] = fields[i].Value.Str()
		}
	}
	if owned := getFold(getFold(v, "crdDescriptions"), "owned"); owned != nil && owned.Kind == KindArray {
		items := owned.Items()
		for i := range items {
			it := &items[i]
			m.OwnedCRDs = append(m.OwnedCRDs, CRDDescription{Name: strFold(it, "name"), Version: strFold(it, "version"), Kind: strFold(it, "kind")})
		}
	}
	return m, true
}

// bundleObjectData returns the base64-decoded data of an olm.bundle.object property.
func (p *Property) bundleObjectData() ([]byte, error) {
	if p.Type != PropertyBundleObject {
		return nil, fmt.Errorf("property %d is %s, not %s", p.Index, p.Type, PropertyBundleObject)
	}
	if p.Value == nil {
		return nil, errors.New("olm.bundle.object property has no value")
	}
	data := getFold(p.Value, "data")
	if p.Value.Kind != KindObject || data == nil || data.Kind == KindNull {
		return nil, nil
	}
	switch data.Kind {
	case KindString:
		return decodeStdBase64(data.Str())
	case KindArray:
		items := data.Items()
		out := make([]byte, 0, len(items))
		for i := range items {
			if !fitsByte(items[i].Str()) {
				return nil, fmt.Errorf("data[%d] is not a byte value", i)
			}
			f, _ := strconv.ParseFloat(items[i].Str(), 64)
			out = append(out, byte(f))
		}
		return out, nil
	}
	return nil, fmt.Errorf("data is %s, not base64 text", describeValue(data))
}

// PackageProperty returns the bundle's first olm.package property.
func (b *Bundle) PackageProperty() (PackageProperty, bool) {
	for i := range b.Properties {
		if b.Properties[i].Type == PropertyPackage {
			return b.Properties[i].AsPackage()
		}
	}
	return PackageProperty{}, false
}

// Version is the bundle's version: the version of its olm.package property,
// parsed strictly (semver 2.0.0: three numbers, no "v", no leading zeros).
// A version opm refuses is an error here too: Masterminds' StrictNewVersion
// alone accepts empty pre-release or build identifiers ("1.0.0-", "1.0.0-a..b")
// that opm's parser (blang/semver) rejects.
func (b *Bundle) Version() (*mmsemver.Version, error) {
	pp, ok := b.PackageProperty()
	if !ok {
		return nil, fmt.Errorf("bundle %q has no valid %s property", b.Name, PropertyPackage)
	}
	if _, err := blang.Parse(pp.Version); err != nil {
		return nil, fmt.Errorf("version %q of bundle %q: %w", pp.Version, b.Name, err)
	}
	return mmsemver.StrictNewVersion(pp.Version)
}

// GVKs returns the bundle's provided APIs (olm.gvk properties).
func (b *Bundle) GVKs() []GVK { return b.gvks(PropertyGVK) }

// RequiredGVKs returns the bundle's required APIs (olm.gvk.required properties).
func (b *Bundle) RequiredGVKs() []GVK { return b.gvks(PropertyGVKRequired) }

func (b *Bundle) gvks(typ string) []GVK {
	var out []GVK
	for i := range b.Properties {
		if b.Properties[i].Type == typ {
			if g, ok := b.Properties[i].AsGVK(); ok {
				out = append(out, g)
			}
		}
	}
	return out
}

// RequiredPackages returns the bundle's olm.package.required properties.
func (b *Bundle) RequiredPackages() []PackageRequired {
	var out []PackageRequired
	for i := range b.Properties {
		if r, ok := b.Properties[i].AsPackageRequired(); ok {
			out = append(out, r)
		}
	}
	return out
}

// CSVMetadata returns the bundle's first olm.csv.metadata property.
func (b *Bundle) CSVMetadata() (*CSVMetadata, bool) {
	for i := range b.Properties {
		if b.Properties[i].Type == PropertyCSVMetadata {
			return b.Properties[i].AsCSVMetadata()
		}
	}
	return nil, false
}

// HasObjects reports whether the bundle carries olm.bundle.object properties.
func (b *Bundle) HasObjects() bool {
	for i := range b.Properties {
		if b.Properties[i].Type == PropertyBundleObject {
			return true
		}
	}
	return false
}

// Objects returns the manifests of the bundle's olm.bundle.object properties,
// base64-decoded (each YAML or JSON), in property order; properties whose
// data is null are left out. They are decoded on every call: keep the result
// if you need it twice.
func (b *Bundle) Objects() ([][]byte, error) {
	var out [][]byte
	for i := range b.Properties {
		p := &b.Properties[i]
		if p.Type != PropertyBundleObject {
			continue
		}
		data, err := p.bundleObjectData()
		if err != nil {
			return nil, fmt.Errorf("bundle %q property %d: %w", b.Name, p.Index, err)
		}
		if data != nil { // data: null carries no manifest
			out = append(out, data)
		}
	}
	return out, nil
}
