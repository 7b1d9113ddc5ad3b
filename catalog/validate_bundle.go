package catalog

import (
	"bytes"
	"encoding/base64"
	"iter"
	"strings"
	"unicode"

	blang "github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"
)

// bundleObject checks an olm.bundle.object property as opm's loader does: the
// value decodes into {data: []byte} (base64), and the data is a JSON object or
// YAML that converts to JSON. opm keeps data whose first non-space byte is '{'
// without looking further, so only other data is parsed here.
func (v *validator) bundleObject(p *Package, b *Bundle, prop *Property) {
	file := b.Pos.File
	if prop.Value == nil {
		v.add(ruleBundlePropertyInvalid, prop.ValuePos, p.Name, "property %d (%s) of bundle %q has no value", prop.Index, PropertyBundleObject, b.Name)
		return
	}
	val := prop.Value
	if val.Kind == KindNull {
		return
	}
	if val.Kind != KindObject {
		v.add(ruleBundlePropertyInvalid, prop.ValuePos, p.Name, "property %d (%s) of bundle %q: value is %s, but opm expects an object {data: <base64>}", prop.Index, PropertyBundleObject, b.Name, describeValue(val))
		return
	}
	data := fieldFold(val, "data")
	if data == nil || data.Value.Kind == KindNull {
		return
	}
	pos := data.Value.Pos(file)
	var raw []byte
	switch data.Value.Kind {
	case KindString:
		s := data.Value.Str()
		need := base64.StdEncoding.DecodedLen(len(s))
		if cap(v.objBuf) < need {
			v.objBuf = make([]byte, need)
		}
		n, err := base64.StdEncoding.Decode(v.objBuf[:need], []byte(s))
		if err != nil {
			v.add(ruleBundleObjectInvalid, pos, p.Name, "property %d (%s) of bundle %q: data is not valid standard base64: %v", prop.Index, PropertyBundleObject, b.Name, err)
			return
		}
		raw = v.objBuf[:n]
	case KindArray:
		d, err := prop.bundleObjectData()
		if err != nil {
			v.add(ruleBundleObjectInvalid, pos, p.Name, "property %d (%s) of bundle %q: %v", prop.Index, PropertyBundleObject, b.Name, err)
			return
		}
		raw = d
	default:
		v.add(ruleBundleObjectInvalid, pos, p.Name, "property %d (%s) of bundle %q: data is %s, but opm expects base64 text", prop.Index, PropertyBundleObject, b.Name, describeValue(&data.Value))
		return
	}
	jsonDoc := raw
	if !isJSONBuffer(raw) {
		j, err := yaml.YAMLToJSON(raw)
		if err != nil {
			v.add(ruleBundleObjectInvalid, pos, p.Name, "property %d (%s) of bundle %q: the decoded data is neither a JSON object nor valid YAML: %v", prop.Index, PropertyBundleObject, b.Name, err)
			return
		}
		jsonDoc = j
	}
	v.csvAgreement(p, b, pos, jsonDoc)
}

// isJSONBuffer is opm's test (apimachinery's yaml.IsJSONBuffer): the first
// non-space character is '{'.
func isJSONBuffer(b []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeftFunc(b, unicode.IsSpace), []byte("{"))
}

// csvAgreement warns when an embedded CSV's name or version differs from the bundle's.
func (v *validator) csvAgreement(p *Package, b *Bundle, pos Position, doc []byte) {
	if !bytes.Contains(doc, []byte("ClusterServiceVersion")) {
		return
	}
	kind, name, version, ok := csvIdentity(doc)
	if !ok || kind != "ClusterServiceVersion" {
		return
	}
	if name != "" && name != b.Name {
		v.add(ruleBundleCSVMismatch, pos, p.Name, "the embedded ClusterServiceVersion is named %q, but the bundle is %q", name, b.Name)
	}
	if pp, ok := b.PackageProperty(); ok && version != "" && version != pp.Version {
		v.add(ruleBundleCSVMismatch, pos, p.Name, "the embedded ClusterServiceVersion has version %s, but bundle %q has version %s", version, b.Name, pp.Version)
	}
}

// knownPropertyTypes are the property types OLM (v0 and v1) reads, for the misspelling warning.
var knownPropertyTypes = []string{
	PropertyPackage, PropertyGVK, PropertyPackageRequired, PropertyGVKRequired,
	PropertyBundleObject, PropertyCSVMetadata, PropertyDeprecated, PropertyChannel, PropertyConstraint,
	"olm.label", "olm.label.required", "olm.maxOpenShiftVersion", "olm.substitutesFor",
	"olm.bundle.mediatype", "olm.skips", "olm.skipRange", "olm.replaces",
}

// closeKnownType returns the known property type typ is probably a misspelling of, or "".
func closeKnownType(typ string) string {
	for _, k := range knownPropertyTypes {
		if typ == k { // the common case: no distance to measure
			return ""
		}
	}
	best, bestDist := "", 3
	for _, k := range knownPropertyTypes {
		if strings.EqualFold(typ, k) {
			best, bestDist = k, 0
			continue
		}
		if len(typ) >= 7 {
			if d := editDistance(typ, k, bestDist); d < bestDist {
				best, bestDist = k, d
			}
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max when it is at least max.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= max {
			return max
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], max)
}

func (v *validator) misspelt(p *Package, b *Bundle, prop *Property) {
	if prop.Type == "" || !strings.HasPrefix(strings.ToLower(prop.Type), "olm") {
		return
	}
	k := closeKnownType(prop.Type)
	if k == "" {
		return
	}
	msg := "property type %q of bundle %q is not a type OLM knows; did you mean %q? OLM ignores unknown types"
	switch k {
	case "olm.skipRange", "olm.skips", "olm.replaces":
		msg += " (and in a file-based catalog upgrade edges belong on the channel entry, not in bundle properties)"
	}
	v.add(ruleBundlePropertyMisspelt, prop.TypePos, p.Name, msg, prop.Type, b.Name, k)
}

// requirements warns about olm.package.required properties the catalog cannot satisfy.
func (v *validator) requirements(p *Package, b *Bundle) {
	for _, r := range b.RequiredPackages() {
		if r.PackageName == "" {
			v.add(ruleBundleRequiresUnknown, r.PackageNamePos, p.Name, "bundle %q has an %s property that names no package", b.Name, PropertyPackageRequired)
			continue
		}
		if v.required != nil {
			// The package it names may not be read yet (ValidateFS): judged
			// once every package is.
			v.required(p, b, r)
			continue
		}
		target := v.c.Package(r.PackageName)
		v.requirement(p.Name, b.Name, r, target != nil && target.Declared, func(yield func(blang.Version) bool) {
			for _, ver := range v.versionsOf(target) {
				if !yield(ver) {
					return
				}
			}
		})
	}
}

// requirement judges one olm.package.required property of bundle bundle of
// package pkg that names a package: declared says whether that package has
// an olm.package blob, versions are its bundles' versions (read only when
// the range needs them).
func (v *validator) requirement(pkg, bundle string, r PackageRequired, declared bool, versions iter.Seq[blang.Version]) {
	if !declared {
		v.add(ruleBundleRequiresUnknown, r.PackageNamePos, pkg, "bundle %q requires package %q, which is not in this catalog", bundle, r.PackageName)
		return
	}
	if r.VersionRange == "" {
		return
	}
	rng, err := parseRange(r.VersionRange)
	if err != nil {
		v.add(ruleBundleRequiresUnsatisf, r.VersionRangePos, pkg, "bundle %q requires package %q in versionRange %q, which does not parse: %v", bundle, r.PackageName, r.VersionRange, err)
		return
	}
	for ver := range versions {
		if rng(ver) {
			return
		}
	}
	v.add(ruleBundleRequiresUnsatisf, r.VersionRangePos, pkg, "bundle %q requires package %q in versionRange %q, but no bundle of %q has a version in it", bundle, r.PackageName, r.VersionRange, r.PackageName)
}

// defaultHead warns when the default channel's head is older than the package's newest bundle.
func (v *validator) defaultHead(p *Package) {
	ch := p.Channel(p.DefaultChannel)
	if ch == nil {
		return
	}
	heads := ch.Heads()
	if len(heads) != 1 {
		return
	}
	versions := v.versionsOf(p)
	headVer, ok := versions[heads[0].Name]
	if !ok {
		return
	}
	var newest string
	var newestVer blang.Version
	for name, ver := range versions {
		// Pre-releases (nightlies, release candidates) are not what new installs should get.
		if len(ver.Pre) > 0 {
			continue
		}
		if ver.GT(headVer) && (newest == "" || ver.GT(newestVer) || (ver.EQ(newestVer) && name < newest)) {
			newest, newestVer = name, ver
		}
	}
	if newest != "" {
		v.add(rulePackageDefaultHeadOlder, p.DefaultChannelPos, p.Name,
			"the head of default channel %q is %q (version %s), but bundle %q has the newer version %s, so new installs do not get it",
			ch.Name, heads[0].Name, headVer, newest, newestVer)
	}
}

// versionsOf is p.bundleVersions, computed once per package and validation.
func (v *validator) versionsOf(p *Package) map[string]blang.Version {
	if vs, ok := v.versions[p]; ok {
		return vs
	}
	vs := p.bundleVersions()
	v.versions[p] = vs
	return vs
}
