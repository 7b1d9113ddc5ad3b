package crd

// Deviation is a deliberate difference between this package's verdicts and
// OLM v1's CRD upgrade-safety preflight (crdify v0.6.0 with operator-controller's
// configuration). The differential test against crdify's recorded verdicts
// accepts a disagreement only where one of these explains it.
type Deviation struct {
	ID   string
	What string
	Why  string
}

// Deviations lists every deliberate difference from the preflight.
func Deviations() []Deviation {
	return []Deviation{
		{ID: "stored-version-from-spec",
			What: "Without status.storedVersions (bundle CRDs carry none) the storage version of the old CRD counts as stored, so removing it is an error (crd.stored-version-removed).",
			Why:  "The preflight reads status.storedVersions from the cluster, which always holds the storage version; a bundle cannot show it, so this is stricter than the preflight only when the cluster already migrated away from that version."},
		{ID: "removed-subtree-reported-once",
			What: "A removed field is one crd.field-removed finding at the top of the removed subtree. The preflight also lists every node below it, and within a version compares each removed node with an empty one (type changed to \"\", …).",
			Why:  "The verdict is the same; one finding per removed field is what an author can act on. The differential test folds crdify's repeats the same way before comparing."},
		{ID: "unhandled-wording",
			What: "For crd.unknown-change the OLM line follows operator-controller's shortened form (\"unhandled changes found (Format \\\"\\\" -> \\\"email\\\")\"), built from the JSON values; for a change deep inside allOf, anyOf, oneOf, not or additionalProperties it names that attribute (\"AdditionalProperties <complex value> -> <complex value> (changed)\") where the preflight names the nested Go field that changed.",
			Why:  "The preflight derives its text from go-cmp's diff, whose output go-cmp deliberately randomises and documents as unstable; the validation name (unhandled), version and path match."},
	}
}

// PreflightNotes is the rules reference's text on how the rules map to the
// preflight: which rule covers which JSONSchemaProps keyword, what is not
// compared, and the deliberate differences (markdown).
func PreflightNotes() string {
	s := `### How these rules match OLM v1's preflight

The default severities are OLM v1's CRD upgrade-safety preflight: crdify v0.6.0 with operator-controller's
configuration (description changes ignored, enum additions allowed, served versions not compared when conversion
is ` + "`Webhook`" + `, every change no validation handles an error). Every node of an existing version's schema is
compared with the node at the same path of the new version; a differential test checks our verdicts against
crdify's on generated pairs covering every keyword, added, removed and changed, at the root and under
` + "`properties`, `items`, `additionalProperties`" + ` and the combinators
(` + "`catalog/crd/testdata/crdify/golden.txt`" + `, recorded by ` + "`scripts/record-crdify-golden.sh`" + `).
With ` + "`crdSafety.profile: compatibility`" + ` in the policy (` + "`--profile compatibility`" + ` for crd-diff) the changes
only the preflight refuses — ` + "`crd.map-type-added`, `crd.list-type-added`, `crd.list-map-keys-added`, `crd.example-added`, `crd.nullable-added`, `crd.default-added`, `crd.status-field-removed`, `crd.format-removed`, `crd.validation-rules-removed`" + ` —
are warnings saying "` + PreflightOnlyNote + `".

| keyword | rule |
|---|---|
| ` + "`type`" + ` | ` + "`crd.type-changed`" + ` |
| ` + "`required`" + ` (a name added) | ` + "`crd.required-field-added`" + ` (removing one is allowed) |
| ` + "`properties`" + ` (a field removed), ` + "`items`" + `, ` + "`additionalProperties`" + ` or a combinator entry removed | ` + "`crd.field-removed`" + ` (adding one is allowed) |
| ` + "`default`" + ` | ` + "`crd.default-added`, `crd.default-changed`, `crd.default-removed`" + ` |
| ` + "`enum`" + ` | ` + "`crd.enum-added`" + `, ` + "`crd.enum-value-removed`" + ` (also when the whole enum is removed; adding values is allowed) |
| ` + "`minimum`, `minLength`, `minItems`, `minProperties`" + ` | ` + "`crd.minimum-tightened`" + ` (lowering or removing is allowed) |
| ` + "`maximum`, `maxLength`, `maxItems`, `maxProperties`" + ` | ` + "`crd.maximum-tightened`" + ` (raising or removing is allowed) |
| ` + "`pattern`" + ` | ` + "`crd.pattern-added`, `crd.pattern-changed`, `crd.pattern-removed`" + ` |
| ` + "`nullable`" + ` | ` + "`crd.nullable-removed`, `crd.nullable-added`" + ` |
| ` + "`description`" + ` | none: ignored, except inside the next row |
| anything below ` + "`allOf`, `anyOf`, `oneOf`, `not`, `additionalProperties`" + ` (descriptions included) | ` + "`crd.unknown-change`" + ` at the node that holds them, besides what the nested nodes show: the preflight compares these whole |
| ` + "`x-kubernetes-map-type`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `example` added" + ` | ` + "`crd.map-type-added`, `crd.list-type-added`, `crd.list-map-keys-added`, `crd.example-added`" + `: each its own rule (the preflight calls each an unhandled change), so one can be waived alone |
| ` + "`format`" + ` added or changed; removed | ` + "`crd.format-changed`; `crd.format-removed`" + ` (each its own rule, as above) |
| ` + "`x-kubernetes-validations`" + ` added or changed; removed | ` + "`crd.validation-rules-changed`; `crd.validation-rules-removed`" + ` |
| ` + "`title`, `externalDocs`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `uniqueItems`, other `x-kubernetes-*`, and the attributes above changed or removed" + ` | ` + "`crd.unknown-change`" + ` |
| a field under ` + "`status`" + ` removed | ` + "`crd.status-field-removed`" + ` (elsewhere ` + "`crd.field-removed`" + `) |
| ` + "`spec.scope`" + ` | ` + "`crd.scope-changed`" + ` |
| a stored version removed | ` + "`crd.stored-version-removed`" + ` |
| two served versions incompatible (conversion ` + "`None`" + `) | ` + "`crd.served-version-incompatible`" + `: every pair of served versions is compared, less preferred to more preferred as Kubernetes ranks versions (apimachinery's ` + "`CompareKubeAwareVersionStrings`" + `, as the preflight sorts them: other names before alpha, beta, then GA; other names in reverse alphabetical order, so ` + "`v1-10-0 -> v1`" + `), and only incompatibilities the old CRD did not already have are reported |

Not compared, as the preflight does not compare them: ` + "`subresources`, `additionalPrinterColumns`, `selectableFields`, `names.shortNames`, `names.categories`" + `, and keys
that are not JSONSchemaProps fields (the API server drops them). Our own additions, all warnings:
` + "`crd.crd-removed`, `crd.served-version-removed`, `crd.version-unserved`, `crd.names-changed`, `crd.pruning-enabled`" + `.

### Deliberate differences from the preflight

`
	for _, d := range Deviations() {
		s += "- **" + d.ID + "**: " + d.What + " " + d.Why + "\n"
	}
	return s
}
