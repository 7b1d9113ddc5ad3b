package bundle

import (
	"fmt"

	"github.com/catalogbot/catalogbot/catalog"
)

// OLM v1 installs only some registry+v1 bundles (OpenShift docs, Extensions: "Supported extensions"): AllNamespaces
// supported, no webhooks, no dependencies (olm.gvk.required, olm.package.required, olm.constraint).
const (
	ruleOLMv1InstallMode  = "olmv1.install-mode"
	ruleOLMv1Webhooks     = "olmv1.webhooks"
	ruleOLMv1Dependencies = "olmv1.dependencies"
)

func olmv1Rules() []catalog.Rule {
	const src = "OLM v1 supported extensions (OpenShift docs, Extensions: Supported extensions)"
	return []catalog.Rule{
		{ID: ruleOLMv1InstallMode, Severity: catalog.SeverityWarning, Source: src, Summary: "OLM v1 cannot install the bundle: it does not support the AllNamespaces install mode (an error when the bundle root says requireOLMv1: true, or with bundle validate --olm-v1)", Hint: "support AllNamespaces (OLM v1 installs cluster-wide)"},
		{ID: ruleOLMv1Webhooks, Severity: catalog.SeverityWarning, Source: src, Summary: "OLM v1 cannot install the bundle: its CSV defines webhooks", Hint: "OLM v1 installs no webhooks; serve them from the operator itself, or target OLM v0"},
		{ID: ruleOLMv1Dependencies, Severity: catalog.SeverityWarning, Source: src, Summary: "OLM v1 cannot install the bundle: it declares dependencies (required APIs or packages, constraints)", Hint: "OLM v1 resolves no dependencies: drop them, or install what they name separately"},
	}
}

// OLMv1 says why OLM v1 could not install this bundle: one finding per unmet criterion, as warnings (a
// report); the caller raises them to errors when a repository promises OLM v1 support.
func OLMv1(b *Bundle) []catalog.Finding {
	if b == nil || b.CSV == nil {
		return nil
	}
	var out []catalog.Finding
	add := func(rule string, pos catalog.Position, format string, args ...any) {
		r := ruleByID(rule)
		out = append(out, catalog.Finding{Rule: rule, Severity: r.Severity, Position: pos, Message: fmt.Sprintf(format, args...), Hint: r.Hint, Package: b.Package})
	}
	csv := b.CSV
	all := false
	modes := path2(csv.Value, "spec", "installModes")
	if modes != nil {
		for _, m := range modes.Items() {
			if str(m.Get("type")) == "AllNamespaces" && m.Get("supported") != nil && m.Get("supported").Bool() {
				all = true
			}
		}
	}
	if !all {
		pos := csv.Pos
		if modes != nil {
			pos = modes.Pos(csv.File)
		}
		add(ruleOLMv1InstallMode, pos, "%s does not support the AllNamespaces install mode, the only one OLM v1 uses", csv.Name)
	}
	if wh := path2(csv.Value, "spec", "webhookdefinitions"); wh != nil && len(wh.Items()) > 0 {
		add(ruleOLMv1Webhooks, wh.Pos(csv.File), "%s defines %d webhook(s); OLM v1 installs none", csv.Name, len(wh.Items()))
	}
	if req := path2(csv.Value, "spec", "customresourcedefinitions", "required"); req != nil && len(req.Items()) > 0 {
		add(ruleOLMv1Dependencies, req.Pos(csv.File), "%s requires CRDs of other operators (olm.gvk.required); OLM v1 resolves no dependencies", csv.Name)
	}
	if req := path2(csv.Value, "spec", "apiservicedefinitions", "required"); req != nil && len(req.Items()) > 0 {
		add(ruleOLMv1Dependencies, req.Pos(csv.File), "%s requires API services of other operators (olm.gvk.required); OLM v1 resolves no dependencies", csv.Name)
	}
	for _, d := range b.Dependencies {
		switch d.Type {
		case "olm.gvk", "olm.package", "olm.constraint":
			add(ruleOLMv1Dependencies, d.Pos, "metadata/dependencies.yaml declares a %s dependency; OLM v1 resolves no dependencies", d.Type)
		}
	}
	return out
}
