package crd

import "github.com/catalogbot/catalogbot/catalog"

// Rule ids. Each is stable: repository policies name them in overrides.
const (
	RuleRequiredFieldAdded        = "crd.required-field-added"
	RuleFieldRemoved              = "crd.field-removed"
	RuleTypeChanged               = "crd.type-changed"
	RuleDefaultAdded              = "crd.default-added"
	RuleDefaultChanged            = "crd.default-changed"
	RuleDefaultRemoved            = "crd.default-removed"
	RuleEnumAdded                 = "crd.enum-added"
	RuleEnumValueRemoved          = "crd.enum-value-removed"
	RuleMinimumTightened          = "crd.minimum-tightened"
	RuleMaximumTightened          = "crd.maximum-tightened"
	RulePatternAdded              = "crd.pattern-added"
	RulePatternChanged            = "crd.pattern-changed"
	RulePatternRemoved            = "crd.pattern-removed"
	RuleNullableRemoved           = "crd.nullable-removed"
	RuleNullableAdded             = "crd.nullable-added"
	RuleScopeChanged              = "crd.scope-changed"
	RuleStoredVersionRemoved      = "crd.stored-version-removed"
	RuleServedVersionRemoved      = "crd.served-version-removed"
	RuleVersionUnserved           = "crd.version-unserved"
	RuleServedVersionIncompatible = "crd.served-version-incompatible"
	RuleCRDRemoved                = "crd.crd-removed"
	RuleUnknownChange             = "crd.unknown-change"
	RuleMapTypeAdded              = "crd.map-type-added"
	RuleListTypeAdded             = "crd.list-type-added"
	RuleListMapKeysAdded          = "crd.list-map-keys-added"
	RuleExampleAdded              = "crd.example-added"
	RuleFormatChanged             = "crd.format-changed"
	RuleFormatRemoved             = "crd.format-removed"
	RuleValidationRulesChanged    = "crd.validation-rules-changed"
	RuleValidationRulesRemoved    = "crd.validation-rules-removed"
	RuleStatusFieldRemoved        = "crd.status-field-removed"
	RuleNamesChanged              = "crd.names-changed"
	RulePruningEnabled            = "crd.pruning-enabled"

	RuleInvalidDocument = "crd.invalid-document"
	RuleNotACRD         = "crd.not-a-crd"
	RuleInvalidCRD      = "crd.invalid-crd"
	RuleMissingSchema   = "crd.missing-schema"
	RuleSchemaTooLarge  = "crd.schema-too-large"
	RuleDuplicateCRD    = "crd.duplicate-crd"
	RuleInvalidOverride = "crd.invalid-override"
)

const (
	srcSeed    = "OLM v1's CRD upgrade safety preflight (OpenShift docs, Extensions: Prohibited CRD upgrade changes)"
	srcCatalog = "catalogbot"
)

// ruleTable is every rule this package emits, in the order the rules
// reference lists them. It is immutable.
var ruleTable = []catalog.Rule{
	mkRule(RuleRequiredFieldAdded, catalog.SeverityError, "a field became required in an existing version",
		"existing objects without the field stop validating; make it optional or add it in a new version", srcSeed+"; crdify: required"),
	mkRule(RuleFieldRemoved, catalog.SeverityError, "a field was removed from an existing version",
		"clients and stored objects still use it; keep the field (mark it deprecated in its description) or remove it in a new version", srcSeed+"; crdify: existingFieldRemoval"),
	mkRule(RuleTypeChanged, catalog.SeverityError, "the type of a field changed",
		"stored values of the old type stop validating; add a new field with the new type instead", srcSeed+"; crdify: type"),
	mkRule(RuleDefaultAdded, catalog.SeverityError, "a default was added to a field that had none",
		"objects read back change silently; keep the field without a default or default it in the controller", srcSeed+"; crdify: default"),
	mkRule(RuleDefaultChanged, catalog.SeverityError, "the default of a field changed",
		"objects that relied on the old default change meaning; keep the old default", srcSeed+"; crdify: default"),
	mkRule(RuleDefaultRemoved, catalog.SeverityError, "the default of a field was removed",
		"objects that relied on the default change meaning; keep the default", srcSeed+"; crdify: default"),
	mkRule(RuleEnumAdded, catalog.SeverityError, "an enum was added to a field that allowed any value",
		"stored values outside the list stop validating; validate in the controller or in a new version", srcSeed+"; crdify: enum"),
	mkRule(RuleEnumValueRemoved, catalog.SeverityError, "values were removed from a field's enum",
		"stored objects using them stop validating; keep the values (document them as deprecated)", srcSeed+"; crdify: enum"),
	mkRule(RuleMinimumTightened, catalog.SeverityError, "a minimum, minLength, minItems or minProperties was added or raised",
		"stored values below the new bound stop validating; keep the old bound", srcSeed+"; crdify: minimum, minLength, minItems, minProperties"),
	mkRule(RuleMaximumTightened, catalog.SeverityError, "a maximum, maxLength, maxItems or maxProperties was added or lowered",
		"stored values above the new bound stop validating; keep the old bound", srcSeed+"; crdify: maximum, maxLength, maxItems, maxProperties"),
	mkRule(RulePatternAdded, catalog.SeverityError, "a pattern was added to a string field",
		"stored values that do not match stop validating; validate in the controller or in a new version", "crdify: pattern"),
	mkRule(RulePatternChanged, catalog.SeverityError, "the pattern of a string field changed",
		"stored values may no longer match; only widen a pattern when you can show every old value still matches, then override this rule", "crdify: pattern"),
	mkRule(RulePatternRemoved, catalog.SeverityError, "the pattern of a string field was removed",
		"the preflight refuses it although every old value still validates; keep the pattern, or override this rule for the release", "crdify: pattern (removalPolicy Disallow, operator-controller's default)"),
	mkRule(RuleNullableRemoved, catalog.SeverityError, "a field no longer accepts null",
		"stored nulls stop validating; keep nullable: true", "crdify: nullable"),
	mkRule(RuleNullableAdded, catalog.SeverityError, "a field now accepts null",
		"the preflight refuses it (clients may not expect null); keep nullable off, or override this rule for the release", "crdify: nullable (additionPolicy Disallow, operator-controller's default)"),
	mkRule(RuleScopeChanged, catalog.SeverityError, "the CRD's scope changed between Namespaced and Cluster",
		"the API server refuses it; ship a new CRD (new group or kind) instead", srcSeed+"; crdify: scope"),
	mkRule(RuleStoredVersionRemoved, catalog.SeverityError, "a version that was the storage version was removed from spec.versions",
		"objects are stored in it; make another version the storage version, migrate the objects, and remove it in a later release", srcSeed+"; crdify: storedVersionRemoval (judged from spec, which bundles carry, not status)"),
	mkRule(RuleServedVersionRemoved, catalog.SeverityWarning, "a served version was removed from spec.versions",
		"clients still use it; set served: false in one release and remove the version in a later one", "Operator SDK docs, Defining cluster service versions: deprecating CRD versions; catalogbot extra, the preflight does not check it"),
	mkRule(RuleVersionUnserved, catalog.SeverityWarning, "a version stopped being served",
		"the documented deprecation path; make sure clients have moved to another version", "Operator SDK docs, Defining cluster service versions: deprecating CRD versions"),
	mkRule(RuleServedVersionIncompatible, catalog.SeverityError, "two served versions became incompatible and conversion is None",
		"with conversion None objects are shared as-is between versions; make the schemas compatible or add a conversion webhook", "crdify: served version validator (incompatibilities the old CRD already had are not reported)"),
	mkRule(RuleCRDRemoved, catalog.SeverityWarning, "a CRD the old bundle shipped is missing from the new one",
		"OLM leaves the CRD and its objects behind without an owner; keep shipping the CRD", srcCatalog+" extra, the preflight does not check it"),
	mkRule(RuleUnknownChange, catalog.SeverityError, "a change no rule can judge safe",
		"review the listed attributes; if the change is safe, override this rule for the release", srcSeed+" (unknown change); crdify: unhandled"),
	mkRule(RuleMapTypeAdded, catalog.SeverityError, "x-kubernetes-map-type was added to a field",
		"the preflight refuses it (an unhandled change) although stored objects still validate; under crdSafety.profile compatibility it is a warning", "crdify: unhandled (x-kubernetes-map-type); preflight only"),
	mkRule(RuleListTypeAdded, catalog.SeverityError, "x-kubernetes-list-type was added to a list",
		"the preflight refuses it (an unhandled change); a set or map list type can make stored lists with duplicates invalid; under crdSafety.profile compatibility it is a warning", "crdify: unhandled (x-kubernetes-list-type); preflight only"),
	mkRule(RuleListMapKeysAdded, catalog.SeverityError, "x-kubernetes-list-map-keys was added to a list",
		"the preflight refuses it (an unhandled change); under crdSafety.profile compatibility it is a warning", "crdify: unhandled (x-kubernetes-list-map-keys); preflight only"),
	mkRule(RuleExampleAdded, catalog.SeverityError, "an example was added to a field",
		"documentation only, but the preflight refuses it (an unhandled change); under crdSafety.profile compatibility it is a warning", "crdify: unhandled (example); preflight only"),
	mkRule(RuleFormatChanged, catalog.SeverityError, "a field's format was added or changed",
		"values stored under the old format may no longer validate (int64 to int32, a string given a format); keep the old format, or override this rule for the release when every stored value fits", "crdify: unhandled (format)"),
	mkRule(RuleFormatRemoved, catalog.SeverityError, "a field's format was removed",
		"stored values still validate, but the preflight refuses it (an unhandled change); under crdSafety.profile compatibility it is a warning", "crdify: unhandled (format); preflight only"),
	mkRule(RuleValidationRulesChanged, catalog.SeverityError, "x-kubernetes-validations (CEL rules) were added to a field or changed",
		"updates of existing objects must pass the new rules (a transition rule such as immutability refuses changes it allowed before); check that stored objects pass them, or override this rule for the release", "crdify: unhandled (x-kubernetes-validations)"),
	mkRule(RuleValidationRulesRemoved, catalog.SeverityError, "x-kubernetes-validations (CEL rules) were removed from a field",
		"stored objects still validate, but the preflight refuses it (an unhandled change); under crdSafety.profile compatibility it is a warning", "crdify: unhandled (x-kubernetes-validations); preflight only"),
	mkRule(RuleStatusFieldRemoved, catalog.SeverityError, "a field was removed from status in an existing version",
		"the preflight refuses it; clients reading status lose the field, stored objects still validate; under crdSafety.profile compatibility it is a warning", srcSeed+"; crdify: existingFieldRemoval; preflight only"),
	mkRule(RuleNamesChanged, catalog.SeverityWarning, "the CRD's kind, listKind or singular name changed",
		"clients and RBAC rules use the old names; keep them", srcCatalog+" extra, the preflight does not check it"),
	mkRule(RulePruningEnabled, catalog.SeverityWarning, "spec.preserveUnknownFields changed from true to false",
		"fields the schema does not list are pruned from stored objects when they are next written; list them in the schema first", srcCatalog+" extra, the preflight does not check it"),

	mkRule(RuleInvalidDocument, catalog.SeverityError, "a document does not parse as YAML or JSON",
		"fix the syntax at the given line", srcCatalog),
	mkRule(RuleNotACRD, catalog.SeverityError, "a document is not an apiextensions.k8s.io CustomResourceDefinition",
		"pass files that hold only CRDs", srcCatalog),
	mkRule(RuleInvalidCRD, catalog.SeverityError, "a CRD is missing a required part or has one of the wrong shape",
		"fix the CRD as the message says; kubectl apply --dry-run=server shows the same", srcCatalog),
	mkRule(RuleMissingSchema, catalog.SeverityError, "a CRD version has no openAPIV3Schema",
		"add spec.versions[].schema.openAPIV3Schema; without it nothing can be compared", srcCatalog),
	mkRule(RuleSchemaTooLarge, catalog.SeverityError, "a schema nests too deep or has too many nodes, or a CRD has too many served versions to compare pairwise",
		"real CRDs stay far below the limit; check the file was generated correctly", srcCatalog),
	mkRule(RuleDuplicateCRD, catalog.SeverityError, "the same CRD name appears twice in one set",
		"keep one document per CRD", srcCatalog),
	mkRule(RuleInvalidOverride, catalog.SeverityError, "a severity override names an unknown rule or severity",
		"use a rule id from the rules reference and one of error, warning, ignore", srcCatalog),
}

func mkRule(id string, sev catalog.Severity, summary, hint, source string) catalog.Rule {
	return catalog.Rule{ID: id, Severity: sev, Summary: summary, Hint: hint, Source: source}
}

// Rules returns every rule this package can emit.
func Rules() []catalog.Rule {
	return append([]catalog.Rule(nil), ruleTable...)
}

func ruleByID(id string) (catalog.Rule, bool) {
	for _, r := range ruleTable {
		if r.ID == id {
			return r, true
		}
	}
	return catalog.Rule{}, false
}

// checkOf is the name of the preflight's validation (crdify's) a rule stands for.
func checkOf(rule string) string {
	switch rule {
	case RuleRequiredFieldAdded:
		return "required"
	case RuleTypeChanged:
		return "type"
	case RuleDefaultAdded, RuleDefaultChanged, RuleDefaultRemoved:
		return "default"
	case RuleEnumAdded, RuleEnumValueRemoved:
		return "enum"
	case RulePatternAdded, RulePatternChanged, RulePatternRemoved:
		return "pattern"
	case RuleNullableAdded, RuleNullableRemoved:
		return "nullable"
	case RuleUnknownChange, RuleMapTypeAdded, RuleListTypeAdded, RuleListMapKeysAdded, RuleExampleAdded,
		RuleFormatChanged, RuleFormatRemoved, RuleValidationRulesChanged, RuleValidationRulesRemoved:
		return "unhandled"
	case RuleFieldRemoved, RuleStatusFieldRemoved:
		return "existingFieldRemoval"
	case RuleScopeChanged:
		return "scope"
	case RuleStoredVersionRemoved:
		return "storedVersionRemoval"
	}
	return ""
}

// Profiles of the CRD upgrade-safety verdict (Options.Profile).
const (
	// ProfilePreflight is OLM v1's preflight: an error wherever it refuses the upgrade (the default).
	ProfilePreflight = "preflight"
	// ProfileCompatibility is an error where stored objects or existing clients break; the changes only
	// the preflight refuses are warnings.
	ProfileCompatibility = "compatibility"
)

// preflightOnly are the rules for changes the preflight refuses although stored objects still validate and
// existing clients keep working.
var preflightOnly = map[string]bool{
	RuleMapTypeAdded: true, RuleListTypeAdded: true, RuleListMapKeysAdded: true, RuleExampleAdded: true,
	RuleNullableAdded: true, RuleDefaultAdded: true, RuleStatusFieldRemoved: true,
	RuleFormatRemoved: true, RuleValidationRulesRemoved: true,
}

// PreflightOnlyNote ends the message of a preflight-only change under the compatibility profile.
const PreflightOnlyNote = "OLM v1 will refuse this upgrade unless its preflight is disabled"
