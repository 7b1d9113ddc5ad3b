package bundle

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	blang "github.com/blang/semver/v4"

	"github.com/catalogbot/catalogbot/catalog"
)

// operator-sdk's optional suite "good-practices" (operator-framework/api's GoodPractices validator): one error
// (no deployment to install) and recommendations as warnings, each at its line.
const (
	ruleGPNoDeployment = "good-practices.no-deployment"
	ruleGPRequests     = "good-practices.resource-requests"
	ruleGPCRDDesc      = "good-practices.crd-description"
	ruleGPChannels     = "good-practices.channel-naming"
	ruleGPRBACCRD      = "good-practices.crd-permissions"
	ruleGPBundleName   = "good-practices.bundle-name"
)

func goodPracticesRules() []catalog.Rule {
	const src = "operator-sdk bundle validate --select-optional name=good-practices (operator-framework/api GoodPractices validator)"
	w := catalog.SeverityWarning
	return []catalog.Rule{
		{ID: ruleGPNoDeployment, Severity: catalog.SeverityError, Source: src, Summary: "the CSV's install strategy has no deployments (optional suite good-practices)", Hint: "install the operator with spec.install.spec.deployments"},
		{ID: ruleGPRequests, Severity: w, Source: src, Summary: "a container of the operator's deployments sets no resource requests (optional suite good-practices)", Hint: "set resources.requests.cpu and .memory"},
		{ID: ruleGPCRDDesc, Severity: w, Source: src, Summary: "an owned or required CRD of the CSV has an empty description (optional suite good-practices)", Hint: "describe each CRD in spec.customresourcedefinitions"},
		{ID: ruleGPChannels, Severity: w, Source: src, Summary: "a channel's name does not start with candidate, stable or fast (optional suite good-practices)", Hint: "name channels as OLM recommends: candidate, fast, stable (with a version suffix)"},
		{ID: ruleGPRBACCRD, Severity: w, Source: src, Summary: "the CSV's permissions let the operator create or patch CRDs (optional suite good-practices)", Hint: "an operator should not manage other operators' CRDs; use OLM's dependency resolution"},
		{ID: ruleGPBundleName, Severity: w, Source: src, Summary: "the CSV's name does not end in a semantic version or is not <operator-name>.v<semver> (optional suite good-practices)", Hint: "name the CSV like memcached-operator.v0.0.1"},
	}
}

var bundleNameVersion = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([0-9]+)\.([0-9]+)\.([0-9]+)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+)?$`)
})

// GoodPractices applies the optional suite good-practices to the bundle.
func GoodPractices(b *Bundle) []catalog.Finding {
	if b == nil || b.CSV == nil {
		return nil
	}
	var out []catalog.Finding
	m := b.CSV
	add := func(rule string, v *catalog.Value, format string, args ...any) {
		rl := ruleByID(rule)
		pos := m.Pos
		if v != nil {
			pos = v.Pos(m.File)
		}
		out = append(out, catalog.Finding{Rule: rule, Severity: rl.Severity, Position: pos, Message: fmt.Sprintf(format, args...), Hint: rl.Hint, Package: b.Package})
	}
	deps := path2(m.Value, "spec", "install", "spec", "deployments")
	if deps == nil || deps.Kind == catalog.KindNull {
		add(ruleGPNoDeployment, path2(m.Value, "spec", "install"), "unable to find a deployment to install in the CSV")
	} else {
		for _, d := range deps.Items() {
			if cs := path2(d, "spec", "template", "spec", "containers"); cs != nil {
				for _, c := range cs.Items() {
					if r := path2(c, "resources", "requests"); r == nil || r.Kind == catalog.KindNull {
						add(ruleGPRequests, &c, "container %q sets no resource requests for CPU and memory", str(c.Get("name")))
					}
				}
			}
		}
	}
	for _, rel := range []string{"owned", "required"} {
		if list := path2(m.Value, "spec", "customresourcedefinitions", rel); list != nil {
			for _, c := range list.Items() {
				if str(c.Get("description")) == "" {
					add(ruleGPCRDDesc, &c, "%s CRD %q has an empty description", rel, str(c.Get("name")))
				}
			}
		}
	}
	var odd []string
	for _, ch := range append(slices.Clone(b.Channels), b.DefaultChannel) {
		if ch != "" && !strings.HasPrefix(ch, "candidate") && !strings.HasPrefix(ch, "stable") && !strings.HasPrefix(ch, "fast") && !slices.Contains(odd, ch) {
			odd = append(odd, ch)
		}
	}
	if len(odd) > 0 {
		pos := b.AnnotationsAt
		if p, ok := b.AnnotationPos[AnnotationChannels]; ok {
			pos = p
		}
		rl := ruleByID(ruleGPChannels)
		out = append(out, catalog.Finding{Rule: ruleGPChannels, Severity: rl.Severity, Position: pos, Hint: rl.Hint, Package: b.Package,
			Message: fmt.Sprintf("channel(s) %q do not follow the recommended naming convention", odd)})
	}
	// Reported once, at the first rule that grants it (as the validator stops at the first).
rbac:
	for _, key := range []string{"permissions", "clusterPermissions"} {
		perms := path2(m.Value, "spec", "install", "spec", key)
		if perms == nil {
			continue
		}
		for _, p := range perms.Items() {
			if rules := p.Get("rules"); rules != nil {
				for _, r := range rules.Items() {
					if hasAny(r.Get("apiGroups"), "apiextensions.k8s.io") && hasAny(r.Get("resources"), "customresourcedefinitions", "*", "[*]") && hasAny(r.Get("verbs"), "create", "*", "[*]", "patch") {
						add(ruleGPRBACCRD, &r, "the CSV's %s let the operator create or patch CustomResourceDefinitions", key)
						break rbac
					}
				}
			}
		}
	}
	name := m.Name
	if match := bundleNameVersion().FindString(name); match == "" {
		add(ruleGPBundleName, path2(m.Value, "metadata", "name"), "%s does not end in a version MAJOR.MINOR.PATCH", name)
	} else if _, err := blang.Parse(match); err != nil {
		add(ruleGPBundleName, path2(m.Value, "metadata", "name"), "%s does not end in a semantic version", name)
	}
	if len(strings.Split(name, ".v")) != 2 {
		add(ruleGPBundleName, path2(m.Value, "metadata", "name"), "%s is not named <operator-name>.v<semver>", name)
	}
	return out
}

func hasAny(list *catalog.Value, values ...string) bool {
	if list == nil {
		return false
	}
	for _, it := range list.Items() {
		if slices.Contains(values, str(&it)) {
			return true
		}
	}
	return false
}
