package bundle

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	blang "github.com/blang/semver/v4"

	"github.com/catalogbot/catalogbot/catalog"
)

// operator-sdk's optional validators, as suites catalogbot runs when asked (bundle validate --optional-suite,
// a bundle root's optionalSuites), with positions:
//
//	operatorhub        operator-sdk's name=operatorhub: the OperatorHub validator (provider, maintainers,
//	                   links, version, icon; the standard capabilities and categories; removed APIs)
//	deprecated-apis    operator-sdk's name=alpha-deprecated-apis: removed Kubernetes APIs (removedapis.go)
//	good-practices     operator-sdk's name=good-practices (goodpractices.go)
//	operatorframework  operator-sdk's suite=operatorframework: all of the above
const (
	ruleHubProvider     = "operatorhub.provider"
	ruleHubMaintainers  = "operatorhub.maintainers"
	ruleHubLinks        = "operatorhub.links"
	ruleHubVersion      = "operatorhub.version"
	ruleHubIcon         = "operatorhub.icon"
	ruleHubCategories   = "operatorhub.categories"
	ruleHubCapabilities = "operatorhub.capabilities"
)

// OptionalSuites are the optional suites bundle validate and the policy accept.
var OptionalSuites = []string{"operatorhub", "deprecated-apis", "good-practices", "operatorframework"}

// The parts the suites are made of, each run once however many suites name it.
const (
	partHub = 1 << iota
	partRemovedAPIs
	partGoodPractices
)

var suiteParts = map[string]int{
	"operatorhub":       partHub | partRemovedAPIs,
	"deprecated-apis":   partRemovedAPIs,
	"good-practices":    partGoodPractices,
	"operatorframework": partHub | partRemovedAPIs | partGoodPractices,
}

// OptionalSuite applies the named optional suite (one of OptionalSuites) to the bundle.
func OptionalSuite(name string, b *Bundle) []catalog.Finding {
	return RunSuites([]string{name}, b, SuiteOptions{})
}

// RunSuites applies the named optional suites (of OptionalSuites; others are ignored) to the bundle, each
// check once.
func RunSuites(names []string, b *Bundle, opt SuiteOptions) []catalog.Finding {
	parts := 0
	for _, n := range names {
		parts |= suiteParts[n]
	}
	var out []catalog.Finding
	if parts&partHub != 0 {
		out = append(out, OperatorHub(b)...)
	}
	if parts&partRemovedAPIs != 0 {
		out = append(out, RemovedAPIs(b, opt)...)
	}
	if parts&partGoodPractices != 0 {
		out = append(out, GoodPractices(b)...)
	}
	return out
}

// The standard capability levels and categories of OperatorHub (operator-framework/api's lists).
var (
	hubCapabilities = []string{"Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"}
	hubCategories   = []string{"AI/Machine Learning", "Application Runtime", "Big Data", "Cloud Provider", "Developer Tools",
		"Database", "Integration & Delivery", "Logging & Tracing", "Monitoring", "Modernization & Migration", "Networking",
		"OpenShift Optional", "Security", "Storage", "Streaming & Messaging", "Observability"}
)

func operatorHubRules() []catalog.Rule {
	const src = "operator-sdk bundle validate --select-optional name=operatorhub (operator-framework/api OperatorHub validator; also in suite=operatorframework)"
	return []catalog.Rule{
		{ID: ruleHubProvider, Severity: catalog.SeverityError, Source: src, Summary: "spec.provider.name is not set (optional suites operatorhub, operatorframework)", Hint: "name who provides the operator: spec.provider.name"},
		{ID: ruleHubMaintainers, Severity: catalog.SeverityError, Source: src, Summary: "a spec.maintainers entry lacks a name or an email, or the email is not an address (optional suites operatorhub, operatorframework)", Hint: "give each maintainer a name and an email address"},
		{ID: ruleHubLinks, Severity: catalog.SeverityError, Source: src, Summary: "a spec.links entry lacks a name or a url, or the url does not parse (optional suites operatorhub, operatorframework)", Hint: "give each link a name and an absolute URL"},
		{ID: ruleHubVersion, Severity: catalog.SeverityError, Source: src, Summary: "spec.version is not set to a semantic version (optional suites operatorhub, operatorframework)", Hint: "set spec.version, e.g. 1.2.3"},
		{ID: ruleHubIcon, Severity: catalog.SeverityError, Source: src, Summary: "spec.icon has not exactly one element, an element lacks base64data or mediatype, or the mediatype is not image/gif, image/jpeg, image/png or image/svg+xml (a warning when there is no icon) (optional suites operatorhub, operatorframework)", Hint: "give one icon with its base64data and an image mediatype"},
		{ID: ruleHubCategories, Severity: catalog.SeverityError, Source: src, Summary: "a category of the CSV's metadata.annotations.categories (comma-separated) is not one of OperatorHub's: " + strings.Join(hubCategories, ", ") + " (optional suites operatorhub, operatorframework)", Hint: "pick categories from OperatorHub's list, separated by commas"},
		{ID: ruleHubCapabilities, Severity: catalog.SeverityError, Source: src, Summary: "the CSV's metadata.annotations.capabilities is not one of the five capability levels: " + strings.Join(hubCapabilities, ", ") + " (optional suites operatorhub, operatorframework)", Hint: "set capabilities to the level the operator reaches, e.g. Basic Install"},
	}
}

// OperatorHub applies the optional suite operatorhub to the bundle's CSV.
func OperatorHub(b *Bundle) []catalog.Finding {
	if b == nil || b.CSV == nil {
		return nil
	}
	var out []catalog.Finding
	m := b.CSV
	at := func(v *catalog.Value) catalog.Position {
		if v == nil {
			return m.Pos
		}
		return v.Pos(m.File)
	}
	add := func(rule string, sev catalog.Severity, v *catalog.Value, format string, args ...any) {
		rl := ruleByID(rule)
		out = append(out, catalog.Finding{Rule: rule, Severity: sev, Position: at(v), Message: fmt.Sprintf(format, args...), Hint: rl.Hint, Package: b.Package})
	}
	spec := path2(m.Value, "spec")
	if strings.TrimSpace(str(path2(m.Value, "spec", "provider", "name"))) == "" {
		add(ruleHubProvider, catalog.SeverityError, spec, "spec.provider.name is not set")
	}
	if list := path2(m.Value, "spec", "maintainers"); list != nil {
		for i, it := range list.Items() {
			name, email := str(it.Get("name")), str(it.Get("email"))
			if name == "" || email == "" {
				add(ruleHubMaintainers, catalog.SeverityError, &it, "spec.maintainers[%d] needs both a name and an email", i)
			}
			if email != "" {
				if _, err := mail.ParseAddress(email); err != nil {
					add(ruleHubMaintainers, catalog.SeverityError, it.Get("email"), "spec.maintainers[%d] email %q is not an address: %v", i, email, err)
				}
			}
		}
	}
	if list := path2(m.Value, "spec", "links"); list != nil {
		for i, it := range list.Items() {
			name, u := str(it.Get("name")), str(it.Get("url"))
			if name == "" || u == "" {
				add(ruleHubLinks, catalog.SeverityError, &it, "spec.links[%d] needs both a name and a url", i)
			}
			if u != "" {
				if _, err := url.ParseRequestURI(u); err != nil {
					add(ruleHubLinks, catalog.SeverityError, it.Get("url"), "spec.links[%d] url %q does not parse: %v", i, u, err)
				}
			}
		}
	}
	anns := path2(m.Value, "metadata", "annotations")
	if f := anns.Field("capabilities"); f != nil {
		// Compared exactly, as the validator compares.
		if c := f.Value.Str(); !slices.Contains(hubCapabilities, c) {
			add(ruleHubCapabilities, catalog.SeverityError, &f.Value, "metadata.annotations.capabilities %q is not a capability level: %s", c, strings.Join(hubCapabilities, ", "))
		}
	}
	if f := anns.Field("categories"); f != nil {
		for _, c := range strings.Split(f.Value.Str(), ",") {
			if !slices.Contains(hubCategories, strings.TrimSpace(c)) {
				add(ruleHubCategories, catalog.SeverityError, &f.Value, "metadata.annotations.categories: %q is not one of OperatorHub's categories (%s)", c, strings.Join(hubCategories, ", "))
			}
		}
	}
	if v, err := blang.Parse(str(path2(m.Value, "spec", "version"))); err != nil || v.Equals(blang.Version{}) {
		add(ruleHubVersion, catalog.SeverityError, path2(m.Value, "spec", "version"), "spec.version must be set to a semantic version")
	}
	icons := path2(m.Value, "spec", "icon")
	switch {
	case icons == nil || icons.Kind == catalog.KindNull:
		add(ruleHubIcon, catalog.SeverityWarning, spec, "spec.icon is not set")
	case len(icons.Items()) == 0:
		add(ruleHubIcon, catalog.SeverityError, icons, "spec.icon has no element; it should have one")
	default:
		if len(icons.Items()) != 1 {
			add(ruleHubIcon, catalog.SeverityError, icons, "spec.icon has %d elements; it should have one", len(icons.Items()))
		}
		first := icons.Items()[0]
		mt := str(first.Get("mediatype"))
		if mt == "" || str(first.Get("base64data")) == "" {
			add(ruleHubIcon, catalog.SeverityError, &first, "spec.icon[0] needs both base64data and mediatype")
		}
		switch mt {
		case "", "image/gif", "image/jpeg", "image/png", "image/svg+xml":
		default:
			add(ruleHubIcon, catalog.SeverityError, first.Get("mediatype"), "spec.icon[0] mediatype %q is not image/gif, image/jpeg, image/png or image/svg+xml", mt)
		}
	}
	return out
}
