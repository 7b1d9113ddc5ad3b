package catalog

import (
	"fmt"
	"sort"
)

// Schemas of the four blob kinds opm knows.
const (
	SchemaPackage     = "olm.package"
	SchemaChannel     = "olm.channel"
	SchemaBundle      = "olm.bundle"
	SchemaDeprecation = "olm.deprecations"
)

// Catalog is a file-based catalog decoded into packages, channels, bundles and
// deprecations, with the position of every field a finding can point at. It
// is read-only once loaded and safe for concurrent readers.
type Catalog struct {
	// Packages, sorted by name. A package is listed when any blob names it;
	// Declared says whether an olm.package blob exists for it, so channels and
	// bundles of an undeclared (or empty) package name are kept and reported.
	Packages []*Package
	// Others are the blobs of schemas other than the four OLM ones, in load order.
	Others []*Doc
	// LoadFindings are the findings of reading the files and of decoding the
	// blobs into their types; Validate reports them with its own.
	LoadFindings []Finding

	docs   []Doc
	byName map[string]*Package
}

// Package is everything of one package name: its olm.package blob, channels,
// bundles and deprecations.
type Package struct {
	Name string
	// Declared is true when an olm.package blob names this package. The fields
	// below up to Value come from the first such blob in load order.
	Declared          bool
	Pos               Position // start of the olm.package blob
	NamePos           Position
	DefaultChannel    string
	DefaultChannelPos Position // the value, or the blob when absent
	Description       string
	Icon              *Icon
	Properties        []Property
	Value             *Value // the whole olm.package blob
	// Redeclarations are the name positions of further olm.package blobs with this name.
	Redeclarations []Position

	// Channels, Bundles and Deprecations in load order (file path, then position).
	Channels     []*Channel
	Bundles      []*Bundle
	Deprecations []*Deprecation

	channelByName map[string]*Channel // first channel of each name
	bundleByName  map[string]*Bundle  // first bundle of each name
}

// Icon is a package's icon.
type Icon struct {
	MediaType string
	Pos       Position
}

// Channel is an olm.channel blob.
type Channel struct {
	Package    string
	PackagePos Position
	Name       string
	NamePos    Position
	Pos        Position
	Entries    []*ChannelEntry
	Properties []Property
	Value      *Value

	entryByName map[string]*ChannelEntry // first entry of each name
	// undecodable is set when opm could not decode the blob (reported as
	// channel.field-invalid); the rules on its content are then skipped, as
	// opm stops there too, so one mistake is not reported three times.
	undecodable bool
}

// ChannelEntry is one entry of a channel with its upgrade edges.
type ChannelEntry struct {
	Name         string
	NamePos      Position
	Pos          Position
	Replaces     string
	ReplacesPos  Position
	Skips        []string
	SkipsPos     []Position // one per skip
	SkipRange    string
	SkipRangePos Position
}

// Bundle is an olm.bundle blob.
type Bundle struct {
	Package       string
	PackagePos    Position
	Name          string
	NamePos       Position
	Image         string
	ImagePos      Position // the value, or the blob when absent
	Pos           Position
	Properties    []Property
	RelatedImages []RelatedImage
	Value         *Value

	undecodable bool // see Channel.undecodable
}

// RelatedImage is one entry of a bundle's relatedImages.
type RelatedImage struct {
	Name     string
	Image    string
	Pos      Position
	ImagePos Position
}

// Deprecation is an olm.deprecations blob.
type Deprecation struct {
	Package    string
	PackagePos Position
	Pos        Position
	Entries    []DeprecationEntry
	Value      *Value

	undecodable bool // see Channel.undecodable
}

// DeprecationEntry deprecates one package, channel or bundle.
type DeprecationEntry struct {
	Schema     string // olm.package, olm.channel or olm.bundle
	SchemaPos  Position
	Name       string // empty for olm.package
	NamePos    Position
	Message    string
	MessagePos Position
	Pos        Position
}

// Package returns the package of that name, or nil.
func (c *Catalog) Package(name string) *Package {
	if c == nil {
		return nil
	}
	return c.byName[name]
}

// Channel returns the first channel of that name, or nil.
func (p *Package) Channel(name string) *Channel {
	if p == nil {
		return nil
	}
	return p.channelByName[name]
}

// Bundle returns the first bundle of that name, or nil.
func (p *Package) Bundle(name string) *Bundle {
	if p == nil {
		return nil
	}
	return p.bundleByName[name]
}

// Entry returns the first entry of that name, or nil.
func (ch *Channel) Entry(name string) *ChannelEntry {
	if ch == nil {
		return nil
	}
	return ch.entryByName[name]
}

// Deprecation returns the entry deprecating the object of that schema and name
// (name empty for the package itself), or nil.
func (p *Package) Deprecation(schema, name string) *DeprecationEntry {
	if p == nil {
		return nil
	}
	for _, d := range p.Deprecations {
		for i := range d.Entries {
			if e := &d.Entries[i]; e.Schema == schema && e.Name == name {
				return e
			}
		}
	}
	return nil
}

// NewCatalog builds a catalog from documents already read (by ReadFS or
// ParseFile) and the findings of reading them. It takes ownership of docs.
func NewCatalog(docs []Doc, readFindings []Finding) *Catalog {
	c := &Catalog{docs: docs, byName: map[string]*Package{}}
	c.LoadFindings = append(c.LoadFindings, readFindings...)
	for i := range docs {
		d := &docs[i]
		switch d.Schema {
		case SchemaPackage:
			c.addPackage(d)
		case SchemaChannel:
			ch := c.decodeChannel(d)
			p := c.group(ch.Package)
			p.Channels = append(p.Channels, ch)
			if _, ok := p.channelByName[ch.Name]; !ok {
				p.channelByName[ch.Name] = ch
			}
		case SchemaBundle:
			b := c.decodeBundle(d)
			p := c.group(b.Package)
			p.Bundles = append(p.Bundles, b)
			if _, ok := p.bundleByName[b.Name]; !ok {
				p.bundleByName[b.Name] = b
			}
		case SchemaDeprecation:
			dep := c.decodeDeprecation(d)
			p := c.group(dep.Package)
			p.Deprecations = append(p.Deprecations, dep)
		case "":
			// The loader reported the missing schema; opm refuses the blob.
		default:
			c.Others = append(c.Others, d)
		}
	}
	c.Packages = make([]*Package, 0, len(c.byName))
	for _, p := range c.byName {
		c.Packages = append(c.Packages, p)
	}
	sort.Slice(c.Packages, func(i, j int) bool { return c.Packages[i].Name < c.Packages[j].Name })
	SortFindings(c.LoadFindings)
	return c
}

// group returns the package of that name, creating an undeclared one.
func (c *Catalog) group(name string) *Package {
	p := c.byName[name]
	if p == nil {
		p = &Package{Name: name, channelByName: map[string]*Channel{}, bundleByName: map[string]*Bundle{}}
		c.byName[name] = p
	}
	return p
}

func (c *Catalog) addPackage(d *Doc) {
	p := c.group(d.Name)
	namePos := fieldPos(d, "name")
	if p.Declared {
		p.Redeclarations = append(p.Redeclarations, namePos)
		// Still decode it, so its type errors are reported.
		c.checkBlob(d, shPackageBlob, rulePackageFieldInvalid, d.Name)
		return
	}
	p.Declared = true
	p.Pos = d.Pos
	p.NamePos = namePos
	p.Value = &d.Value
	c.checkBlob(d, shPackageBlob, rulePackageFieldInvalid, d.Name)
	v := &d.Value
	p.DefaultChannel = strFold(v, "defaultChannel")
	p.DefaultChannelPos = fieldPos(d, "defaultChannel")
	p.Description = strFold(v, "description")
	if icon := getFold(v, "icon"); icon != nil && icon.Kind == KindObject {
		p.Icon = &Icon{MediaType: strFold(icon, "mediatype"), Pos: icon.Pos(d.Pos.File)}
	}
	p.Properties = decodeProperties(d, getFold(v, "properties"))
}

func (c *Catalog) decodeChannel(d *Doc) *Channel {
	bad := c.checkBlob(d, shChannelBlob, ruleChannelFieldInvalid, d.Package)
	v := &d.Value
	file := d.Pos.File
	ch := &Channel{
		Package: d.Package, PackagePos: fieldPos(d, "package"),
		Name: d.Name, NamePos: fieldPos(d, "name"),
		Pos: d.Pos, Value: v,
		entryByName: map[string]*ChannelEntry{},
		undecodable: bad,
	}
	if es := getFold(v, "entries"); es != nil && es.Kind == KindArray {
		ch.Entries = make([]*ChannelEntry, 0, len(es.Items()))
		entries := es.Items()
		for i := range entries {
			ev := &entries[i]
			if ev.Kind != KindObject && ev.Kind != KindNull {
				continue // reported by checkBlob; null decodes to an entry with no name, as in opm
			}
			e := &ChannelEntry{Pos: ev.Pos(file)}
			e.Name, e.NamePos = strAt(ev, "name", file)
			e.Replaces, e.ReplacesPos = strAt(ev, "replaces", file)
			e.SkipRange, e.SkipRangePos = strAt(ev, "skipRange", file)
			if sk := getFold(ev, "skips"); sk != nil && sk.Kind == KindArray {
				skips := sk.Items()
				for j := range skips {
					s := &skips[j]
					str := ""
					if s.Kind == KindString {
						str = s.Str()
					}
					e.Skips = append(e.Skips, str)
					e.SkipsPos = append(e.SkipsPos, s.Pos(file))
				}
			}
			ch.Entries = append(ch.Entries, e)
			if _, ok := ch.entryByName[e.Name]; !ok {
				ch.entryByName[e.Name] = e
			}
		}
	}
	ch.Properties = decodeProperties(d, getFold(v, "properties"))
	return ch
}

func (c *Catalog) decodeBundle(d *Doc) *Bundle {
	bad := c.checkBlob(d, shBundleBlob, ruleBundleFieldInvalid, d.Package)
	v := &d.Value
	file := d.Pos.File
	b := &Bundle{
		Package: d.Package, PackagePos: fieldPos(d, "package"),
		Name: d.Name, NamePos: fieldPos(d, "name"),
		Pos: d.Pos, Value: v, undecodable: bad,
	}
	b.Image, b.ImagePos = strAt(v, "image", file)
	b.Properties = decodeProperties(d, getFold(v, "properties"))
	if ris := getFold(v, "relatedImages"); ris != nil && ris.Kind == KindArray {
		items := ris.Items()
		for i := range items {
			ri := &items[i]
			if ri.Kind != KindObject {
				continue
			}
			r := RelatedImage{Name: strFold(ri, "name"), Pos: ri.Pos(file)}
			r.Image, r.ImagePos = strAt(ri, "image", file)
			b.RelatedImages = append(b.RelatedImages, r)
		}
	}
	return b
}

func (c *Catalog) decodeDeprecation(d *Doc) *Deprecation {
	bad := c.checkBlob(d, shDeprecationBlob, ruleDeprecationFieldInvalid, d.Package)
	v := &d.Value
	file := d.Pos.File
	dep := &Deprecation{Package: d.Package, PackagePos: fieldPos(d, "package"), Pos: d.Pos, Value: v, undecodable: bad}
	if es := getFold(v, "entries"); es != nil && es.Kind == KindArray {
		entries := es.Items()
		for i := range entries {
			ev := &entries[i]
			if ev.Kind != KindObject && ev.Kind != KindNull {
				continue
			}
			e := DeprecationEntry{Pos: ev.Pos(file)}
			ref := getFold(ev, "reference")
			if ref != nil && ref.Kind == KindObject {
				e.Schema, e.SchemaPos = strAt(ref, "schema", file)
				e.Name, e.NamePos = strAt(ref, "name", file)
			} else {
				e.SchemaPos, e.NamePos = e.Pos, e.Pos
				if ref != nil {
					e.SchemaPos = ref.Pos(file)
					e.NamePos = e.SchemaPos
				}
			}
			e.Message, e.MessagePos = strAt(ev, "message", file)
			dep.Entries = append(dep.Entries, e)
		}
	}
	return dep
}

// checkBlob reports the fields of a blob opm could not decode into its type
// and says whether there were any.
func (c *Catalog) checkBlob(d *Doc, s *shape, rule, pkg string) bool {
	errs := checkShape(&d.Value, s, "", nil)
	for _, e := range errs {
		c.LoadFindings = append(c.LoadFindings, newFinding(rule, e.at.Pos(d.Pos.File), pkg,
			fmt.Sprintf("%s %s: %s", d.Schema, blobLabel(d), e.message())))
	}
	return len(errs) > 0
}

// blobLabel names a blob for messages: its name, or where it starts.
func blobLabel(d *Doc) string {
	if d.Name != "" {
		return fmt.Sprintf("%q", d.Name)
	}
	return fmt.Sprintf("at line %d", d.Pos.Line)
}

// fieldPos is the position of a top-level field's value, or of the blob.
func fieldPos(d *Doc, key string) Position {
	if v := getFold(&d.Value, key); v != nil {
		return v.Pos(d.Pos.File)
	}
	return d.Pos
}

// strAt returns the string at key of obj and its position (the object's when absent).
func strAt(obj *Value, key, file string) (string, Position) {
	v := getFold(obj, key)
	if v == nil {
		return "", obj.Pos(file)
	}
	if v.Kind == KindString {
		return v.Str(), v.Pos(file)
	}
	return "", v.Pos(file)
}
