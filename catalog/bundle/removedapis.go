package bundle

import (
	"encoding/json"
	"fmt"
	"strings"

	blang "github.com/blang/semver/v4"

	"github.com/catalogbot/catalogbot/catalog"
)

// operator-sdk's optional validator alpha-deprecated-apis (operator-framework/api's deprecated-APIs check,
// which its OperatorHub validators run too): manifests using a Kubernetes API that a Kubernetes version
// removed. A warning, and an error when the bundle targets a version without the API: the Kubernetes
// version given (bundle validate --k8s-version, a bundle root's k8sVersion: operator-sdk's
// --optional-values=k8s-version=), or else the OpenShift versions the bundle says it is for
// (com.redhat.openshift.versions in metadata/annotations.yaml, capped by an olm.maxOpenShiftVersion
// property; OpenShift 4.N is Kubernetes 1.(N+13)), or spec.minKubeVersion.
const (
	ruleRemovedAPI        = "deprecated-apis.removed-api"
	ruleRemovedPermission = "deprecated-apis.permission"
	ruleOpenShiftTargets  = "deprecated-apis.openshift-versions"
)

func removedAPIRules() []catalog.Rule {
	const src = "operator-sdk bundle validate --select-optional name=alpha-deprecated-apis (operator-framework/api deprecated-APIs validator; its OperatorHub validators run it too)"
	return []catalog.Rule{
		{ID: ruleRemovedAPI, Severity: catalog.SeverityError, Source: src, Summary: "a manifest (or a resource the CSV's customresourcedefinitions name) uses a Kubernetes API removed in 1.22, 1.25 or 1.26; an error when the bundle targets that version (--k8s-version or the bundle root's k8sVersion; else com.redhat.openshift.versions capped by olm.maxOpenShiftVersion, OpenShift 4.N being Kubernetes 1.(N+13); or spec.minKubeVersion), a warning otherwise (optional suites deprecated-apis, operatorhub, operatorframework)", Hint: "move the manifest to the API's current version, or stop targeting the versions without it (com.redhat.openshift.versions, olm.maxOpenShiftVersion)"},
		{ID: ruleRemovedPermission, Severity: catalog.SeverityWarning, Source: src, Summary: "a permission rule of the CSV names a resource whose API Kubernetes 1.25 removed in some group version (the operator may still use the old one) (optional suites deprecated-apis, operatorhub, operatorframework)", Hint: "make sure the operator uses the API's current version"},
		{ID: ruleOpenShiftTargets, Severity: catalog.SeverityWarning, Source: "catalogbot (Red Hat's com.redhat.openshift.versions and olm.maxOpenShiftVersion, as OpenShift's catalog validator reads them)", Summary: "the OpenShift versions the bundle targets cannot be read (com.redhat.openshift.versions is not a range such as v4.12-v4.16, an olm.maxOpenShiftVersion is not major.minor, or it is below the range), so removed APIs were judged without them (optional suites deprecated-apis, operatorhub, operatorframework)", Hint: "write com.redhat.openshift.versions as v4.12 (and later), =v4.14 or v4.12-v4.16, and olm.maxOpenShiftVersion as \"4.16\""},
	}
}

// SuiteOptions are what operator-sdk's --optional-values give its optional validators.
type SuiteOptions struct {
	// K8sVersion is the Kubernetes version the bundle is meant for ("1.25"; "" when not given): removed APIs
	// are errors from it on, whatever the bundle's own annotations say.
	K8sVersion string
}

// ParseK8sVersion reads a Kubernetes version as operator-sdk's k8s-version does (1.25, v1.25.3).
func ParseK8sVersion(s string) (blang.Version, error) {
	if len(s) > 64 {
		return blang.Version{}, fmt.Errorf("%d characters, more than a version can need", len(s))
	}
	v, err := blang.ParseTolerant(s)
	if err != nil {
		return blang.Version{}, fmt.Errorf("%q is not a Kubernetes version such as 1.25: %v", s, err)
	}
	return v, nil
}

// removal is one Kubernetes version's removed APIs (operator-framework/api's list: 1.22, 1.25, 1.26).
type removal struct {
	minor int                 // Kubernetes 1.minor
	gvks  map[string][]string // apiVersion -> kinds removed
	// groupResources: resources of permission rules that may use a removed version (1.25 only).
	groupResources map[[2]string]bool
}

// replacement names the API to move to, by apiVersion and kind.
var replacement = map[string]string{
	"batch/v1beta1 CronJob": "batch/v1", "autoscaling/v2beta1 HorizontalPodAutoscaler": "autoscaling/v2",
	"autoscaling/v2beta2 HorizontalPodAutoscaler": "autoscaling/v2", "extensions/v1beta1 Ingress": "networking.k8s.io/v1",
	"policy/v1beta1 PodSecurityPolicy": "nothing (PodSecurityPolicy is gone; use Pod Security Admission)",
}

func removedAPIs() []removal {
	return []removal{
		{minor: 22, gvks: map[string][]string{
			"apiextensions.k8s.io/v1beta1":         {"CustomResourceDefinition"},
			"scheduling.k8s.io/v1beta1":            {"PriorityClass"},
			"rbac.authorization.k8s.io/v1beta1":    {"Role", "ClusterRoleBinding", "RoleBinding", "ClusterRole"},
			"apiregistration.k8s.io/v1beta1":       {"APIService"},
			"authentication.k8s.io/v1beta1":        {"TokenReview"},
			"authorization.k8s.io/v1beta1":         {"LocalSubjectAccessReview", "SelfSubjectAccessReview", "SubjectAccessReview"},
			"admissionregistration.k8s.io/v1beta1": {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"},
			"coordination.k8s.io/v1beta1":          {"Lease"},
			"extensions/v1beta1":                   {"Ingress"},
			"networking.k8s.io/v1beta1":            {"Ingress", "IngressClass"},
			"storage.k8s.io/v1beta1":               {"CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"},
			"certificates.k8s.io/v1beta1":          {"CertificateSigningRequest"},
		}},
		{minor: 25, gvks: map[string][]string{
			"batch/v1beta1":            {"CronJob"},
			"discovery.k8s.io/v1beta1": {"EndpointSlice"},
			"events.k8s.io/v1beta1":    {"Event"},
			"autoscaling/v2beta1":      {"HorizontalPodAutoscaler"},
			"policy/v1beta1":           {"PodDisruptionBudget", "PodSecurityPolicy"},
			"node.k8s.io/v1beta1":      {"RuntimeClass"},
		}, groupResources: map[[2]string]bool{
			{"batch", "cronjobs"}: true, {"discovery.k8s.io", "endpointslices"}: true, {"events.k8s.io", "events"}: true,
			{"autoscaling", "horizontalpodautoscalers"}: true, {"policy", "poddisruptionbudgets"}: true,
			{"policy", "podsecuritypolicies"}: true, {"node.k8s.io", "runtimeclasses"}: true,
		}},
		{minor: 26, gvks: map[string][]string{
			"autoscaling/v2beta2": {"HorizontalPodAutoscaler"},
		}},
	}
}

func (rm removal) removes(apiVersion, kind string) bool {
	for _, k := range rm.gvks[apiVersion] {
		if k == kind {
			return true
		}
	}
	return false
}

// targets is what the bundle is meant to run on, for judging removed APIs.
type targets struct {
	// k8s: the highest Kubernetes minor version targeted; -1 when none is known, 1<<30 when the targets have
	// no end.
	k8s int
	why string // what says so
	// minKube: spec.minKubeVersion's minor (1.minor), -1 when not set or not Kubernetes 1.
	minKube int
}

// errorAt says whether an API removed in Kubernetes 1.minor is an error, and why.
func (t targets) errorAt(minor int) (bool, string) {
	switch {
	case t.k8s >= minor:
		return true, t.why
	case t.minKube >= minor:
		return true, fmt.Sprintf("spec.minKubeVersion is 1.%d", t.minKube)
	}
	return false, ""
}

// bundleTargets works out the targets (and findings where the bundle's own say cannot be read).
func bundleTargets(b *Bundle, opt SuiteOptions, add func(rule string, sev catalog.Severity, pos catalog.Position, format string, args ...any)) targets {
	t := targets{k8s: -1, minKube: -1}
	if mk := str(path2(b.CSV.Value, "spec", "minKubeVersion")); strings.TrimSpace(mk) != "" {
		if v, err := blang.ParseTolerant(mk); err == nil && v.Major == 1 && v.Minor < 1<<20 {
			t.minKube = int(v.Minor)
		}
	}
	if opt.K8sVersion != "" {
		if v, err := ParseK8sVersion(opt.K8sVersion); err == nil {
			switch {
			case v.Major > 1:
				t.k8s = 1 << 30
			case v.Major == 1 && v.Minor < 1<<20:
				t.k8s = int(v.Minor)
			}
			t.why = "the Kubernetes version given is " + opt.K8sVersion
			return t
		}
	}
	rng, haveRange := OpenShiftRange{}, false
	if s, ok := b.Annotations[AnnotationOpenShiftVersions]; ok {
		r, err := ParseOpenShiftVersions(s)
		if err != nil {
			add(ruleOpenShiftTargets, catalog.SeverityWarning, b.AnnotationPos[AnnotationOpenShiftVersions], "%s: %v; removed APIs were judged without it", AnnotationOpenShiftVersions, err)
		} else {
			rng, haveRange = r, true
		}
	}
	maxOCP, maxPos, haveMax := maxOpenShiftVersion(b, add)
	switch {
	case haveRange && haveMax && maxOCP < rng.Min:
		add(ruleOpenShiftTargets, catalog.SeverityWarning, maxPos, "olm.maxOpenShiftVersion 4.%d is below the versions %s names (%s): the bundle could not be installed anywhere it is published", maxOCP, AnnotationOpenShiftVersions, rng)
		t.k8s, t.why = KubernetesMinorOfOpenShift(maxOCP), fmt.Sprintf("olm.maxOpenShiftVersion is 4.%d (Kubernetes 1.%d)", maxOCP, KubernetesMinorOfOpenShift(maxOCP))
	case haveRange && haveMax && (rng.Open() || maxOCP < rng.Max):
		t.k8s = KubernetesMinorOfOpenShift(maxOCP)
		t.why = fmt.Sprintf("%s is %s and olm.maxOpenShiftVersion 4.%d (Kubernetes 1.%d)", AnnotationOpenShiftVersions, b.Annotations[AnnotationOpenShiftVersions], maxOCP, t.k8s)
	case haveRange && rng.Open():
		t.k8s = 1 << 30
		t.why = fmt.Sprintf("%s is %s (%s)", AnnotationOpenShiftVersions, b.Annotations[AnnotationOpenShiftVersions], rng)
	case haveRange:
		t.k8s = KubernetesMinorOfOpenShift(rng.Max)
		t.why = fmt.Sprintf("%s is %s (%s, up to Kubernetes 1.%d)", AnnotationOpenShiftVersions, b.Annotations[AnnotationOpenShiftVersions], rng, t.k8s)
	case haveMax:
		t.k8s = KubernetesMinorOfOpenShift(maxOCP)
		t.why = fmt.Sprintf("olm.maxOpenShiftVersion is 4.%d (Kubernetes 1.%d)", maxOCP, t.k8s)
	}
	return t
}

// maxOpenShiftVersion is the olm.maxOpenShiftVersion property of metadata/properties.yaml or of the CSV's
// olm.properties annotation (the lowest when both say), and where it is.
func maxOpenShiftVersion(b *Bundle, add func(rule string, sev catalog.Severity, pos catalog.Position, format string, args ...any)) (int, catalog.Position, bool) {
	best, bestPos, have := 0, catalog.Position{}, false
	take := func(raw string, pos catalog.Position) {
		minor, err := ParseMaxOpenShiftVersion(raw)
		if err != nil {
			add(ruleOpenShiftTargets, catalog.SeverityWarning, pos, "olm.maxOpenShiftVersion: %v; removed APIs were judged without it", err)
			return
		}
		if !have || minor < best {
			best, bestPos, have = minor, pos, true
		}
	}
	for _, p := range b.Properties {
		if p.Type == "olm.maxOpenShiftVersion" && p.Value != nil {
			take(p.Value.Str(), p.Pos)
		}
	}
	ann := path2(b.CSV.Value, "metadata", "annotations", "olm.properties")
	if ann == nil || ann.Kind != catalog.KindString {
		return best, bestPos, have
	}
	var list []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal([]byte(ann.Str()), &list) != nil {
		return best, bestPos, have // the CSV checks report it
	}
	for _, p := range list {
		if p.Type != "olm.maxOpenShiftVersion" {
			continue
		}
		var s string
		if json.Unmarshal(p.Value, &s) != nil {
			s = string(p.Value) // a number, 4.8
		}
		take(s, ann.Pos(b.CSV.File))
	}
	return best, bestPos, have
}

// RemovedAPIs applies operator-framework/api's deprecated-APIs check to the bundle.
func RemovedAPIs(b *Bundle, opt SuiteOptions) []catalog.Finding {
	if b == nil || b.CSV == nil {
		return nil
	}
	var out []catalog.Finding
	add := func(rule string, sev catalog.Severity, pos catalog.Position, format string, args ...any) {
		rl := ruleByID(rule)
		out = append(out, catalog.Finding{Rule: rule, Severity: sev, Position: pos, Message: fmt.Sprintf(format, args...), Hint: rl.Hint, Package: b.Package})
	}
	t := bundleTargets(b, opt, add)
	report := func(rm removal, pos catalog.Position, what, apiVersion, kind string) {
		to := replacement[apiVersion+" "+kind]
		if to == "" {
			to = apiVersion[:strings.LastIndex(apiVersion, "/")+1] + "v1"
		}
		ocp := rm.minor - 13
		if isErr, why := t.errorAt(rm.minor); isErr {
			add(ruleRemovedAPI, catalog.SeverityError, pos, "%s uses %s, which Kubernetes 1.%d (OpenShift 4.%d) removed, and the bundle targets it: %s; move to %s (https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-%d)",
				what, apiVersion, rm.minor, ocp, why, to, rm.minor)
			return
		}
		add(ruleRemovedAPI, catalog.SeverityWarning, pos, "%s uses %s, which Kubernetes 1.%d (OpenShift 4.%d) removed; move to %s (https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-%d); an error once the bundle targets that version",
			what, apiVersion, rm.minor, ocp, to, rm.minor)
	}
	objects := append(append([]*Manifest{}, b.CRDs...), b.Others...)
	for _, rm := range removedAPIs() {
		for _, m := range objects {
			if rm.removes(m.APIVersion, m.Kind) {
				report(rm, m.Value.Get("apiVersion").Pos(m.File), fmt.Sprintf("%s %s", m.Kind, m.Name), m.APIVersion, m.Kind)
			}
		}
		if rm.groupResources == nil {
			continue
		}
		// The resources the CSV's customresourcedefinitions name (their version read as an apiVersion, as
		// the validator reads it), and the permission rules naming a resource some removed version served.
		described := map[string]bool{}
		for _, field := range []string{"owned", "required"} {
			for _, d := range items(path2(b.CSV.Value, "spec", "customresourcedefinitions", field)) {
				for _, res := range items(d.Get("resources")) {
					kind, version := str(res.Get("kind")), str(res.Get("version"))
					described[strings.ToLower(kind)+"s"] = true
					if rm.removes(version, kind) {
						report(rm, res.Pos(b.CSV.File), fmt.Sprintf("the CSV's %s CRD %s names a resource %s that", field, str(d.Get("name")), kind), version, kind)
					}
				}
			}
		}
		install := path2(b.CSV.Value, "spec", "install", "spec")
		for _, field := range []string{"clusterPermissions", "permissions"} {
			for _, perm := range items(install.Get(field)) {
				for _, rule := range items(perm.Get("rules")) {
					for _, g := range items(rule.Get("apiGroups")) {
						for _, res := range items(rule.Get("resources")) {
							group, resource := str(&g), str(&res)
							if described[resource] || !rm.groupResources[[2]string{group, resource}] {
								continue
							}
							add(ruleRemovedPermission, catalog.SeverityWarning, res.Pos(b.CSV.File), "a rule of the CSV's %s grants %s in group %s, which Kubernetes 1.%d (OpenShift 4.%d) no longer serves at its beta version: make sure the operator uses the current one (https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-%d)",
								field, resource, displayGroup(group), rm.minor, rm.minor-13, rm.minor)
						}
					}
				}
			}
		}
	}
	return out
}

func items(v *catalog.Value) []catalog.Value {
	if v == nil || v.Kind != catalog.KindArray {
		return nil
	}
	return v.Items()
}

func displayGroup(g string) string {
	if g == "" {
		return `"" (core)`
	}
	return g
}
