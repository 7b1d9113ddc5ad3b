package crd

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	// Profile is ProfilePreflight ("" too) or ProfileCompatibility: then the changes only the preflight
	// refuses are warnings. Overrides apply after it.
	Profile string
	// MaxChanges bounds the changes kept (0: DefaultMaxChanges). Past it, changes are counted by rule and
	// each rule with changes left out gets one change saying how many, so the verdict stays right and
	// memory stays bounded.
	MaxChanges int
}

// DefaultMaxChanges is Options.MaxChanges when unset.
const DefaultMaxChanges = 5000

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
	// Check and Detail are what OLM's preflight calls the failed validation
	// (crdify's name: type, enum, existingFieldRemoval, unhandled, …) and how it
	// describes it; empty when it has no such check.
	Check  string `json:"check,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// OLMMessage is the line OLM v1's CRD upgrade-safety preflight (crdify with
// operator-controller's configuration) prints for this change, so authors can
// match the two. It is empty for the rules the preflight does not have (a
// dropped CRD, served-version removal and deprecation, renamed kinds).
func (c Change) OLMMessage() string {
	if c.Check == "" {
		return ""
	}
	switch c.Check {
	case "scope", "storedVersionRemoval", "existingFieldRemoval":
		// CRD-wide validations: no version or path of their own.
		return fmt.Sprintf("validating upgrade for CRD %q: %s: %s", c.CRD, c.Check, c.Detail)
	}
	return fmt.Sprintf("validating upgrade for CRD %q: %s: %s: %s: %s", c.CRD, c.Version, c.Path, c.Check, c.Detail)
}

// Diff is DiffContext without a deadline.
func Diff(old, new []*CRD, opt Options) []Change {
	changes, _ := DiffContext(context.Background(), old, new, opt)
	return changes
}

// DiffContext compares the old CRD set with the new one, pairing CRDs by name,
// and returns every change that makes the upgrade unsafe or worth a warning,
// sorted by CRD, version, path and rule. Allowed changes produce nothing. The
// work is linear in the size of the schemas (enum and required lists are
// compared as sets) and stops with ctx's error when ctx ends.
func DiffContext(ctx context.Context, old, new []*CRD, opt Options) ([]Change, error) {
	d := &differ{ctx: ctx, max: opt.MaxChanges}
	if d.max <= 0 {
		d.max = DefaultMaxChanges
	}
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
		if d.err != nil {
			return nil, d.err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, rule := range slices.Sorted(maps.Keys(d.omitted)) {
		d.out = append(d.out, Change{Finding: catalog.Finding{Rule: rule, Message: fmt.Sprintf(
			"%d more %s changes not listed (a comparison keeps its first %d changes)", d.omitted[rule], rule, d.max)}, CRD: "~"})
	}
	return finish(d.out, opt), nil
}

// finish applies severities and overrides, drops ignored changes and sorts.
func finish(in []Change, opt Options) []Change {
	ov := opt.Overrides
	out := in[:0]
	for _, c := range in {
		sev := catalog.SeverityError
		if r, ok := ruleByID(c.Rule); ok {
			sev = r.Severity
			if c.Hint == "" {
				c.Hint = r.Hint
			}
		}
		if opt.Profile == ProfileCompatibility && preflightOnly[c.Rule] && sev == catalog.SeverityError {
			sev = catalog.SeverityWarning
			c.Message += " — " + PreflightOnlyNote
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
	ctx context.Context
	// err is ctx's error once it ended; steps counts nodes between checks.
	err              error
	steps            int
	crd, version     string
	oldFile, newFile string
	// cross is set while two served versions of one CRD are compared: every
	// finding then belongs to RuleServedVersionIncompatible.
	cross bool
	out   []Change
	// max bounds out; omitted counts the changes left out, by rule.
	max     int
	omitted map[string]int
}

// step counts one unit of work and reports whether the diff must stop
// because its context ended. The context is read every 256 steps.
func (d *differ) step() bool {
	if d.err != nil {
		return true
	}
	d.steps++
	if d.steps%256 == 0 && d.ctx != nil {
		d.err = d.ctx.Err()
	}
	return d.err != nil
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
		msg = fmt.Sprintf("%s (%s between served versions; conversion is None)", msg, rule)
		rule = RuleServedVersionIncompatible
	}
	if d.max > 0 && len(d.out) >= d.max {
		if d.omitted == nil {
			d.omitted = map[string]int{}
		}
		d.omitted[rule]++
		return
	}
	d.out = append(d.out, Change{
		Finding: catalog.Finding{Rule: rule, Position: pos, Message: where + ": " + msg},
		CRD:     d.crd, Version: d.version, Path: path, Old: old, New: new,
		Check: check, Detail: detail,
	})
}

// emitProp records a change to a schema node, with the preflight's name for
// the validation and its wording.
func (d *differ) emitProp(rule, path string, newLine, oldLine int32, old, new, msg, detail string) {
	d.emit(rule, path, newLine, oldLine, old, new, msg, checkOf(rule), detail)
}

func (d *differ) diffCRD(o, n *CRD) {
	d.crd, d.version, d.cross = n.Name, "", false
	d.oldFile, d.newFile = o.Pos.File, n.Pos.File
	if o.Scope != n.Scope {
		d.emit(RuleScopeChanged, "", orLine(n.ScopeLine, int32(n.Pos.Line)), 0, o.Scope, n.Scope,
			fmt.Sprintf("scope changed from %q to %q", o.Scope, n.Scope),
			"scope", fmt.Sprintf("scope changed : %q -> %q", o.Scope, n.Scope))
	}
	// The preflight compares neither names nor pruning; these are our warnings.
	var names []string
	for _, p := range [...]struct{ key, o, n string }{
		{"group", o.Group, n.Group}, {"names.kind", o.Kind, n.Kind},
		{"names.listKind", o.ListKind, n.ListKind}, {"names.singular", o.Singular, n.Singular},
	} {
		if p.o != p.n {
			names = append(names, fmt.Sprintf("spec.%s %q → %q", p.key, p.o, p.n))
		}
	}
	if len(names) > 0 {
		d.emit(RuleNamesChanged, "", int32(n.Pos.Line), 0, "", "", "names changed: "+strings.Join(names, ", "), "", "")
	}
	if o.PreserveUnknownFields && !n.PreserveUnknownFields {
		d.emit(RulePruningEnabled, "", int32(n.Pos.Line), 0, "true", "false",
			"spec.preserveUnknownFields true → false: fields the schema does not list are pruned from stored objects when they are next written", "", "")
	}
	stored := o.StoredVersions
	if len(stored) == 0 {
		// Bundles carry no status: the storage version is the one objects
		// are certainly stored in.
		for i := range o.Versions {
			if o.Versions[i].Storage {
				stored = append(stored, Name{Name: o.Versions[i].Name, Line: o.Versions[i].Line})
			}
		}
	}
	newVersions := make(map[string]*Version, len(n.Versions))
	for i := range n.Versions {
		newVersions[n.Versions[i].Name] = &n.Versions[i]
	}
	storage := make(map[string]bool, len(stored))
	for _, sv := range stored {
		storage[sv.Name] = true
		if newVersions[sv.Name] == nil {
			d.version = sv.Name
			d.emit(RuleStoredVersionRemoved, "", 0, sv.Line, sv.Name, "",
				"stored version removed from spec.versions",
				"storedVersionRemoval", fmt.Sprintf("stored versions removed : [%s]", sv.Name))
		}
	}
	for i := range o.Versions {
		ov := &o.Versions[i]
		nv := newVersions[ov.Name]
		d.version = ov.Name
		if nv == nil {
			if ov.Served && !storage[ov.Name] {
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
		if ov.Schema != nil && nv.Schema != nil {
			d.schema(ov.Schema, nv.Schema, "^")
		}
	}
	d.version = ""
	d.servedCompat(o, n)
}

// servedCompat compares every pair of served versions of n, less preferred to more preferred,
// when objects pass between them unconverted, and reports what the same
// comparison of o's served versions did not already show: the preflight lets
// an upgrade keep the incompatibilities it had.
func (d *differ) servedCompat(o, n *CRD) {
	if n.Conversion != "" && n.Conversion != "None" {
		return
	}
	d.oldFile = d.newFile
	start := len(d.out)
	d.servedPairs(n)
	if d.err != nil || len(d.out) == start {
		return
	}
	found := append([]Change(nil), d.out[start:]...)
	d.out = d.out[:start]
	d.servedPairs(o)
	known := make(map[string]bool, len(d.out)-start)
	for _, c := range d.out[start:] {
		known[c.issueKey()] = true
	}
	d.out = d.out[:start]
	for _, c := range found {
		if c.Rule == RuleSchemaTooLarge || !known[c.issueKey()] {
			d.out = append(d.out, c)
		}
	}
}

// issueKey identifies a served-version incompatibility across two CRDs.
func (c Change) issueKey() string {
	return c.Version + "\x00" + c.Path + "\x00" + c.Check + "\x00" + c.Detail
}

// maxServedWork bounds the schema nodes compared across the pairs of served
// versions of one CRD: the pairs grow with the square of the versions, so a
// CRD of many served versions could otherwise keep a check busy for minutes.
// Real CRDs stay far below (a few versions of a few thousand nodes).
const maxServedWork = 20_000_000

func (d *differ) servedPairs(c *CRD) {
	var served []*Version
	for i := range c.Versions {
		if c.Versions[i].Served && c.Versions[i].Schema != nil {
			served = append(served, &c.Versions[i])
		}
	}
	if len(served) < 2 {
		return
	}
	work := 0
	for i, v := range served {
		work += v.nodes * (len(served) - 1 - i)
	}
	if work > maxServedWork {
		d.version = ""
		d.emit(RuleSchemaTooLarge, "", int32(c.Pos.Line), 0, "", "", fmt.Sprintf(
			"%d served versions: comparing every pair would compare %d schema nodes, over the limit of %d; the served versions were not compared",
			len(served), work, maxServedWork), "", "")
		return
	}
	slices.SortStableFunc(served, func(a, b *Version) int { return compareKubeVersions(a.Name, b.Name) })
	for i, a := range served {
		for _, b := range served[i+1:] {
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
