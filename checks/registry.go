package checks

import "github.com/catalogbot/catalogbot/registry"

// The one list of catalogbot's checks. The App, catalog-check, the demo and the benchmarks build their checks
// from it, and the CLI's --checks values are its names: adding a check is one file and one line below.

// Deps are what the checks may use beyond the pull request itself.
type Deps struct {
	// Bundles reads bundle images for the checks that can use them: crd-safety takes the CRDs of a bundle
	// published without olm.bundle.object from its image, templates pull the bundles that no catalog of the
	// base and no bundle directory resolves. Nil: neither contacts a registry.
	Bundles *registry.Client
	// Images answers the images check (does every referenced image exist). Nil leaves the images check out:
	// without a registry it could only say "could not verify".
	Images *registry.Client
}

// entry is one check of the list: its name, the App's check run that shows it, and how to make it from the
// dependencies (nil: not made).
type entry struct {
	name string
	run  string
	make func(Deps) Check
}

// all is the list, in the order the checks run and are shown. The gate (which check decides whether the
// costly ones run) is a property of the check (Gate), not of its place here.
func all() []entry {
	return []entry{
		{Ownership{}.Name(), "catalogbot/ownership", func(Deps) Check { return Ownership{} }},
		{Validation{}.Name(), "catalogbot/validate", func(Deps) Check { return Validation{} }},
		{Immutability{}.Name(), "catalogbot/validate", func(Deps) Check { return Immutability{} }},
		{CRDSafety{}.Name(), "catalogbot/crd-safety", func(d Deps) Check {
			if d.Bundles == nil {
				return CRDSafety{}
			}
			return CRDSafety{Manifests: RegistryManifests{Client: d.Bundles}}
		}},
		{Templates{}.Name(), "catalogbot/templates", func(d Deps) Check {
			if d.Bundles == nil {
				return Templates{}
			}
			return Templates{Images: RegistryBundles{Client: d.Bundles}}
		}},
		{Images{}.Name(), "catalogbot/images", func(d Deps) Check {
			if d.Images == nil {
				return nil
			}
			return Images{Registry: d.Images}
		}},
	}
}

// Default is every check the dependencies allow, in order.
func Default(d Deps) []Check {
	var out []Check
	for _, e := range all() {
		if c := e.make(d); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Make is the check of that name made with the dependencies; false when the list has no such check or the
// dependencies leave it out.
func Make(name string, d Deps) (Check, bool) {
	for _, e := range all() {
		if e.name == name {
			c := e.make(d)
			return c, c != nil
		}
	}
	return nil, false
}

// RunName is the App's check run that shows the check of that name; "" means the check is not reported.
// Immutability's findings (released bundles modified, released channel entries removed) go into
// catalogbot/validate: they are rules about what a valid change to the catalog is, and keeping few runs keeps
// branch protection's list of required checks short and stable.
func RunName(check string) string {
	for _, e := range all() {
		if e.name == check {
			return e.run
		}
	}
	return ""
}

// Names are the names of every check of the list, in order, whatever the dependencies.
func Names() []string {
	var out []string
	for _, e := range all() {
		out = append(out, e.name)
	}
	return out
}

// Gate is implemented by the check whose result decides whether the costly checks run (Result.SkipCostly):
// ownership, so that a pull request whose author owns nothing it touches spends no registry requests.
type Gate interface {
	Gates() bool
}

func isGate(c Check) bool {
	g, ok := c.(Gate)
	return ok && g.Gates()
}
