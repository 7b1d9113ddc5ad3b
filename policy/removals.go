package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/blang/semver/v4"
	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// RemovalRule declares released content a package's owners may remove, as repositories prune nightly and
// pre-release builds: bundles (from catalogs and as bundle directories) and channel entries of the packages
// it names whose version it matches, or that sit only in channels it names.
type RemovalRule struct {
	// Packages are package names or patterns (path.Match: *, ?, [...]); empty means every package.
	Packages []string
	// Versions are bundle version patterns (path.Match against the version: "*-nightly-*"), or Prerelease
	// for every version with a semver pre-release part (1.31.0-nightly-2026-08-22, 2.0.0-rc.1).
	Versions []string
	// Channels are channel name patterns: a bundle all of whose channels match, or an entry of a matching
	// channel, may be removed.
	Channels []string
	Pos      Position
}

// Prerelease is the Versions keyword for versions with a pre-release part.
const Prerelease = "prerelease"

// RemovalAllowed returns the first rule that lets the owners of pkg remove bundle version (its semver
// version, "" when unknown) from, or together with, channels (the channels it is removed from; for a bundle,
// every channel it was in). A rule matches when it names the package and either the version matches one of
// its Versions or every channel matches one of its Channels (and there is at least one).
func (p *Policy) RemovalAllowed(pkg, version string, channels []string) (RemovalRule, bool) {
	for _, r := range p.Removals {
		if len(r.Packages) > 0 && !matchAny(r.Packages, pkg) {
			continue
		}
		if version != "" && r.versionMatches(version) {
			return r, true
		}
		if len(r.Channels) > 0 && len(channels) > 0 {
			all := true
			for _, c := range channels {
				if !matchAny(r.Channels, c) {
					all = false
					break
				}
			}
			if all {
				return r, true
			}
		}
	}
	return RemovalRule{}, false
}

func (r RemovalRule) versionMatches(version string) bool {
	for _, v := range r.Versions {
		if v == Prerelease {
			if sv, err := semver.ParseTolerant(version); err == nil && len(sv.Pre) > 0 {
				return true
			}
			continue
		}
		if ok, _ := path.Match(v, version); ok {
			return true
		}
	}
	return false
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// String describes the rule for messages: "removals (line 12): prerelease versions of sailoperator".
func (r RemovalRule) String() string {
	var what []string
	if len(r.Versions) > 0 {
		what = append(what, "versions "+strings.Join(r.Versions, ", "))
	}
	if len(r.Channels) > 0 {
		what = append(what, "channels "+strings.Join(r.Channels, ", "))
	}
	pkgs := "every package"
	if len(r.Packages) > 0 {
		pkgs = strings.Join(r.Packages, ", ")
	}
	return fmt.Sprintf("removals (line %d): %s of %s", r.Pos.Line, strings.Join(what, " or "), pkgs)
}

// maxRemovalPatterns bounds the patterns of one removals entry.
const maxRemovalPatterns = 100

func (p *parser) removals(n *yaml.Node) []RemovalRule {
	var out []RemovalRule
	p.list(n, "removals", func(it *yaml.Node) {
		r := RemovalRule{Pos: Position{it.Line, it.Column}}
		if v := p.deref(it); v == nil || v.Kind != yaml.MappingNode {
			p.add(it, "write each entry as '- {packages: [name], versions: [prerelease]}'", "each removals entry must be a mapping")
			return
		}
		patterns := func(v *yaml.Node, what string, keyword string) []string {
			var out []string
			p.strings(v, what, func(item *yaml.Node, s string) {
				if len(out) == maxRemovalPatterns {
					p.add(item, "use patterns", "%s has more than %d entries", what, maxRemovalPatterns)
					return
				}
				if _, err := path.Match(s, ""); err != nil || s == "" || strings.Contains(s, "/") {
					p.add(item, "write a name or a pattern with *, ? and [...]", "%s: %q is not a valid pattern", what, s)
					return
				}
				if keyword == "" && s == Prerelease {
					p.add(item, "prerelease is a keyword of versions", "%s: %q is not a channel name pattern", what, s)
					return
				}
				out = append(out, s)
			})
			return out
		}
		p.fields(it, "a removals entry", map[string]func(k, v *yaml.Node){
			"packages": func(_, v *yaml.Node) { r.Packages = patterns(v, "removals[].packages", "-") },
			"versions": func(_, v *yaml.Node) { r.Versions = patterns(v, "removals[].versions", Prerelease) },
			"channels": func(_, v *yaml.Node) { r.Channels = patterns(v, "removals[].channels", "") },
		})
		if len(r.Versions) == 0 && len(r.Channels) == 0 {
			if !hasKey(p.deref(it), "versions") && !hasKey(p.deref(it), "channels") {
				p.add(it, "add versions: [prerelease] or channels: [<pattern>]", "a removals entry names neither versions nor channels, so it allows nothing")
			}
			return
		}
		out = append(out, r)
	})
	return out
}
