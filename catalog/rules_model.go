package catalog

import "sync"

// Rule ids of the model decoding and of Validate. Each has one entry in modelRules.
const (
	rulePackageFieldInvalid      = "package.field-invalid"
	rulePackageNameEmpty         = "package.name-empty"
	rulePackageNameInvalid       = "package.name-invalid"
	rulePackageDuplicate         = "package.duplicate"
	rulePackageDefaultEmpty      = "package.default-channel-empty"
	rulePackageDefaultMissing    = "package.default-channel-missing"
	rulePackageNoChannels        = "package.no-channels"
	rulePackageDefaultHeadOlder  = "package.default-head-not-newest"
	ruleChannelFieldInvalid      = "channel.field-invalid"
	ruleChannelPackageUnknown    = "channel.package-unknown"
	ruleChannelNameEmpty         = "channel.name-empty"
	ruleChannelDuplicate         = "channel.duplicate"
	ruleChannelNoEntries         = "channel.no-entries"
	ruleChannelEntryNameEmpty    = "channel.entry-name-empty"
	ruleChannelEntryDuplicate    = "channel.entry-duplicate"
	ruleChannelEntryNoBundle     = "channel.entry-bundle-missing"
	ruleChannelSkipEmpty         = "channel.skip-empty"
	ruleChannelSkipRangeInvalid  = "channel.skiprange-invalid"
	ruleChannelNoHead            = "channel.no-head"
	ruleChannelMultipleHeads     = "channel.multiple-heads"
	ruleChannelCycle             = "channel.replaces-cycle"
	ruleChannelStranded          = "channel.stranded"
	ruleBundleFieldInvalid       = "bundle.field-invalid"
	ruleBundlePackageEmpty       = "bundle.package-empty"
	ruleBundlePackageUnknown     = "bundle.package-unknown"
	ruleBundleNameEmpty          = "bundle.name-empty"
	ruleBundleDuplicate          = "bundle.duplicate"
	ruleBundleNotInChannel       = "bundle.not-in-channel"
	ruleBundlePropertyInvalid    = "bundle.property-invalid"
	ruleBundleObjectInvalid      = "bundle.object-invalid"
	ruleBundlePackagePropMissing = "bundle.package-property-missing"
	ruleBundlePackagePropMulti   = "bundle.package-property-multiple"
	ruleBundlePackagePropDiffers = "bundle.package-property-mismatch"
	ruleBundleVersionInvalid     = "bundle.version-invalid"
	ruleBundleVersionDuplicate   = "bundle.version-duplicate"
	ruleBundleImageEmpty         = "bundle.image-empty"
	ruleBundleImageInvalid       = "bundle.image-invalid"
	ruleBundleRelatedInvalid     = "bundle.related-image-invalid"
	ruleBundleRequiresUnknown    = "bundle.required-package-unknown"
	ruleBundleRequiresUnsatisf   = "bundle.required-package-unsatisfied"
	ruleBundlePropertyMisspelt   = "bundle.property-type-misspelt"
	ruleBundleCSVMismatch        = "bundle.csv-mismatch"
	ruleDeprecationFieldInvalid  = "deprecation.field-invalid"
	ruleDeprecationPackageEmpty  = "deprecation.package-empty"
	ruleDeprecationPackageUnk    = "deprecation.package-unknown"
	ruleDeprecationDuplicate     = "deprecation.duplicate"
	ruleDeprecationSchemaEmpty   = "deprecation.reference-schema-empty"
	ruleDeprecationSchemaUnknown = "deprecation.reference-schema-unknown"
	ruleDeprecationRefDuplicate  = "deprecation.reference-duplicate"
	ruleDeprecationBundleUnknown = "deprecation.bundle-unknown"
	ruleDeprecationChannelUnk    = "deprecation.channel-unknown"
	ruleDeprecationPackageNamed  = "deprecation.package-reference-named"
	ruleDeprecationMessageEmpty  = "deprecation.message-empty"
)

// modelRules is the table of every rule the model decoding and Validate emit.
func modelRules() []Rule {
	const (
		load    = "opm v1.60.0 (declcfg.LoadFS: decoding blobs)"
		convert = "opm v1.60.0 (declcfg.ConvertToModel)"
		model   = "opm v1.60.0 (model.Validate)"
		images  = "opm v1.64+ (declcfg.ConvertToModel: image pull specs)"
		ranges  = "opm v1.69+ (model.Validate: skipRange)"
		ours    = "catalogbot"
	)
	e, w := SeverityError, SeverityWarning
	rule := func(id string, sev Severity, summary, hint, source string) Rule {
		return Rule{ID: id, Severity: sev, Summary: summary, Hint: hint, Source: source}
	}
	return []Rule{
		rule(rulePackageFieldInvalid, e, "a field of an olm.package blob has the wrong type (or icon.base64data is not base64), so opm cannot decode the blob",
			"give the field the type the message names; quote strings YAML would read as numbers or booleans", load),
		rule(rulePackageNameEmpty, e, "an olm.package blob has no name", "set name to the package's name", convert),
		rule(rulePackageNameInvalid, e, "a package name is not a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)",
			"rename the package to a valid label, e.g. my-operator", convert),
		rule(rulePackageDuplicate, e, "two olm.package blobs declare the same package in one catalog", "keep one olm.package blob per package and delete the other", convert),
		rule(rulePackageDefaultEmpty, e, "a package has no defaultChannel", "set defaultChannel to one of the package's channels", model),
		rule(rulePackageDefaultMissing, e, "a package's defaultChannel names a channel the package does not have (opm creates it empty and refuses it)",
			"add that channel, or point defaultChannel at an existing channel", model),
		rule(rulePackageNoChannels, e, "a package has no channel", "add an olm.channel blob for the package with its bundles", model),
		rule(rulePackageDefaultHeadOlder, w, "the head of the default channel is not the package's newest version, so new installs do not get the latest bundle",
			"check the default channel and the channels' upgrade edges; set defaultChannel to the channel carrying the newest version", ours),
		rule(ruleChannelFieldInvalid, e, "a field of an olm.channel blob has the wrong type, so opm cannot decode the blob",
			"give the field the type the message names (entries is a list of objects; skips a list of strings); quote names YAML reads as numbers or booleans", load),
		rule(ruleChannelPackageUnknown, e, "a channel names a package that has no olm.package blob in this catalog (or no package at all)",
			"fix the package name, or add the package's olm.package blob", convert),
		rule(ruleChannelNameEmpty, e, "a channel has no name", "set the channel's name", convert),
		rule(ruleChannelDuplicate, e, "two olm.channel blobs of one package have the same name", "merge the entries into one channel blob", convert),
		rule(ruleChannelNoEntries, e, "a channel has no entries", "add at least one entry, or delete the channel", model),
		rule(ruleChannelEntryNameEmpty, e, "a channel entry has no name", "set the entry's name to a bundle name of the package", convert),
		rule(ruleChannelEntryDuplicate, e, "a channel lists the same bundle twice", "keep one entry per bundle in a channel", convert),
		rule(ruleChannelEntryNoBundle, e, "a channel entry names a bundle that has no olm.bundle blob in the package", "add the bundle's olm.bundle blob, or fix the entry's name", convert),
		rule(ruleChannelSkipEmpty, e, "a channel entry's skips list holds an empty string", "remove the empty item from skips", model),
		rule(ruleChannelSkipRangeInvalid, e, "a skipRange does not parse as a semver range in opm's syntax (comparators < <= > >= = != on full X.Y.Z versions, AND by space, OR by ||; no ^, ~, commas or v prefix)",
			"write it like '>=1.2.0 <1.4.0'", ranges),
		rule(ruleChannelNoHead, e, "a channel has no head: every entry is replaced or skipped by another entry, so the graph loops",
			"break the loop: the newest entry must not be replaced or skipped by any entry", model),
		rule(ruleChannelMultipleHeads, e, "a channel has more than one head (entries nothing replaces or skips; skipRange does not count)",
			"link the older head into the newest one with replaces or skips", model),
		rule(ruleChannelCycle, e, "following replaces from the channel head comes back to an entry already visited", "fix the replaces edges so they only point at older bundles", model),
		rule(ruleChannelStranded, e, "a channel entry is neither reachable by replaces from the head nor skipped by any entry",
			"make a newer entry replace or skip it, or remove it from the channel", model),
		rule(ruleBundleFieldInvalid, e, "a field of an olm.bundle blob has the wrong type, so opm cannot decode the blob",
			"give the field the type the message names (properties is a list of {type, value} objects); quote strings YAML reads as numbers or booleans", load),
		rule(ruleBundlePackageEmpty, e, "a bundle has no package", "set package to the bundle's package name", convert),
		rule(ruleBundlePackageUnknown, e, "a bundle names a package that has no olm.package blob in this catalog", "fix the package name, or add the package's olm.package blob", convert),
		rule(ruleBundleNameEmpty, e, "a bundle has no name", "set name (conventionally <package>.v<version>)", model),
		rule(ruleBundleDuplicate, e, "two olm.bundle blobs of one package have the same name", "delete one of them, or rename it", convert),
		rule(ruleBundleNotInChannel, e, "a bundle is not an entry of any channel of its package", "add an entry for it to a channel, or delete the bundle", convert),
		rule(ruleBundlePropertyInvalid, e, "a bundle property has no value, or the value of a known type (olm.package, olm.gvk, olm.package.required, olm.gvk.required, olm.bundle.object, olm.csv.metadata, olm.channel) does not fit its shape",
			"fix the value to the shape the message names; quote versions and other strings YAML reads as numbers or booleans (version: '1.0' or \"1.0.0\", not 1.0)", convert),
		rule(ruleBundleObjectInvalid, e, "an olm.bundle.object's data is not base64, or does not decode to a YAML or JSON manifest", "re-render the bundle (opm render) to get valid base64 manifests", load),
		rule(ruleBundlePackagePropMissing, e, "a bundle has no olm.package property", "add a property {type: olm.package, value: {packageName: <package>, version: <X.Y.Z>}}", convert),
		rule(ruleBundlePackagePropMulti, e, "a bundle has more than one olm.package property", "keep exactly one olm.package property", convert),
		rule(ruleBundlePackagePropDiffers, e, "the packageName of a bundle's olm.package property is not the bundle's package", "make packageName equal to the bundle's package", convert),
		rule(ruleBundleVersionInvalid, e, "a bundle's version (olm.package property) is not strict semver: three numbers, no v prefix, no leading zeros",
			"write it like 1.2.3, 1.2.3-rc.1 or 1.2.3+build.5", convert),
		rule(ruleBundleVersionDuplicate, e, "two bundles of one package have the same version (build metadata counts: 1.0.0+a and 1.0.0+b differ)",
			"give each bundle its own version", model),
		rule(ruleBundleImageEmpty, e, "a bundle has no image and no olm.bundle.object properties", "set image to the bundle image reference (by digest)", model),
		rule(ruleBundleImageInvalid, e, "a bundle's image is not a valid image reference", "fix the reference: registry/repository[:tag][@sha256:<64 hex digits>], lower-case repository, no spaces", images),
		rule(ruleBundleRelatedInvalid, e, "a relatedImages image is not a valid image reference", "fix the reference: registry/repository[:tag][@sha256:<64 hex digits>], lower-case repository, no spaces", images),
		rule(ruleBundleRequiresUnknown, w, "an olm.package.required property names a package this catalog does not have, so OLM cannot install the bundle from it alone",
			"check the package name, or make sure the package is in a catalog installed alongside", ours),
		rule(ruleBundleRequiresUnsatisf, w, "no bundle of the required package has a version inside the olm.package.required versionRange (or the range does not parse)",
			"widen the range, or publish a matching version of the required package", ours),
		rule(ruleBundlePropertyMisspelt, w, "a property type is close to, but not, a type OLM knows, so OLM ignores it", "spell the type exactly as OLM does", ours),
		rule(ruleBundleCSVMismatch, w, "the ClusterServiceVersion embedded in olm.bundle.object disagrees with the bundle's name or version",
			"re-render the bundle from its image so the catalog and the CSV agree", ours),
		rule(ruleDeprecationFieldInvalid, e, "a field of an olm.deprecations blob has the wrong type, so opm cannot decode the blob",
			"give the field the type the message names (entries is a list of {reference: {schema, name}, message})", load),
		rule(ruleDeprecationPackageEmpty, e, "an olm.deprecations blob has no package", "set package to the package it deprecates things of", convert),
		rule(ruleDeprecationPackageUnk, e, "an olm.deprecations blob names a package that is not in the catalog", "fix the package name", convert),
		rule(ruleDeprecationDuplicate, e, "a package has more than one olm.deprecations blob", "merge the entries into one olm.deprecations blob", convert),
		rule(ruleDeprecationSchemaEmpty, e, "a deprecation entry's reference has no schema", "set reference.schema to olm.package, olm.channel or olm.bundle", convert),
		rule(ruleDeprecationSchemaUnknown, e, "a deprecation entry's reference schema is not olm.package, olm.channel or olm.bundle", "use olm.package, olm.channel or olm.bundle", convert),
		rule(ruleDeprecationRefDuplicate, e, "two deprecation entries of a package reference the same object", "keep one entry per deprecated object", convert),
		rule(ruleDeprecationBundleUnknown, e, "a deprecation entry names a bundle the package does not have", "fix the bundle name or remove the entry", convert),
		rule(ruleDeprecationChannelUnk, e, "a deprecation entry names a channel the package does not have", "fix the channel name or remove the entry", convert),
		rule(ruleDeprecationPackageNamed, e, "a deprecation entry with schema olm.package has a name (the package is the blob's package)", "remove reference.name", convert),
		rule(ruleDeprecationMessageEmpty, e, "a deprecation entry has no message", "say why it is deprecated and what to use instead", model),
	}
}

// modelRuleIndex maps each model rule id to its entry (an immutable table, built on first use).
var modelRuleIndex = sync.OnceValue(func() map[string]Rule {
	m := map[string]Rule{}
	for _, r := range modelRules() {
		m[r.ID] = r
	}
	return m
})

// newFinding makes a finding of a model rule with the rule's severity and hint.
func newFinding(rule string, pos Position, pkg, msg string) Finding {
	r := modelRuleIndex()[rule]
	return Finding{Rule: rule, Severity: r.Severity, Position: pos, Message: msg, Hint: r.Hint, Package: pkg}
}
