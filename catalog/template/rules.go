package template

import "github.com/catalogbot/catalogbot/catalog"

const (
	ruleParse            = "template.parse"
	ruleExtraDocument    = "template.extra-document"
	ruleSchema           = "template.schema"
	ruleShape            = "template.entry-shape"
	ruleBundleEntry      = "template.bundle-entry"
	ruleSemverField      = "template.semver-field"
	ruleSemverPreference = "template.semver-preference"
	ruleUnresolved       = "template.bundle-unresolved"
	ruleTagReference     = "template.tag-reference"
	ruleBundleCount      = "template.bundle-count"
	ruleNoBundles        = "template.no-bundles"
	ruleBundleVersion    = "template.bundle-version"
	ruleBundlePackage    = "template.bundle-package"
	ruleDuplicateBundle  = "template.duplicate-bundle"
	ruleBuildMetadata    = "template.build-metadata"
	rulePackageMetadata  = "template.package-metadata"

	// Drift: the committed catalog is not what its template renders to.
	RuleDriftMissing = "template.drift-missing"
	RuleDriftExtra   = "template.drift-extra"
	RuleDriftChanged = "template.drift-changed"
	RuleDriftMapping = "template.drift-mapping"
)

// Rules lists every rule of this package.
func Rules() []catalog.Rule {
	const opm = "opm alpha render-template"
	const ours = "catalogbot"
	return []catalog.Rule{
		{ID: ruleParse, Severity: catalog.SeverityError, Source: opm, Summary: "the template file is not YAML or JSON opm can read", Hint: "fix the syntax at the line shown"},
		{ID: ruleExtraDocument, Severity: catalog.SeverityWarning, Source: opm, Summary: "the template file holds more than one document; opm renders the first only", Hint: "keep one template per file"},
		{ID: ruleSchema, Severity: catalog.SeverityError, Source: opm, Summary: "the template's schema is missing or is neither olm.template.basic nor olm.semver", Hint: "set schema: olm.template.basic or schema: olm.semver"},
		{ID: ruleShape, Severity: catalog.SeverityError, Source: opm, Summary: "an entry of a basic template is not a blob opm can decode (no schema, a field of the wrong type, keys differing only in case)", Hint: "write the entry as the blob it stands for: schema, then the fields of that schema"},
		{ID: ruleBundleEntry, Severity: catalog.SeverityError, Source: opm, Summary: "a basic template's olm.bundle entry has no image, or has fields rendering fills in (package, properties, relatedImages)", Hint: "write `- schema: olm.bundle` and `image: <bundle image>` only"},
		{ID: ruleSemverField, Severity: catalog.SeverityError, Source: opm, Summary: "an olm.semver template has an unknown field, a field set twice or a field of the wrong type (opm reads it strictly)", Hint: "keep to schema, generateMajorChannels, generateMinorChannels, defaultChannelTypePreference and candidate/fast/stable: {bundles: [{image}]}"},
		{ID: ruleSemverPreference, Severity: catalog.SeverityError, Source: opm, Summary: "defaultChannelTypePreference is not major or minor, or names a stream the template does not generate", Hint: "set it to minor or major, and generate that stream"},
		{ID: ruleUnresolved, Severity: catalog.SeverityError, Source: ours, Summary: "a bundle image the template names could not be rendered (not in a catalog of the repository, no bundle directory builds it, and the registry did not serve it)", Hint: "check the image reference; a bundle image must exist before a template names it"},
		{ID: ruleTagReference, Severity: catalog.SeverityWarning, Source: ours, Summary: "a bundle image the template names by tag was rendered, offline, from the blob a committed catalog of the base revision holds for that exact reference; the tag may have moved since", Hint: "reference the bundle image by digest (registry/repository@sha256:…), as the App's catalog updates do"},
		{ID: ruleBundleCount, Severity: catalog.SeverityError, Source: opm, Summary: "an image a template names rendered to no bundle or to several", Hint: "name bundle images only"},
		{ID: ruleNoBundles, Severity: catalog.SeverityError, Source: opm, Summary: "an olm.semver template names no bundle", Hint: "add bundles to candidate, fast or stable"},
		{ID: ruleBundleVersion, Severity: catalog.SeverityError, Source: opm, Summary: "a bundle of an olm.semver template has no single olm.package property or its version is not semver", Hint: "semver templates order bundles by version: give every bundle a semver version"},
		{ID: ruleBundlePackage, Severity: catalog.SeverityError, Source: opm, Summary: "a bundle of an olm.semver template belongs to another package than the template's first bundle", Hint: "one semver template renders one package"},
		{ID: ruleDuplicateBundle, Severity: catalog.SeverityError, Source: opm, Summary: "the same bundle name appears twice in one archetype of an olm.semver template", Hint: "list each bundle once per archetype"},
		{ID: ruleBuildMetadata, Severity: catalog.SeverityError, Source: opm, Summary: "two bundles of one archetype differ only in build metadata, which semver cannot order", Hint: "give them versions that differ before the '+'"},
		{ID: rulePackageMetadata, Severity: catalog.SeverityWarning, Source: ours, Summary: "the package's icon and description (newer opm takes them from the default channel head's CSV) could not be derived, because that bundle's CSV is not available offline", Hint: "allow registry access for templates, or render with the older opm behaviour"},
		{ID: RuleDriftMissing, Severity: catalog.SeverityError, Source: ours, Summary: "the committed catalog lacks a blob its template renders (a bundle, a channel, the package)", Hint: "run the command in the message and commit its output"},
		{ID: RuleDriftExtra, Severity: catalog.SeverityError, Source: ours, Summary: "the committed catalog holds a blob its template does not render (a hand edit the next render would drop)", Hint: "add it to the template, or run the command in the message and commit its output"},
		{ID: RuleDriftChanged, Severity: catalog.SeverityError, Source: ours, Summary: "a blob of the committed catalog differs from what its template renders (a channel entry, a property, a package field)", Hint: "change the template rather than the catalog, then run the command in the message and commit its output"},
		{ID: RuleDriftFormat, Severity: catalog.SeverityWarning, Source: ours, Summary: "the committed catalog holds the blobs its template renders, but not byte for byte as opm writes them (order, formatting)", Hint: "commit the rendered output as is"},
		{ID: RuleDriftMapping, Severity: catalog.SeverityError, Source: ours, Summary: "a template mapping names a template or catalog that does not exist, or a catalog file that cannot be read", Hint: "fix the mapping (ci.yaml fbc.catalog_mapping or the policy's templates:) or add the file"},
	}
}

func finding(rule string, pos catalog.Position, msg string) catalog.Finding {
	for _, r := range Rules() {
		if r.ID == rule {
			return catalog.Finding{Rule: rule, Severity: r.Severity, Position: pos, Message: msg, Hint: r.Hint}
		}
	}
	return catalog.Finding{Rule: rule, Severity: catalog.SeverityError, Position: pos, Message: msg}
}
