package bundle

import "github.com/catalogbot/catalogbot/catalog"

// Rule ids of bundle directories. Each is what opm (operator-registry's bundle loader and its format
// validation) refuses, unless its Source says otherwise.
const (
	ruleNoManifests         = "bundle.no-manifests"
	ruleNoMetadata          = "bundle.no-metadata"
	ruleNoAnnotations       = "bundle.no-annotations"
	ruleAnnotationMissing   = "bundle.annotation-missing"
	ruleAnnotationNotString = "bundle.annotation-not-string"
	ruleAnnotationEmpty     = "bundle.annotation-empty"
	ruleAnnotationPath      = "bundle.annotation-path"
	ruleMediaType           = "bundle.mediatype"
	ruleDependencyType      = "bundle.dependency-type"
	ruleMetadataShape       = "bundle.metadata-shape"
	ruleNotRegular          = "bundle.not-regular-file"
	ruleManifestsSubdir     = "bundle.manifests-subdirectory"
	ruleManifestEmpty       = "bundle.manifest-empty"
	ruleManifestMulti       = "bundle.manifest-several-objects"
	ruleManifestNoKind      = "bundle.manifest-no-kind"
	ruleManifestNoName      = "bundle.manifest-no-name"
	ruleUnsupportedKind     = "bundle.unsupported-kind"
	ruleCRDVersion          = "bundle.crd-api-version"
	ruleCSVCount            = "bundle.csv-count"
	ruleOwnedCRDMissing     = "bundle.owned-crd-missing"
	ruleManifestsHidden     = "bundle.manifests-hidden-file"
	ruleTooLarge            = "bundle.too-large"
	ruleMetadataAmbiguous   = "bundle.metadata-ambiguous"
)

// Rules lists every rule of this package.
func Rules() []catalog.Rule {
	rules := append(formatRules(), csvRules()...)
	rules = append(rules, bundleValidatorRules()...)
	rules = append(rules, verdictRules()...)
	for i := range rules {
		if strictRules[rules[i].ID] {
			rules[i].Summary += " (a warning: opm render and operator-sdk's validators accept it; an error when the bundle root says strict: true, or with bundle validate --strict)"
		}
	}
	rules = append(rules, operatorHubRules()...)
	rules = append(rules, removedAPIRules()...)
	rules = append(rules, goodPracticesRules()...)
	return append(rules, olmv1Rules()...)
}

func formatRules() []catalog.Rule {
	const opm = "opm (operator-registry bundle format validation)"
	return []catalog.Rule{
		{ID: ruleNoManifests, Severity: catalog.SeverityError, Source: opm, Summary: "the bundle directory has no manifests/ directory", Hint: "put the CSV and CRDs in manifests/"},
		{ID: ruleNoMetadata, Severity: catalog.SeverityError, Source: opm, Summary: "the bundle directory has no metadata/ directory", Hint: "add metadata/annotations.yaml (operator-sdk generate bundle writes it)"},
		{ID: ruleNoAnnotations, Severity: catalog.SeverityError, Source: opm, Summary: "no file of metadata/ holds annotations opm can read (an 'annotations:' mapping whose package, channels or default channel is set)", Hint: "add metadata/annotations.yaml with the operators.operatorframework.io.bundle.* annotations"},
		{ID: ruleAnnotationMissing, Severity: catalog.SeverityWarning, Source: opm, Summary: "a required bundle annotation is missing (mediatype, manifests, metadata, package, channels)", Hint: "add it to metadata/annotations.yaml"},
		{ID: ruleAnnotationNotString, Severity: catalog.SeverityWarning, Source: opm, Summary: "a bundle annotation's value is not a string (opm cannot read the file's annotations when the package, channels or default channel is a mapping or a list)", Hint: "quote the value"},
		{ID: ruleAnnotationEmpty, Severity: catalog.SeverityWarning, Source: opm, Summary: "the package, channels or default channel annotation is empty", Hint: "give it a value, or remove the optional default channel annotation"},
		{ID: ruleAnnotationPath, Severity: catalog.SeverityWarning, Source: opm, Summary: "the manifests or metadata annotation is not manifests/ or metadata/", Hint: "set them to manifests/ and metadata/: opm reads those directories"},
		{ID: ruleMediaType, Severity: catalog.SeverityWarning, Source: opm, Summary: "the bundle's mediatype is not registry+v1", Hint: "catalogs of this repository take registry+v1 bundles"},
		{ID: ruleDependencyType, Severity: catalog.SeverityWarning, Source: opm, Summary: "metadata/dependencies.yaml names a dependency type OLM does not know", Hint: "use olm.package, olm.gvk, olm.constraint or olm.label"},
		{ID: ruleMetadataShape, Severity: catalog.SeverityWarning, Source: opm, Summary: "a dependencies or properties list of metadata/ is not a list of {type, value} entries: opm ignores it (and renders the bundle without it)", Hint: "write 'dependencies:' (or 'properties:') followed by '- type: ... value: ...' items"},
		{ID: ruleNotRegular, Severity: catalog.SeverityError, Source: "catalogbot", Summary: "a file of the bundle is a link or special file; it is never followed", Hint: "replace the link with the file itself"},
		{ID: ruleManifestsHidden, Severity: catalog.SeverityError, Source: "operator-sdk bundle validate (operator-framework/api's bundle loader)", Summary: "manifests/ holds a hidden file (its name starts with '.'), which opm skips and operator-framework/api's loader refuses", Hint: "remove the file (an editor's backup, .DS_Store, ...) from manifests/"},
		{ID: ruleTooLarge, Severity: catalog.SeverityError, Source: "catalogbot (bounds)", Summary: "manifests/ and metadata/ hold more files or bytes than a bundle may (1000 files and folders, 64 MiB, counted at any depth, read or not: every one goes into the bundle image)", Hint: "remove what the bundle does not need; a bundle is its manifests and a few metadata files"},
		{ID: ruleMetadataAmbiguous, Severity: catalog.SeverityError, Source: "catalogbot (opm reads the first file of metadata/ in name order that holds annotations, dependencies or properties)", Summary: "metadata/ is ambiguous: several files hold bundle annotations (or dependencies, or properties), or an olm.package property names another package than the annotations", Hint: "keep one annotations.yaml, one dependencies.yaml and one properties.yaml in metadata/, all about the same package"},
		{ID: ruleManifestsSubdir, Severity: catalog.SeverityError, Source: opm, Summary: "manifests/ holds a directory, which opm does not read", Hint: "move its files into manifests/ itself"},
		{ID: ruleManifestEmpty, Severity: catalog.SeverityError, Source: opm, Summary: "a manifest file holds no object", Hint: "remove the file or put the object in it"},
		{ID: ruleManifestMulti, Severity: catalog.SeverityWarning, Source: opm, Summary: "a manifest file holds several objects; opm reads only the first", Hint: "put each object in a file of its own"},
		{ID: ruleManifestNoKind, Severity: catalog.SeverityError, Source: opm, Summary: "a manifest has no kind", Hint: "every file of manifests/ is one Kubernetes object, with apiVersion and kind"},
		{ID: ruleManifestNoName, Severity: catalog.SeverityWarning, Source: opm, Summary: "a manifest has no metadata.name", Hint: "name the object"},
		{ID: ruleUnsupportedKind, Severity: catalog.SeverityWarning, Source: opm, Summary: "a manifest's kind is not one a registry+v1 bundle may ship", Hint: "ship only the CSV, CRDs and the kinds OLM supports (Service, ConfigMap, Secret, RBAC, monitoring, console objects, ...); the operator creates the rest"},
		{ID: ruleCRDVersion, Severity: catalog.SeverityError, Source: opm, Summary: "a CRD's apiVersion is neither apiextensions.k8s.io/v1 nor v1beta1", Hint: "write CRDs as apiextensions.k8s.io/v1"},
		{ID: ruleCSVCount, Severity: catalog.SeverityError, Source: "Operator Framework packaging format (a bundle is one CSV and its manifests)", Summary: "manifests/ holds no ClusterServiceVersion, or more than one", Hint: "keep exactly one CSV per bundle directory"},
		{ID: ruleOwnedCRDMissing, Severity: catalog.SeverityError, Source: opm + " bundle validator", Summary: "a CRD the CSV owns is not in the bundle (or not at the version it names)", Hint: "ship the CRD in manifests/, or fix spec.customresourcedefinitions.owned"},
	}
}

func ruleByID(id string) catalog.Rule {
	for _, r := range Rules() {
		if r.ID == id {
			return r
		}
	}
	return catalog.Rule{ID: id, Severity: catalog.SeverityError}
}

// Unreadable returns the first finding saying the bundle was not read whole (a link or special file, never
// followed; a bound passed), nil when there is none: such a bundle must not be rendered or built, since what
// it would give is not what the directory holds.
func Unreadable(findings []catalog.Finding) *catalog.Finding {
	for i := range findings {
		if findings[i].Rule == ruleNotRegular || findings[i].Rule == ruleTooLarge {
			return &findings[i]
		}
	}
	return nil
}
