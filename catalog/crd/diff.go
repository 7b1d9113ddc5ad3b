package crd

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/catalogbot/catalogbot/catalog"
)

// Options tune Diff.
type Options struct {
	// Overrides set the severity of rules by id; SeverityIgnore drops their
	// findings. Check them with Validate (Diff reports invalid ones as findings).
	Overrides Overrides
}

// Change is one reason an upgrade from the old CRDs to the new ones is unsafe
// (or worth a warning). Finding carries the rule, severity, the position (in
// the new file where the thing exists there, else in the old file) and a
// message; the other fields say what changed.
type Change struct {
	catalog.Finding
	// CRD is the CRD's name; Version the version ("v1 -> v2" when two versions of
	// the new CRD are compared); Path a JSON path such as ^.spec.pollInterval.
	CRD     string `json:"crd"`
	Version string `json:"version,omitempty"`
	Path    string `json:"path,omitempty"`
	// Old and New are the values before and after, as short text ("" when absent).
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Check and Detail are what OLM's preflight would call the failed
	// validation and how it would describe it; empty when it has no such check.
	Check  string `json:"check,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// OLMMessage is the line a cluster running OLM's CRD upgrade-safety preflight
// would print for this change, so authors can match the two. It is empty for
// the rules OLM's preflight does not have (a dropped CRD, served-version
// removal and deprecation).
func (c Change) OLMMessage() string {
	if c.Check == "" {
		return ""
	}
	return fmt.Sprintf("validating upgrade for CRD %q failed: CustomResourceDefinition %s failed upgrade safety validation. %q validation failed: %s",
		c.CRD, c.CRD, c.Check, c.Detail)
}

// Diff compares the old CRD set with the new one, pairing CRDs by name, and
// returns every change that makes the upgrade unsafe or worth a warning,
// sorted by CRD, version, path and rule. Allowed changes produce nothing.
func Diff(old, new []*CRD, opt Options) []Change {
	d := &differ{}
	for _, err := range opt.Overrides.problems() {
		d.out = append(d.out, Change{Finding: catalog.Finding{Rule: RuleInvalidOverride, Message: err}})
	}
	// A name given twice in one set (the caller joined several manifests)
	// counts once: the first one.
	byName := make(map[string]*CRD, len(new))
	for _, c := range new {
		if c != nil && byName[c.Name] == nil {
			byName[c.Name] = c
		}
	}
	seen := make(map[string]bool, len(old))
	for _, o := range old {
		if o == nil || seen[o.Name] {
			continue
		}
		seen[o.Name] = true
		n := byName[o.Name]
		if n == nil {
			d.crd, d.version = o.Name, ""
			d.oldFile, d.newFile = o.Pos.File, o.Pos.File
			d.emit(RuleCRDRemoved, "", 0, int32(o.Pos.Line), o.Name, "",
				"CRD removed from the new set",
				"", "")
			continue
		}
		d.diffCRD(o, n)
	}
	return finish(d.out, opt.Overrides)
}

// finish applies severities and overrides, drops ignored changes and sorts.
func finish(in []Change, ov Overrides) []Change {
	out := in[:0]
	for _, c := range in {
		sev := catalog.SeverityError
		if r, ok := ruleByID(c.Rule); ok {
			sev = r.Severity
			if c.Hint == "" {
				c.Hint = r.Hint
			}
		}
		if s, ok := ov[c.Rule]; ok && c.Rule != RuleInvalidOverride {
			if _, known := ruleByID(c.Rule); known {
				sev = s
			}
		}
		if sev == catalog.SeverityIgnore {
			continue
		}
		c.Severity = sev
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.CRD != b.CRD {
			return a.CRD < b.CRD
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.New != b.New {
			return a.New < b.New
		}
		return a.Old < b.Old
	})
	return out
}

// Unsafe reports whether any change has error severity.
func Unsafe(changes []Change) bool {
	for _, c := range changes {
		if c.Severity == catalog.SeverityError {
			return true
		}
	}
	return false
}

type differ struct {
	crd, version     string
	oldFile, newFile string
	// cross is set while two versions of the new CRD are compared: every
	// finding then belongs to RuleServedVersionIncompatible.
	cross bool
	out   []Change
}

// emit records one change. newLine is used when it is set, else oldLine in
// the old file.
func (d *differ) emit(rule, path string, newLine, oldLine int32, old, new, msg, check, detail string) {
	pos := catalog.Position{File: d.newFile, Line: int(newLine)}
	if newLine == 0 {
		pos = catalog.Position{File: d.oldFile, Line: int(oldLine)}
	}
	where := d.crd
	if d.version != "" {
		where += " " + d.version
	}
	if path != "" {
		where += " " + path
	}
	if d.cross {
		// OLM's served-version validator words its findings "old -> new: field: what".
		what := msg
		if rule == RuleUnknownChange {
			what = unknownDetail
		}
		detail = fmt.Sprintf("%s: %s: %s", d.version, path, what)
		msg = fmt.Sprintf("%s (%s between served versions; conversion is None)", msg, rule)
		rule, check = RuleServedVersionIncompatible, "ServedVersionValidator"
	}
	d.out = append(d.out, Change{
		Finding: catalog.Finding{Rule: rule, Position: pos, Message: where + ": " + msg},
		CRD:     d.crd, Version: d.version, Path: path, Old: old, New: new,
		Check: check, Detail: detail,
	})
}

// unknownDetail is how OLM's preflight describes a change none of its
// validations handles; Message lists what changed.
const unknownDetail = "has unknown change, refusing to determine that change is safe"

// emitProp records a change to a schema property, worded as OLM's change validator.
func (d *differ) emitProp(rule, path string, newLine, oldLine int32, old, new, msg string) {
	detail := fmt.Sprintf("version %q, field %q: %s", d.version, path, msg)
	if rule == RuleUnknownChange {
		detail = fmt.Sprintf("version %q, field %q %s", d.version, path, unknownDetail)
	}
	d.emit(rule, path, newLine, oldLine, old, new, msg, "ChangeValidator", detail)
}

func (d *differ) diffCRD(o, n *CRD) {
	d.crd, d.version, d.cross = n.Name, "", false
	d.oldFile, d.newFile = o.Pos.File, n.Pos.File
	if o.Scope != n.Scope {
		d.emit(RuleScopeChanged, "", orLine(n.ScopeLine, int32(n.Pos.Line)), 0, o.Scope, n.Scope,
			fmt.Sprintf("scope changed from %q to %q", o.Scope, n.Scope),
			"NoScopeChange", fmt.Sprintf("scope changed from %q to %q", o.Scope, n.Scope))
	}
	var names []string
	for _, p := range [...]struct{ key, o, n string }{
		{"group", o.Group, n.Group}, {"names.kind", o.Kind, n.Kind},
		{"names.listKind", o.ListKind, n.ListKind}, {"names.singular", o.Singular, n.Singular},
	} {
		if p.o != p.n {
			names = append(names, fmt.Sprintf("spec.%s %q → %q", p.key, p.o, p.n))
		}
	}
	if o.PreserveUnknownFields && !n.PreserveUnknownFields {
		names = append(names, "spec.preserveUnknownFields true → false (fields the schema does not list are pruned from stored objects)")
	}
	if len(names) > 0 {
		msg := "unknown change: " + strings.Join(names, ", ")
		d.emit(RuleUnknownChange, "", int32(n.Pos.Line), 0, "", "", msg, "ChangeValidator", msg)
	}
	for i := range o.Versions {
		ov := &o.Versions[i]
		nv := n.Version(ov.Name)
		d.version = ov.Name
		if nv == nil {
			switch {
			case ov.Storage:
				d.emit(RuleStoredVersionRemoved, "", 0, ov.Line, ov.Name, "",
					"storage version removed from spec.versions",
					"NoStoredVersionRemoved", fmt.Sprintf("stored version %q removed", ov.Name))
			case ov.Served:
				d.emit(RuleServedVersionRemoved, "", 0, ov.Line, ov.Name, "",
					"served version removed from spec.versions without first setting served: false",
					"", "")
			}
			continue
		}
		if ov.Served && !nv.Served {
			d.emit(RuleVersionUnserved, "", orLine(nv.ServedLine, nv.Line), 0, "true", "false",
				"version no longer served", "", "")
		}
		if ov.Subresources != nv.Subresources {
			msg := fmt.Sprintf("unknown change: subresources %s → %s", short(ov.Subresources), short(nv.Subresources))
			d.emitProp(RuleUnknownChange, "", nv.Line, ov.Line, ov.Subresources, nv.Subresources, msg)
		}
		if ov.Schema != nil && nv.Schema != nil {
			d.schema(ov.Schema, nv.Schema, "^")
		}
	}
	d.version = ""
	d.servedCompat(o, n)
}

// servedCompat compares each newly served version of n with the other served
// versions, older to newer, when objects pass between them unconverted.
func (d *differ) servedCompat(o, n *CRD) {
	if n.Conversion != "" && n.Conversion != "None" {
		return
	}
	var served []*Version
	for i := range n.Versions {
		if n.Versions[i].Served && n.Versions[i].Schema != nil {
			served = append(served, &n.Versions[i])
		}
	}
	if len(served) < 2 {
		return
	}
	sort.SliceStable(served, func(i, j int) bool { return compareKubeVersions(served[i].Name, served[j].Name) < 0 })
	newlyServed := func(v *Version) bool {
		ov := o.Version(v.Name)
		return ov == nil || !ov.Served
	}
	d.oldFile = d.newFile
	for i, a := range served {
		for _, b := range served[i+1:] {
			if !newlyServed(a) && !newlyServed(b) {
				continue
			}
			d.version = fmt.Sprintf("%s -> %s", a.Name, b.Name)
			d.cross = true
			d.schema(a.Schema, b.Schema, "^")
			d.cross = false
		}
	}
	d.version = ""
}

func orLine(a, b int32) int32 {
	if a != 0 {
		return a
	}
	return b
}

// short cuts long JSON for messages: findings list attributes, never dump them.
func short(s string) string {
	if s == "" {
		return "(none)"
	}
	return truncate(s, 60)
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - 1
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
