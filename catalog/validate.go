package catalog

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	blang "github.com/blang/semver/v4"

	"github.com/catalogbot/catalogbot/catalog/decode"
)

// ValidateOptions selects what Validate looks at.
type ValidateOptions struct {
	// Packages limits the per-package rules to these packages; empty means
	// every package. Catalog-wide findings (IsCatalogWide) are always reported.
	Packages []string
}

// IsCatalogWide reports whether a finding concerns the catalog as a whole
// rather than one package: files that do not parse, blobs without a package,
// and packages declared twice. Validate reports these whatever packages it
// is limited to.
func IsCatalogWide(f Finding) bool {
	return f.Package == "" || f.Rule == rulePackageDuplicate
}

// Validate judges a catalog as opm validate (v1.60.0) does, plus the checks of
// newer opm releases and a few warnings of our own, and returns every finding
// (the load findings included), sorted. The catalog is valid when no finding
// has SeverityError. With opt.Packages set it returns exactly the findings a
// full validation reports for those packages, plus the catalog-wide ones.
func Validate(c *Catalog, opt ValidateOptions) []Finding {
	if c == nil {
		return nil
	}
	var want map[string]bool
	if len(opt.Packages) > 0 {
		want = make(map[string]bool, len(opt.Packages))
		for _, n := range opt.Packages {
			want[n] = true
		}
	}
	var out []Finding
	for _, f := range c.LoadFindings {
		if want == nil || want[f.Package] || IsCatalogWide(f) {
			out = append(out, f)
		}
	}
	// A file that did not read whole (a syntax error, a refused blob) stops opm at that error; the blobs it
	// lost would only make the model rules report their absence. So a package with a blob in such a file
	// is not judged by the model rules: the load finding is the one thing to fix, not a cascade.
	broken := map[string]bool{}
	for _, f := range c.LoadFindings {
		if f.Severity == SeverityError && f.File != "" && decode.StopsReading(f.Rule) {
			broken[f.File] = true
		}
	}
	var todo []*Package
	wide := newValidator(c)
	for _, p := range c.Packages {
		wide.packageDuplicates(p)
		if (want == nil || want[p.Name] || p.Name == "") && !inBrokenFile(p, broken) {
			todo = append(todo, p)
		}
	}
	out = append(out, wide.out...)

	// Packages are independent: validate them on every CPU. Each worker has
	// its own validator; the catalog is only read.
	workers := min(runtime.GOMAXPROCS(0), len(todo))
	if workers <= 1 {
		v := newValidator(c)
		for _, p := range todo {
			v.pkg(p)
		}
		out = append(out, v.out...)
	} else {
		results := make([][]Finding, workers)
		next := make(chan *Package)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := newValidator(c)
				for p := range next {
					v.pkg(p)
				}
				results[w] = v.out
			}()
		}
		for _, p := range todo {
			next <- p
		}
		close(next)
		wg.Wait()
		for _, r := range results {
			out = append(out, r...)
		}
	}
	SortFindings(out)
	return out
}

// inBrokenFile reports whether any blob of p is in one of the files that did not read whole.
func inBrokenFile(p *Package, broken map[string]bool) bool {
	if len(broken) == 0 {
		return false
	}
	if p.Declared && broken[p.Pos.File] {
		return true
	}
	for _, ch := range p.Channels {
		if broken[ch.Pos.File] {
			return true
		}
	}
	for _, b := range p.Bundles {
		if broken[b.Pos.File] {
			return true
		}
	}
	for _, d := range p.Deprecations {
		if broken[d.Pos.File] {
			return true
		}
	}
	return false
}

func newValidator(c *Catalog) *validator {
	return &validator{c: c, images: map[string]error{}, versions: map[*Package]map[string]blang.Version{}}
}

// HasErrors reports whether any finding is an error, i.e. opm would refuse the catalog.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

type validator struct {
	c        *Catalog
	out      []Finding
	images   map[string]error // image reference -> parse result, as many bundles share images
	versions map[*Package]map[string]blang.Version
	objBuf   []byte // scratch for base64 decoding of bundle objects
	// required, when set, takes each olm.package.required property naming a
	// package instead of judging it against c (see ValidateFS).
	required func(p *Package, b *Bundle, r PackageRequired)
}

func (v *validator) add(rule string, pos Position, pkg, format string, args ...any) {
	v.out = append(v.out, newFinding(rule, pos, pkg, fmt.Sprintf(format, args...)))
}

// where names a position for messages about a second blob: file:line.
func where(p Position) string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// packageDuplicates reports further olm.package blobs of one name (catalog-wide).
func (v *validator) packageDuplicates(p *Package) {
	for _, pos := range p.Redeclarations {
		v.add(rulePackageDuplicate, pos, p.Name, "package %q is declared again; it is first declared at %s", p.Name, where(p.NamePos))
	}
}

// isDNS1123Label reports whether s has the Kubernetes DNS-1123 label syntax, ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
// (its length is checked apart): a scan, not a regular expression compiled by every process at start.
func isDNS1123Label(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func (v *validator) pkg(p *Package) {
	if !p.Declared || p.Name == "" {
		v.orphans(p)
		return
	}
	if len(p.Name) > 63 {
		v.add(rulePackageNameInvalid, p.NamePos, p.Name,
			"package name %q is %d characters long; a package name is a DNS-1123 label of at most 63 characters", p.Name, len(p.Name))
	} else if !isDNS1123Label(p.Name) {
		v.add(rulePackageNameInvalid, p.NamePos, p.Name,
			"package name %q is not a valid DNS-1123 label: only lower-case letters, digits and '-', starting and ending with a letter or digit", p.Name)
	}
	switch {
	case p.DefaultChannel == "":
		v.add(rulePackageDefaultEmpty, p.DefaultChannelPos, p.Name, "package %q has no defaultChannel", p.Name)
		if len(p.Channels) == 0 {
			v.add(rulePackageNoChannels, p.NamePos, p.Name, "package %q has no channel: no olm.channel blob names it", p.Name)
		}
	case p.Channel(p.DefaultChannel) == nil:
		v.add(rulePackageDefaultMissing, p.DefaultChannelPos, p.Name,
			"defaultChannel %q of package %q is not one of its channels (%s)", p.DefaultChannel, p.Name, channelList(p))
	}

	// Entry names of all channels, for "bundle in some channel".
	inChannel := map[string]bool{}
	for _, ch := range p.Channels {
		for _, e := range ch.Entries {
			inChannel[e.Name] = true
		}
	}
	for _, ch := range p.Channels {
		v.channel(p, ch)
	}
	versions := map[string]*Bundle{} // canonical version -> first bundle
	for _, b := range p.Bundles {
		v.bundle(p, b, inChannel, versions)
	}
	v.deprecations(p)
	v.defaultHead(p)
}

func channelList(p *Package) string {
	if len(p.Channels) == 0 {
		return "it has none"
	}
	names := make([]string, 0, len(p.Channels))
	for _, ch := range p.Channels {
		names = append(names, fmt.Sprintf("%q", ch.Name))
	}
	return "it has " + strings.Join(names, ", ")
}

// orphans reports the blobs of a package name no olm.package declares (or an empty name).
func (v *validator) orphans(p *Package) {
	if p.Declared { // declared with an empty name
		v.add(rulePackageNameEmpty, p.NamePos, "", "olm.package blob has no name")
	}
	for _, ch := range p.Channels {
		if ch.Package == "" {
			v.add(ruleChannelPackageUnknown, ch.PackagePos, "", "channel %q has no package", ch.Name)
		} else {
			v.add(ruleChannelPackageUnknown, ch.PackagePos, p.Name, "channel %q belongs to package %q, which has no olm.package blob in this catalog", ch.Name, ch.Package)
		}
	}
	for _, b := range p.Bundles {
		if b.Package == "" {
			v.add(ruleBundlePackageEmpty, b.PackagePos, "", "bundle %q has no package", b.Name)
		} else {
			v.add(ruleBundlePackageUnknown, b.PackagePos, p.Name, "bundle %q belongs to package %q, which has no olm.package blob in this catalog", b.Name, b.Package)
		}
	}
	for _, d := range p.Deprecations {
		if d.Package == "" {
			v.add(ruleDeprecationPackageEmpty, d.PackagePos, "", "olm.deprecations blob has no package")
		} else {
			v.add(ruleDeprecationPackageUnk, d.PackagePos, p.Name, "olm.deprecations blob names package %q, which has no olm.package blob in this catalog", d.Package)
		}
	}
}

func (v *validator) channel(p *Package, ch *Channel) {
	if ch.Name == "" {
		v.add(ruleChannelNameEmpty, ch.NamePos, p.Name, "a channel of package %q has no name", p.Name)
	}
	if first := p.Channel(ch.Name); first != ch {
		v.add(ruleChannelDuplicate, ch.NamePos, p.Name, "channel %q of package %q is defined again; it is first defined at %s", ch.Name, p.Name, where(first.NamePos))
		return
	}
	if ch.undecodable {
		return
	}
	if len(ch.Entries) == 0 {
		v.add(ruleChannelNoEntries, ch.NamePos, p.Name, "channel %q of package %q has no entries", ch.Name, p.Name)
		return
	}
	for _, e := range ch.Entries {
		if first := ch.Entry(e.Name); first != e {
			v.add(ruleChannelEntryDuplicate, e.NamePos, p.Name, "channel %q lists bundle %q again; it is first listed at %s", ch.Name, e.Name, where(first.NamePos))
			continue
		}
		if e.Name == "" {
			v.add(ruleChannelEntryNameEmpty, e.NamePos, p.Name, "an entry of channel %q has no name", ch.Name)
		} else if p.Bundle(e.Name) == nil {
			v.add(ruleChannelEntryNoBundle, e.NamePos, p.Name, "channel %q lists bundle %q, but package %q has no olm.bundle blob of that name", ch.Name, e.Name, p.Name)
		}
		for i, s := range e.Skips {
			if s == "" {
				v.add(ruleChannelSkipEmpty, e.SkipsPos[i], p.Name, "skips[%d] of entry %q in channel %q is empty", i, e.Name, ch.Name)
			}
		}
		if e.SkipRange != "" {
			// blang/semver's ParseRange is exactly what opm v1.69+ runs: it
			// already refuses ^, ~, commas, v prefixes and two-part versions
			// (while "1.x" wildcards pass), so nothing stricter is added.
			if _, err := parseRange(e.SkipRange); err != nil {
				v.add(ruleChannelSkipRangeInvalid, e.SkipRangePos, p.Name, "skipRange %q of entry %q in channel %q does not parse: %v", e.SkipRange, e.Name, ch.Name, err)
			}
		}
	}
	v.graph(p, ch)
}

// graph checks heads, the replaces chain and stranded entries, as opm does.
func (v *validator) graph(p *Package, ch *Channel) {
	heads := ch.Heads()
	switch {
	case len(heads) == 0:
		v.add(ruleChannelNoHead, ch.NamePos, p.Name,
			"channel %q has no head: every entry is replaced or skipped by another entry of the channel", ch.Name)
		return
	case len(heads) > 1:
		for _, h := range heads[1:] {
			v.add(ruleChannelMultipleHeads, h.NamePos, p.Name,
				"channel %q has %d heads (%s): nothing in the channel replaces or skips %q, nor %q at %s (skipRange is not an edge for this rule)",
				ch.Name, len(heads), entryNames(heads), h.Name, heads[0].Name, where(heads[0].NamePos))
		}
		return
	}
	w := ch.walkReplaces(heads[0])
	if w.cycle != nil {
		v.add(ruleChannelCycle, w.cycleAt.ReplacesPos, p.Name,
			"replaces chain of channel %q loops: %s", ch.Name, quotedChain(w.cycle))
		return
	}
	for _, e := range w.stranded {
		v.add(ruleChannelStranded, e.NamePos, p.Name,
			"entry %q of channel %q is stranded: it is not on the replaces chain from the head %q and no entry skips it", e.Name, ch.Name, heads[0].Name)
	}
}

func (v *validator) bundle(p *Package, b *Bundle, inChannel map[string]bool, versions map[string]*Bundle) {
	if b.Name == "" {
		v.add(ruleBundleNameEmpty, b.NamePos, p.Name, "a bundle of package %q has no name", p.Name)
	}
	if first := p.Bundle(b.Name); first != b {
		v.add(ruleBundleDuplicate, b.NamePos, p.Name, "bundle %q of package %q is defined again; it is first defined at %s", b.Name, p.Name, where(first.NamePos))
		return
	}
	if b.Name != "" && !inChannel[b.Name] {
		v.add(ruleBundleNotInChannel, b.NamePos, p.Name, "bundle %q is not an entry of any channel of package %q", b.Name, p.Name)
	}
	if b.undecodable {
		return
	}

	var pkgProps []*Property
	hasObjects := false
	for i := range b.Properties {
		prop := &b.Properties[i]
		if prop.Type == PropertyBundleObject {
			hasObjects = true
			v.bundleObject(p, b, prop)
			continue
		}
		if prop.Type == PropertyPackage {
			pkgProps = append(pkgProps, prop)
		}
		for _, e := range prop.problems() {
			pos := prop.ValuePos
			if e.at != nil {
				pos = e.at.Pos(b.Pos.File)
			}
			if e.at == nil {
				v.add(ruleBundlePropertyInvalid, pos, p.Name, "property %d (%s) of bundle %q has no value", prop.Index, propLabel(prop.Type), b.Name)
				continue
			}
			v.add(ruleBundlePropertyInvalid, pos, p.Name, "property %d (%s) of bundle %q: %s", prop.Index, propLabel(prop.Type), b.Name, e.message())
		}
		v.misspelt(p, b, prop)
	}

	switch len(pkgProps) {
	case 0:
		v.add(ruleBundlePackagePropMissing, b.NamePos, p.Name, "bundle %q has no %s property, so it has no version", b.Name, PropertyPackage)
	case 1:
		v.packageProperty(p, b, pkgProps[0], versions)
	default:
		for _, extra := range pkgProps[1:] {
			v.add(ruleBundlePackagePropMulti, extra.TypePos, p.Name, "bundle %q has %d %s properties; the first is at %s", b.Name, len(pkgProps), PropertyPackage, where(pkgProps[0].TypePos))
		}
	}

	if b.Image == "" {
		if !hasObjects {
			v.add(ruleBundleImageEmpty, b.ImagePos, p.Name, "bundle %q has no image (and no olm.bundle.object properties)", b.Name)
		}
	} else if err := v.imageRef(b.Image); err != nil {
		v.add(ruleBundleImageInvalid, b.ImagePos, p.Name, "image %q of bundle %q is not a valid image reference: %v", b.Image, b.Name, err)
	}
	for i, ri := range b.RelatedImages {
		if ri.Image == "" {
			continue
		}
		if err := v.imageRef(ri.Image); err != nil {
			v.add(ruleBundleRelatedInvalid, ri.ImagePos, p.Name, "relatedImages[%d].image %q of bundle %q is not a valid image reference: %v", i, ri.Image, b.Name, err)
		}
	}
	v.requirements(p, b)
}

func propLabel(typ string) string {
	if typ == "" {
		return "no type"
	}
	return typ
}

// packageProperty checks the single olm.package property of a bundle.
func (v *validator) packageProperty(p *Package, b *Bundle, prop *Property, versions map[string]*Bundle) {
	pp, ok := prop.AsPackage()
	if !ok {
		return // its shape was reported
	}
	if pp.PackageName != b.Package {
		v.add(ruleBundlePackagePropDiffers, pp.PackageNamePos, p.Name,
			"bundle %q is in package %q, but its %s property says packageName %q", b.Name, b.Package, PropertyPackage, pp.PackageName)
	}
	ver, err := blang.Parse(pp.Version)
	if err != nil {
		v.add(ruleBundleVersionInvalid, pp.VersionPos, p.Name, "version %q of bundle %q is not strict semver: %v", pp.Version, b.Name, err)
		return
	}
	key := ver.String()
	if first, dup := versions[key]; dup {
		fp, _ := first.PackageProperty()
		v.add(ruleBundleVersionDuplicate, pp.VersionPos, p.Name, "bundle %q has version %s, as bundle %q at %s does", b.Name, key, first.Name, where(fp.VersionPos))
		return
	}
	versions[key] = b
}

// imageRef parses an image reference as newer opm does (docker reference
// grammar with Docker Hub normalisation), remembering results.
func (v *validator) imageRef(s string) error {
	if err, ok := v.images[s]; ok {
		return err
	}
	err := parseImageRef(s)
	v.images[s] = err
	return err
}

func (v *validator) deprecations(p *Package) {
	for i, d := range p.Deprecations {
		if i > 0 {
			v.add(ruleDeprecationDuplicate, d.PackagePos, p.Name, "package %q has another olm.deprecations blob; the first is at %s", p.Name, where(p.Deprecations[0].Pos))
		}
		if d.undecodable {
			continue
		}
		type ref struct{ schema, name string }
		seen := map[ref]*DeprecationEntry{}
		for j := range d.Entries {
			e := &d.Entries[j]
			if e.Schema == "" {
				v.add(ruleDeprecationSchemaEmpty, e.SchemaPos, p.Name, "deprecation entry %d of package %q has no reference.schema", j, p.Name)
				continue
			}
			r := ref{e.Schema, e.Name}
			if first, dup := seen[r]; dup {
				v.add(ruleDeprecationRefDuplicate, e.SchemaPos, p.Name, "deprecation entry %d of package %q references %s %q again; it is first deprecated at %s", j, p.Name, e.Schema, e.Name, where(first.Pos))
				continue
			}
			seen[r] = e
			switch e.Schema {
			case SchemaBundle:
				if p.Bundle(e.Name) == nil {
					v.add(ruleDeprecationBundleUnknown, e.NamePos, p.Name, "deprecation entry %d deprecates bundle %q, which package %q does not have", j, e.Name, p.Name)
					continue
				}
			case SchemaChannel:
				// opm also finds the default channel it creates for a missing one.
				if p.Channel(e.Name) == nil && e.Name != p.DefaultChannel {
					v.add(ruleDeprecationChannelUnk, e.NamePos, p.Name, "deprecation entry %d deprecates channel %q, which package %q does not have", j, e.Name, p.Name)
					continue
				}
			case SchemaPackage:
				if e.Name != "" {
					v.add(ruleDeprecationPackageNamed, e.NamePos, p.Name, "deprecation entry %d deprecates the package but names %q; an olm.package reference takes no name", j, e.Name)
					continue
				}
			default:
				v.add(ruleDeprecationSchemaUnknown, e.SchemaPos, p.Name, "deprecation entry %d has reference schema %q; only olm.package, olm.channel and olm.bundle can be deprecated", j, e.Schema)
				continue
			}
			if e.Message == "" {
				v.add(ruleDeprecationMessageEmpty, e.MessagePos, p.Name, "deprecation entry %d (%s %q) has no message", j, e.Schema, e.Name)
			}
		}
	}
}

func quotedChain(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, " -> ")
}
