package bundle

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	blang "github.com/blang/semver/v4"

	"github.com/catalogbot/catalogbot/catalog"
)

// The ClusterServiceVersion rules of operator-sdk bundle validate's default validators
// (operator-framework/api's CSV validator), checked on the CSV as written.
const (
	ruleCSVName           = "bundle.csv-name"
	ruleCSVVersion        = "bundle.csv-version"
	ruleCSVVersionType    = "bundle.csv-version-type"
	ruleCSVInstallModes   = "bundle.csv-install-modes"
	ruleCSVInstallRepeat  = "bundle.csv-install-mode-repeated"
	ruleCSVExamples       = "bundle.csv-examples"
	ruleCSVExampleMissing = "bundle.csv-example-missing"
	ruleCSVMinKube        = "bundle.csv-min-kube-version"
	// The fields the catalog the bundle joins will depend on (issue 27.2).
	ruleCSVSkipRange    = "bundle.csv-skiprange"
	ruleCSVReplacesSelf = "bundle.csv-replaces-self"
	ruleCSVUpgradeEdge  = "bundle.csv-upgrade-edge"
)

func csvRules() []catalog.Rule {
	const api = "operator-sdk bundle validate (operator-framework/api CSV validator)"
	return []catalog.Rule{
		{ID: ruleCSVName, Severity: catalog.SeverityError, Source: api, Summary: "the CSV's metadata.name or spec.replaces is not a DNS-1123 subdomain that is also a valid label value", Hint: "use lower-case letters, digits, '-' and '.', at most 63 characters, e.g. etcdoperator.v0.9.4"},
		{ID: ruleCSVVersion, Severity: catalog.SeverityWarning, Source: api, Summary: "the CSV's spec.version is missing or not a semantic version", Hint: "set spec.version to the bundle's version, e.g. 0.9.4"},
		{ID: ruleCSVVersionType, Severity: catalog.SeverityError, Source: "opm render and operator-sdk bundle validate (both decode spec.version as a string)", Summary: "the CSV's spec.version is not a string (a YAML number such as 1.0, say): opm renders nothing and the validators cannot load the CSV", Hint: "quote the version, e.g. version: \"1.0.0\""},
		{ID: ruleCSVInstallModes, Severity: catalog.SeverityError, Source: api, Summary: "the CSV's install modes are missing or none is supported (or conversion webhooks without AllNamespaces only)", Hint: "list OwnNamespace, SingleNamespace, MultiNamespace and AllNamespaces once each, at least one supported"},
		{ID: ruleCSVInstallRepeat, Severity: catalog.SeverityWarning, Source: "operator-registry bundle validation (operator-framework/api's validator means to refuse it, but its check never fires)", Summary: "an install mode is listed twice", Hint: "list each install mode once"},
		{ID: ruleCSVExamples, Severity: catalog.SeverityError, Source: api, Summary: "the alm-examples (or olm.examples) annotation is not JSON, or an example is of a kind the CSV does not own", Hint: "make alm-examples a JSON list of objects of the owned CRDs' kinds"},
		{ID: ruleCSVExampleMissing, Severity: catalog.SeverityWarning, Source: api, Summary: "the CSV has no example annotation, or an owned API has no example", Hint: "add an example of each owned API to the alm-examples annotation"},
		{ID: ruleCSVMinKube, Severity: catalog.SeverityError, Source: api, Summary: "spec.minKubeVersion is not a semantic version (a warning when it is missing)", Hint: "set spec.minKubeVersion to a version such as 1.25.0"},
		{ID: ruleCSVSkipRange, Severity: catalog.SeverityError, Source: "opm v1.69+ (model.Validate of the catalog the bundle joins: channel.skiprange-invalid)", Summary: "the CSV's olm.skipRange annotation does not parse as a semver range as opm parses it: every catalog the bundle joins would be refused, and a released bundle cannot be changed", Hint: "write a range such as '>=1.0.0 <1.2.0' (comparators < <= > >= = != on full versions, AND by space, OR by ||; no ^, ~, commas or v prefix)"},
		{ID: ruleCSVReplacesSelf, Severity: catalog.SeverityError, Source: "opm (a channel whose entry replaces or skips itself has a cycle)", Summary: "spec.replaces or spec.skips names the CSV itself", Hint: "name the CSV this version upgrades from"},
		{ID: ruleCSVUpgradeEdge, Severity: catalog.SeverityWarning, Source: "catalogbot", Summary: "spec.replaces or spec.skips names a CSV of another operator (its name before .v<version> differs) or of a version not lower than this one, or olm.skipRange admits this version or a higher one: the upgrade edge goes sideways or backwards", Hint: "replace and skip earlier versions of the same operator (name.vX.Y.Z), with a skipRange below this version"},
	}
}

// Compiled on first use, not by every process at start (issue 33.1).
var (
	dns1123Subdomain = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
	labelValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`) })
)

// checkCSV applies the CSV validator's rules to the bundle's CSV.
func (r *reader) checkCSV() {
	m := r.b.CSV
	v := m.Value
	file := m.File
	at := func(val *catalog.Value) catalog.Position {
		if val == nil {
			return m.Pos
		}
		return val.Pos(file)
	}
	nameVal := path2(v, "metadata", "name")
	checkName := func(what string, val *catalog.Value) {
		name := str(val)
		if name == "" {
			return
		}
		if len(name) > 253 || !dns1123Subdomain().MatchString(name) || len(name) > 63 || !labelValue().MatchString(name) {
			r.add(ruleCSVName, at(val), "%s %q is not a DNS-1123 subdomain of at most 63 characters usable as a label value", what, name)
		}
	}
	checkName("metadata.name", nameVal)
	checkName("spec.replaces", path2(v, "spec", "replaces"))

	version := path2(v, "spec", "version")
	switch {
	case version != nil && version.Kind != catalog.KindString && version.Kind != catalog.KindNull:
		// opm cannot decode it (it reads a string) and renders nothing; the validators cannot load the CSV.
		r.add(ruleCSVVersionType, version.Pos(file), "spec.version is %s, not a string: quote it", version.Kind)
	case version == nil || str(version) == "":
		r.add(ruleCSVVersion, at(path2(v, "spec")), "the CSV has no spec.version")
	default:
		if _, err := blang.Parse(str(version)); err != nil {
			r.add(ruleCSVVersion, at(version), "spec.version %q is not a semantic version: %v", str(version), err)
		}
	}

	modes := path2(v, "spec", "installModes")
	if modes == nil || len(modes.Items()) == 0 {
		r.add(ruleCSVInstallModes, at(path2(v, "spec")), "the CSV lists no installModes")
	} else {
		seen := map[string]bool{}
		supported := false
		for _, it := range modes.Items() {
			t := str(it.Get("type"))
			if seen[t] {
				r.add(ruleCSVInstallRepeat, at(&it), "install mode %s is listed twice", t)
			}
			seen[t] = true
			// Every entry counts, repeated or not, as in the validator.
			if s := it.Get("supported"); s != nil && s.Bool() {
				supported = true
			}
		}
		if !supported {
			r.add(ruleCSVInstallModes, at(modes), "none of the install modes is supported")
		}
		if hasConversionWebhook(v) {
			only := true
			for _, it := range modes.Items() {
				s := it.Get("supported") != nil && it.Get("supported").Bool()
				t := str(it.Get("type"))
				if (t == "AllNamespaces" && !s) || (t != "AllNamespaces" && s) {
					only = false
				}
			}
			if !only {
				r.add(ruleCSVInstallModes, at(modes), "a conversion webhook is defined, so only the AllNamespaces install mode may be supported")
			}
		}
	}

	if mk := path2(v, "spec", "minKubeVersion"); mk == nil || strings.TrimSpace(str(mk)) == "" {
		rl := ruleByID(ruleCSVMinKube)
		r.findings = append(r.findings, catalog.Finding{Rule: ruleCSVMinKube, Severity: catalog.SeverityWarning, Position: at(path2(v, "spec")),
			Message: "spec.minKubeVersion is not set: the bundle claims to run on every Kubernetes version", Hint: rl.Hint, Package: r.b.Package})
	} else if _, err := blang.Parse(str(mk)); err != nil {
		r.add(ruleCSVMinKube, at(mk), "spec.minKubeVersion %q is not a semantic version", str(mk))
	}

	r.checkExamples()
	r.checkUpgradeFields()
}

// checkUpgradeFields checks the fields the catalog will take from the CSV (issue 27.2): olm.skipRange parses
// as opm parses it, and spec.replaces, spec.skips and the skipRange point at earlier versions of the same
// operator, never at the CSV itself.
func (r *reader) checkUpgradeFields() {
	m := r.b.CSV
	name := m.Name
	own, ownErr := blang.Parse(str(path2(m.Value, "spec", "version")))
	prefix, _, hasPrefix := cutVersion(name)
	warn := func(pos catalog.Position, format string, args ...any) {
		r.add(ruleCSVUpgradeEdge, pos, format, args...)
	}
	if sr := path2(m.Value, "metadata", "annotations", "olm.skipRange"); sr != nil {
		switch {
		case sr.Kind != catalog.KindString:
			r.add(ruleCSVSkipRange, sr.Pos(m.File), "the olm.skipRange annotation is %s, not a string", sr.Kind)
		case sr.Str() != "":
			if rg, err := catalog.ParseSkipRange(sr.Str()); err != nil {
				r.add(ruleCSVSkipRange, sr.Pos(m.File), "olm.skipRange %q does not parse as opm parses a skipRange (%v): every catalog this bundle joins would fail opm validate", sr.Str(), err)
			} else if ownErr == nil && rangeAdmitsAtLeast(rg, own) {
				warn(sr.Pos(m.File), "olm.skipRange %q admits %s, this bundle's version, or a higher one: a skipRange names the versions this one upgrades from", sr.Str(), own)
			}
		}
	}
	check := func(field string, v *catalog.Value) {
		target := str(v)
		if target == "" {
			return
		}
		pos := v.Pos(m.File)
		if target == name {
			r.add(ruleCSVReplacesSelf, pos, "%s names the CSV itself (%s)", field, name)
			return
		}
		p, ver, ok := cutVersion(target)
		switch {
		case hasPrefix && ok && p != prefix:
			warn(pos, "%s names %s, a CSV of another operator than %s (%s.v…): an upgrade edge joins versions of one package", field, target, name, prefix)
		case ok && ownErr == nil && ver.GTE(own):
			warn(pos, "%s names %s, version %s, not lower than this bundle's %s: the upgrade edge goes backwards", field, target, ver, own)
		}
	}
	check("spec.replaces", path2(m.Value, "spec", "replaces"))
	if skips := path2(m.Value, "spec", "skips"); skips != nil {
		for i, it := range skips.Items() {
			check(fmt.Sprintf("spec.skips[%d]", i), &it)
		}
	}
}

// cutVersion splits a CSV name as operator-sdk writes it, <operator>.v<semver> (or <operator>.<semver>).
func cutVersion(name string) (string, blang.Version, bool) {
	for i := strings.Index(name, "."); i >= 0; {
		rest := strings.TrimPrefix(name[i+1:], "v")
		if v, err := blang.Parse(rest); err == nil {
			return name[:i], v, true
		}
		j := strings.Index(name[i+1:], ".")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return "", blang.Version{}, false
}

// rangeAdmitsAtLeast says whether rg admits v or one of a few versions above it (the next patch, minor and
// major releases): a skipRange written for an upgrade to v admits only lower versions.
func rangeAdmitsAtLeast(rg blang.Range, v blang.Version) bool {
	base := blang.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
	for _, c := range []blang.Version{v, base, {Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}, {Major: v.Major, Minor: v.Minor + 1}, {Major: v.Major + 1}} {
		if c.GTE(v) && rg(c) {
			return true
		}
	}
	return false
}

func hasConversionWebhook(v catalog.Value) bool {
	whs := path2(v, "spec", "webhookdefinitions")
	if whs == nil {
		return false
	}
	for _, w := range whs.Items() {
		if c := w.Get("conversionCRDs"); c != nil && len(c.Items()) > 0 {
			return true
		}
	}
	return false
}

func (r *reader) checkExamples() {
	m := r.b.CSV
	ann := path2(m.Value, "metadata", "annotations")
	warn := func(pos catalog.Position, format string, args ...any) {
		rl := ruleByID(ruleCSVExampleMissing)
		r.findings = append(r.findings, catalog.Finding{Rule: ruleCSVExampleMissing, Severity: catalog.SeverityWarning, Position: pos,
			Message: fmt.Sprintf(format, args...), Hint: rl.Hint, Package: r.b.Package})
	}
	var examples *catalog.Value
	if ann != nil {
		examples = ann.Get("alm-examples")
		if examples == nil {
			examples = ann.Get("olm.examples")
		}
	}
	if examples == nil {
		warn(m.Pos, "the CSV has no alm-examples annotation")
		return
	}
	text := str(examples)
	if strings.TrimSpace(text) == "" {
		return
	}
	var list []struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		var one json.RawMessage
		if json.Unmarshal([]byte(text), &one) != nil {
			r.add(ruleCSVExamples, examples.Pos(m.File), "the alm-examples annotation is not JSON: %v", err)
			return
		}
		r.add(ruleCSVExamples, examples.Pos(m.File), "the alm-examples annotation is not a JSON list of objects: %v", err)
		return
	}
	provided := map[string]bool{}
	if owned := path2(m.Value, "spec", "customresourcedefinitions", "owned"); owned != nil {
		for _, o := range owned.Items() {
			_, group, ok := strings.Cut(str(o.Get("name")), ".")
			if ok {
				provided[group+"/"+str(o.Get("version"))+"/"+str(o.Get("kind"))] = true
			}
		}
	}
	if owned := path2(m.Value, "spec", "apiservicedefinitions", "owned"); owned != nil {
		for _, o := range owned.Items() {
			provided[str(o.Get("group"))+"/"+str(o.Get("version"))+"/"+str(o.Get("kind"))] = true
		}
	}
	seen := map[string]bool{}
	for _, ex := range list {
		group, version := "", ex.APIVersion
		if g, v, ok := strings.Cut(ex.APIVersion, "/"); ok {
			group, version = g, v
		}
		key := group + "/" + version + "/" + ex.Kind
		seen[key] = true
		if !provided[key] {
			r.add(ruleCSVExamples, examples.Pos(m.File), "the example of %s %s is not of an API the CSV owns", ex.APIVersion, ex.Kind)
		}
	}
	for api := range provided {
		if !seen[api] {
			warn(examples.Pos(m.File), "owned API %s has no example in alm-examples", api)
		}
	}
}

// The bundle and CRD rules of the same validators.
const (
	ruleCRDNotInCSV          = "bundle.crd-not-in-csv"
	ruleServiceAccountInCSV  = "bundle.service-account-in-csv"
	ruleCRDPreserveUnknown   = "bundle.crd-preserve-unknown-fields"
	ruleCRDDuplicateInBundle = "bundle.crd-duplicate"
)

func bundleValidatorRules() []catalog.Rule {
	const api = "operator-sdk bundle validate (operator-framework/api bundle and CRD validators)"
	return []catalog.Rule{
		{ID: ruleCRDNotInCSV, Severity: catalog.SeverityError, Source: api, Summary: "the bundle ships a CRD whose kind the CSV does not own", Hint: "list the CRD under spec.customresourcedefinitions.owned, or remove it from the bundle"},
		{ID: ruleServiceAccountInCSV, Severity: catalog.SeverityError, Source: api, Summary: "the bundle ships a ServiceAccount the CSV's deployments already name (OLM creates that one)", Hint: "remove the ServiceAccount manifest, or rename one of the two"},
		{ID: ruleCRDPreserveUnknown, Severity: catalog.SeverityError, Source: api, Summary: "a CRD sets spec.preserveUnknownFields: true, which apiextensions.k8s.io/v1 forbids", Hint: "remove it and set x-kubernetes-preserve-unknown-fields: true in the version's schema where needed"},
		{ID: ruleCRDDuplicateInBundle, Severity: catalog.SeverityError, Source: api, Summary: "the bundle ships the same group, version and kind twice (a v1 and a v1beta1 CRD, say)", Hint: "keep one CRD per kind"},
	}
}

// checkBundleObjects applies the bundle and CRD validators' rules: CRDs the CSV owns, service accounts, and
// CRD fields the v1 API refuses.
func (r *reader) checkBundleObjects() {
	csv := r.b.CSV
	owned := map[string]bool{} // group/kind the CSV owns at some version
	ownedGVK := map[string]bool{}
	if list := path2(csv.Value, "spec", "customresourcedefinitions", "owned"); list != nil {
		for _, o := range list.Items() {
			group := str(o.Get("name"))
			if _, g, ok := strings.Cut(group, "."); ok {
				group = g
			}
			owned[group+"/"+str(o.Get("kind"))] = true
			ownedGVK[group+"/"+str(o.Get("version"))+"/"+str(o.Get("kind"))] = true
		}
	}
	seen := map[string]bool{}
	for _, c := range r.b.CRDs {
		spec := c.Value.Get("spec")
		if spec == nil {
			continue
		}
		switch p := spec.Get("preserveUnknownFields"); {
		case p != nil && p.Bool():
			r.add(ruleCRDPreserveUnknown, p.Pos(c.File), "CRD %s sets spec.preserveUnknownFields: true; apiextensions.k8s.io/v1 only accepts false", c.Name)
		case p == nil && c.APIVersion == "apiextensions.k8s.io/v1beta1":
			// v1beta1 defaults it to true, which the validators (and the v1 API) refuse.
			r.add(ruleCRDPreserveUnknown, spec.Pos(c.File), "CRD %s is apiextensions.k8s.io/v1beta1 without spec.preserveUnknownFields: false, and v1beta1 defaults it to true, which apiextensions.k8s.io/v1 refuses", c.Name)
		}
		group, kind := str(spec.Get("group")), str(path2(*spec, "names", "kind"))
		var versions []string
		if vs := spec.Get("versions"); vs != nil {
			for _, v := range vs.Items() {
				versions = append(versions, str(v.Get("name")))
			}
		}
		if len(versions) == 0 {
			versions = append(versions, str(spec.Get("version")))
		}
		for _, v := range versions {
			key := group + "/" + v + "/" + kind
			if seen[key] {
				r.add(ruleCRDDuplicateInBundle, c.Pos, "%s, Kind=%s at version %s is shipped twice", group, kind, v)
			}
			seen[key] = true
		}
		if !owned[group+"/"+kind] {
			r.add(ruleCRDNotInCSV, c.Pos, "CRD %s (%s, Kind=%s) is in the bundle but the CSV does not own it", c.Name, group, kind)
		}
	}
	names := map[string]bool{}
	if deps := path2(csv.Value, "spec", "install", "spec", "deployments"); deps != nil {
		for _, d := range deps.Items() {
			names[str(path2(d, "spec", "template", "spec", "serviceAccountName"))] = true
		}
	}
	for _, o := range r.b.Others {
		if o.Kind == "ServiceAccount" && (o.APIVersion == "v1" || o.APIVersion == "") && names[o.Name] {
			r.add(ruleServiceAccountInCSV, o.Pos, "ServiceAccount %s is shipped, and the CSV's deployments already name it: OLM creates it", o.Name)
		}
	}
}
