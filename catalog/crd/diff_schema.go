package crd

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// schema compares one schema node of an existing version (or, for served
// compatibility, of an older served version) with its counterpart, as OLM's
// preflight does: every node of the old schema is compared with the node at
// the same path of the new one, each attribute by its own rule, and whatever
// no rule handles is an unknown change. A type change does not stop the walk:
// the preflight reports what else changed too.
func (d *differ) schema(o, n *Schema, path string) {
	if d.err != nil {
		return
	}
	if d.step() {
		return
	}
	if o.Type != n.Type {
		d.emitProp(RuleTypeChanged, path, orLine(n.line(attrType), n.Line), o.line(attrType), o.Type, n.Type,
			fmt.Sprintf("type changed from %q to %q", o.Type, n.Type), fmt.Sprintf("type changed : %q -> %q", o.Type, n.Type))
	}
	d.required(o, n, path)
	d.defaults(o, n, path)
	d.enum(o, n, path)
	d.bounds(o, n, path)
	d.pattern(o, n, path)
	switch {
	case o.Nullable && !n.Nullable:
		d.emitProp(RuleNullableRemoved, path, n.line(attrNullable), o.line(attrNullable), "true", "false", "nullable removed", "nullable removed : true -> false")
	case !o.Nullable && n.Nullable:
		d.emitProp(RuleNullableAdded, path, n.line(attrNullable), o.line(attrNullable), "false", "true", "nullable added", "nullable added : false -> true")
	}

	// Attributes no rule judges, compared whole (allOf, anyOf, oneOf, not and
	// additionalProperties with everything below them).
	// Some attributes added are their own rules (the preflight calls each an unhandled change), so that
	// one can be waived without the others.
	oExtra, nExtra := o.Extra, n.Extra
	if hasAddedRule(oExtra, nExtra) {
		nExtra = nil
		for _, a := range n.Extra {
			rule, ok := addedRules[a.Key]
			if ok && !hasAttr(oExtra, a.Key) {
				d.emitProp(rule, path, orLine(a.Line, n.Line), o.Line, "", a.JSON, a.Key+" added: "+short(a.JSON),
					unhandledDetail(nil, []Attr{a}))
				continue
			}
			nExtra = append(nExtra, a)
		}
	}
	oExtra, nExtra = d.attrRuleChanges(path, o, n, oExtra, nExtra)
	if unknown := extraChanges(nil, oExtra, nExtra); len(unknown) > 0 {
		d.emitProp(RuleUnknownChange, path, n.Line, o.Line, "", "",
			"unknown change, no rule can judge it safe: "+strings.Join(unknown, "; "),
			unhandledDetail(oExtra, nExtra))
	}

	// Children, each compared at its own path.
	var byName map[string]*Schema
	if len(o.Properties) > 8 && len(n.Properties) > 8 {
		byName = make(map[string]*Schema, len(n.Properties))
		for i := range n.Properties {
			if _, dup := byName[n.Properties[i].Name]; !dup {
				byName[n.Properties[i].Name] = n.Properties[i].Schema
			}
		}
	}
	for i := range o.Properties {
		op := &o.Properties[i]
		var np *Schema
		if byName != nil {
			np = byName[op.Name]
		} else {
			np = n.Property(op.Name)
		}
		d.child(op.Schema, np, path+"."+op.Name)
	}
	if o.Items != nil {
		d.child(o.Items, n.Items, path+".items")
	}
	if o.AdditionalProperties != nil {
		d.child(o.AdditionalProperties, n.AdditionalProperties, path+".additionalProperties")
	}
	if o.Not != nil {
		d.child(o.Not, n.Not, path+".not")
	}
	for _, l := range [...]struct {
		key  string
		o, n []*Schema
	}{{"allOf", o.AllOf, n.AllOf}, {"anyOf", o.AnyOf, n.AnyOf}, {"oneOf", o.OneOf, n.OneOf}} {
		for i := range l.o {
			var nc *Schema
			if i < len(l.n) {
				nc = l.n[i]
			}
			d.child(l.o[i], nc, fmt.Sprintf("%s.%s[%d]", path, l.key, i))
		}
	}
}

// emptySchema stands for a node the newer side does not have.
var emptySchema = &Schema{}

// child compares a node of the old schema with its counterpart, n nil when
// the new schema has none. Within one version that is a removed field; between
// two served versions the preflight compares the old node with an empty one.
func (d *differ) child(o, n *Schema, path string) {
	if n != nil {
		d.schema(o, n, path)
		return
	}
	if d.cross {
		d.schema(o, emptySchema, path)
		return
	}
	rule := RuleFieldRemoved
	if path == "^.status" || strings.HasPrefix(path, "^.status.") {
		rule = RuleStatusFieldRemoved
	}
	d.emit(rule, path, 0, o.Line, o.Type, "", "field removed"+wasType(o.Type),
		"existingFieldRemoval", fmt.Sprintf("removed field : %s.%s", d.version, path))
}

func (d *differ) required(o, n *Schema, path string) {
	if len(n.Required) == 0 {
		return
	}
	had := make(map[string]bool, len(o.Required)+len(n.Required))
	for _, r := range o.Required {
		had[r.Name] = true
	}
	for _, r := range n.Required {
		if had[r.Name] {
			continue
		}
		had[r.Name] = true
		d.emitProp(RuleRequiredFieldAdded, path, orLine(r.Line, n.line(attrRequired)), o.line(attrRequired), "", r.Name,
			fmt.Sprintf("new required fields added: [%s]", r.Name), fmt.Sprintf("new required fields: [%s]", r.Name))
	}
}

func (d *differ) defaults(o, n *Schema, path string) {
	nl, ol := n.line(attrDefault), o.line(attrDefault)
	switch {
	case o.Default == n.Default:
	case o.Default == "":
		d.emitProp(RuleDefaultAdded, path, nl, ol, "", n.Default, "default value added: "+short(n.Default),
			fmt.Sprintf("default added when there was none previously : %q", n.Default))
	case n.Default == "":
		d.emitProp(RuleDefaultRemoved, path, n.Line, ol, o.Default, "", "default value removed (was "+short(o.Default)+")",
			fmt.Sprintf("default value removed : %q", o.Default))
	default:
		d.emitProp(RuleDefaultChanged, path, nl, ol, o.Default, n.Default,
			fmt.Sprintf("default value changed from %s to %s", short(o.Default), short(n.Default)),
			fmt.Sprintf("default value changed : %q -> %q", o.Default, n.Default))
	}
}

// enum judges enum lists as sets of canonical JSON values, as the preflight
// does: an empty list is no constraint, adding values is allowed, and removing
// values, or the whole list, is not.
func (d *differ) enum(o, n *Schema, path string) {
	switch {
	case len(o.Enum) == 0 && len(n.Enum) == 0:
	case len(o.Enum) == 0:
		d.emitProp(RuleEnumAdded, path, n.line(attrEnum), o.Line, "", list(n.Enum),
			"enum constraint added to a field without one: "+list(n.Enum),
			"enum constraint added when there was none previously : "+sortedList(n.Enum))
	default:
		now := make(map[string]struct{}, len(n.Enum))
		for _, v := range n.Enum {
			now[v] = struct{}{}
		}
		var removed []string
		for _, v := range o.Enum {
			if _, ok := now[v]; !ok {
				now[v] = struct{}{} // report each value once
				removed = append(removed, v)
			}
		}
		if len(removed) == 0 {
			return
		}
		msg := "allowed enum values removed: " + list(removed)
		if len(n.Enum) == 0 {
			msg = "enum removed (a change the preflight refuses, though it allows any value): " + list(removed)
		}
		d.emitProp(RuleEnumValueRemoved, path, orLine(n.line(attrEnum), n.Line), o.line(attrEnum), list(o.Enum), list(n.Enum), msg,
			"allowed enum values removed : "+sortedList(removed))
	}
}

// list renders enum values (canonical JSON each) compactly.
func list(vals []string) string {
	s := "[" + strings.Join(vals, ", ") + "]"
	const max = 120
	if len(s) > max {
		return fmt.Sprintf("%s … (%d values)]", truncate(s, max), len(vals))
	}
	return s
}

func (d *differ) bounds(o, n *Schema, path string) {
	var unknown []string
	for b := bound(0); b < numBounds; b++ {
		nb, nset := n.bound(b)
		ob, oset := o.bound(b)
		if !nset || (oset && ob.Text == nb.Text) {
			continue // dropped or unchanged: never tighter
		}
		if math.IsNaN(nb.Num) || (oset && math.IsNaN(ob.Num)) {
			unknown = append(unknown, boundKeys[b])
			continue
		}
		key := boundKeys[b]
		nl, ol := nb.Line, orLine(ob.Line, o.Line)
		rule, word := RuleMaximumTightened, "maximum"
		if b.isMin() {
			rule, word = RuleMinimumTightened, "minimum"
		}
		switch {
		case !oset:
			d.emit(rule, path, nl, ol, "", nb.Text, fmt.Sprintf("%s constraint added: %s", key, nb.Text),
				key, fmt.Sprintf("%s constraint added when there was none previously : %s", word, boundText(b, nb)))
		case b.isMin() && nb.Num > ob.Num:
			d.emit(rule, path, nl, ol, ob.Text, nb.Text, fmt.Sprintf("%s increased from %s to %s", key, ob.Text, nb.Text),
				key, fmt.Sprintf("minimum increased : %s -> %s", boundText(b, ob), boundText(b, nb)))
		case !b.isMin() && nb.Num < ob.Num:
			d.emit(rule, path, nl, ol, ob.Text, nb.Text, fmt.Sprintf("%s decreased from %s to %s", key, ob.Text, nb.Text),
				key, fmt.Sprintf("maximum decreased : %s -> %s", boundText(b, ob), boundText(b, nb)))
		}
	}
	if len(unknown) > 0 {
		d.emitProp(RuleUnknownChange, path, n.Line, o.Line, "", "",
			"unknown change, no rule can judge it safe: non-numeric "+strings.Join(unknown, ", "),
			"unhandled changes found (non-numeric "+strings.Join(unknown, ", ")+")")
	}
}

func (d *differ) pattern(o, n *Schema, path string) {
	switch {
	case o.Pattern == n.Pattern:
	case o.Pattern == "":
		d.emitProp(RulePatternAdded, path, n.line(attrPattern), o.Line, "", n.Pattern,
			"pattern added: "+strconv.Quote(truncate(n.Pattern, 80)), fmt.Sprintf("pattern added : %q -> %q", o.Pattern, n.Pattern))
	case n.Pattern == "":
		d.emitProp(RulePatternRemoved, path, n.Line, o.line(attrPattern), o.Pattern, "",
			"pattern removed (was "+strconv.Quote(truncate(o.Pattern, 80))+")", fmt.Sprintf("pattern removed : %q -> %q", o.Pattern, n.Pattern))
	default:
		d.emitProp(RulePatternChanged, path, n.line(attrPattern), o.line(attrPattern), o.Pattern, n.Pattern,
			fmt.Sprintf("pattern changed from %q to %q", truncate(o.Pattern, 80), truncate(n.Pattern, 80)),
			fmt.Sprintf("pattern changed : %q -> %q", o.Pattern, n.Pattern))
	}
}

// extraChanges lists, by key, the unmodelled attributes that differ. Both
// lists are sorted by key.
func extraChanges(out []string, o, n []Attr) []string {
	i, j := 0, 0
	for i < len(o) || j < len(n) {
		switch {
		case j == len(n) || (i < len(o) && o[i].Key < n[j].Key):
			if o[i].Subtree {
				out = append(out, o[i].Key+" removed")
			} else {
				out = append(out, o[i].Key+" removed (was "+short(o[i].JSON)+")")
			}
			i++
		case i == len(o) || n[j].Key < o[i].Key:
			if n[j].Subtree {
				out = append(out, n[j].Key+" added")
			} else {
				out = append(out, n[j].Key+" added: "+short(n[j].JSON))
			}
			j++
		default:
			switch {
			case o[i].JSON == n[j].JSON:
			case o[i].Subtree:
				out = append(out, o[i].Key+" changed (the preflight compares it whole, descriptions included)")
			default:
				out = append(out, fmt.Sprintf("%s %s → %s", o[i].Key, short(o[i].JSON), short(n[j].JSON)))
			}
			i++
			j++
		}
	}
	return out
}

func wasType(t string) string {
	if t == "" {
		return ""
	}
	return " (was type " + t + ")"
}

// sortedList renders values as the preflight does: sorted, space-separated.
func sortedList(vals []string) string {
	c := append([]string(nil), vals...)
	sort.Strings(c)
	return fmt.Sprintf("%v", c)
}

// boundText renders a bound's value as the preflight does: minimum and
// maximum as floats, the others as integers.
func boundText(k bound, b Bound) string {
	if k == boundMinimum || k == boundMaximum {
		return fmt.Sprint(b.Num)
	}
	return strconv.FormatInt(int64(b.Num), 10)
}

// goField names the JSONSchemaProps fields no validation handles as Go (and so
// the preflight's unhandled-change message) spells them, with how a value of
// each prints there: a plain string or bool, a pointer to one, or complex.
var goField = map[string]struct {
	name string
	kind byte // 's' string, 'b' bool, 'p' pointer to a scalar, 'c' complex
}{
	"id": {"ID", 's'}, "$schema": {"Schema", 's'}, "$ref": {"Ref", 'p'}, "format": {"Format", 's'},
	"title": {"Title", 's'}, "exclusiveMaximum": {"ExclusiveMaximum", 'b'}, "exclusiveMinimum": {"ExclusiveMinimum", 'b'},
	"uniqueItems": {"UniqueItems", 'b'}, "multipleOf": {"MultipleOf", 'p'}, "items": {"Items", 'c'},
	"allOf": {"AllOf", 'c'}, "oneOf": {"OneOf", 'c'}, "anyOf": {"AnyOf", 'c'}, "not": {"Not", 'c'},
	"additionalProperties": {"AdditionalProperties", 'c'}, "patternProperties": {"PatternProperties", 'c'},
	"dependencies": {"Dependencies", 'c'}, "additionalItems": {"AdditionalItems", 'c'}, "definitions": {"Definitions", 'c'},
	"externalDocs": {"ExternalDocs", 'c'}, "example": {"Example", 'c'},
	"x-kubernetes-preserve-unknown-fields": {"XPreserveUnknownFields", 'p'}, "x-kubernetes-embedded-resource": {"XEmbeddedResource", 'b'},
	"x-kubernetes-int-or-string": {"XIntOrString", 'b'}, "x-kubernetes-list-map-keys": {"XListMapKeys", 'c'},
	"x-kubernetes-list-type": {"XListType", 'p'}, "x-kubernetes-map-type": {"XMapType", 'p'}, "x-kubernetes-validations": {"XValidations", 'c'},
}

// unhandledDetail words the attributes that differ as operator-controller
// shortens crdify's unhandled-change report: "unhandled changes found (Format
// "" -> "email")", complex values as <complex value>.
func unhandledDetail(o, n []Attr) string {
	var out []string
	val := func(key string, a *Attr) string {
		f, ok := goField[key]
		switch {
		case !ok || f.kind == 'c':
			if a == nil {
				return "nil"
			}
			return "<complex value>"
		case a == nil && f.kind == 's':
			return `""`
		case a == nil && f.kind == 'b':
			return "false"
		case a == nil:
			return "nil"
		case f.kind == 'p':
			return "&" + a.JSON
		}
		return a.JSON
	}
	add := func(key string, oa, na *Attr) {
		name := key
		if f, ok := goField[key]; ok {
			name = f.name
		}
		before, after := val(key, oa), val(key, na)
		if before == after {
			after += " (changed)"
		}
		out = append(out, fmt.Sprintf("%s %s -> %s", name, before, after))
	}
	i, j := 0, 0
	for i < len(o) || j < len(n) {
		switch {
		case j == len(n) || (i < len(o) && o[i].Key < n[j].Key):
			add(o[i].Key, &o[i], nil)
			i++
		case i == len(o) || n[j].Key < o[i].Key:
			add(n[j].Key, nil, &n[j])
			j++
		default:
			if o[i].JSON != n[j].JSON {
				add(o[i].Key, &o[i], &n[j])
			}
			i++
			j++
		}
	}
	// In the order of JSONSchemaProps' fields, as the diff lists them.
	sort.SliceStable(out, func(i, j int) bool {
		return fieldOrder(out[i]) < fieldOrder(out[j])
	})
	return "unhandled changes found (" + strings.Join(out, "; ") + ")"
}

// goFieldOrder is JSONSchemaProps' field order.
var goFieldOrder = strings.Fields("ID Schema Ref Description Type Format Title Default Maximum ExclusiveMaximum " +
	"Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Enum MaxProperties " +
	"MinProperties Required Items AllOf OneOf AnyOf Not Properties AdditionalProperties PatternProperties Dependencies " +
	"AdditionalItems Definitions ExternalDocs Example Nullable XPreserveUnknownFields XEmbeddedResource XIntOrString " +
	"XListMapKeys XListType XMapType XValidations")

func fieldOrder(entry string) int {
	name, _, _ := strings.Cut(entry, " ")
	for i, f := range goFieldOrder {
		if f == name {
			return i
		}
	}
	return len(goFieldOrder)
}

// addedRules are the attributes whose addition is a rule of its own.
var addedRules = map[string]string{
	"x-kubernetes-map-type":      RuleMapTypeAdded,
	"x-kubernetes-list-type":     RuleListTypeAdded,
	"x-kubernetes-list-map-keys": RuleListMapKeysAdded,
	"example":                    RuleExampleAdded,
}

// attrRules are attributes every change of which is a rule of its own (the
// preflight calls each an unhandled change): added or changed narrows what
// is valid, removed widens it.
var attrRules = []struct{ key, changed, removed string }{
	{"format", RuleFormatChanged, RuleFormatRemoved},
	{"x-kubernetes-validations", RuleValidationRulesChanged, RuleValidationRulesRemoved},
}

// attrRuleChanges reports the changes of attrRules between o and n and
// returns both attribute lists without them (new slices only when one was
// taken out; the schemas' own lists are never written).
func (d *differ) attrRuleChanges(path string, o, n *Schema, oExtra, nExtra []Attr) ([]Attr, []Attr) {
	for _, r := range attrRules {
		oi, ni := attrIndex(oExtra, r.key), attrIndex(nExtra, r.key)
		if oi < 0 && ni < 0 {
			continue
		}
		switch {
		case oi < 0:
			na := nExtra[ni]
			d.emitProp(r.changed, path, orLine(na.Line, n.Line), o.Line, "", na.JSON, r.key+" added: "+short(na.JSON),
				unhandledDetail(nil, []Attr{na}))
		case ni < 0:
			oa := oExtra[oi]
			d.emitProp(r.removed, path, n.Line, orLine(oa.Line, o.Line), oa.JSON, "", r.key+" removed (was "+short(oa.JSON)+")",
				unhandledDetail([]Attr{oa}, nil))
		case oExtra[oi].JSON != nExtra[ni].JSON:
			oa, na := oExtra[oi], nExtra[ni]
			d.emitProp(r.changed, path, orLine(na.Line, n.Line), orLine(oa.Line, o.Line), oa.JSON, na.JSON,
				fmt.Sprintf("%s %s → %s", r.key, short(oa.JSON), short(na.JSON)), unhandledDetail([]Attr{oa}, []Attr{na}))
		}
		if oi >= 0 {
			oExtra = withoutAttr(oExtra, oi)
		}
		if ni >= 0 {
			nExtra = withoutAttr(nExtra, ni)
		}
	}
	return oExtra, nExtra
}

func attrIndex(as []Attr, key string) int {
	for i := range as {
		if as[i].Key == key {
			return i
		}
	}
	return -1
}

// withoutAttr is as without its i-th attribute, in a new slice.
func withoutAttr(as []Attr, i int) []Attr {
	out := make([]Attr, 0, len(as)-1)
	out = append(out, as[:i]...)
	return append(out, as[i+1:]...)
}

func hasAttr(as []Attr, key string) bool {
	for _, a := range as {
		if a.Key == key {
			return true
		}
	}
	return false
}

// hasAddedRule reports whether n adds an attribute of addedRules that o lacks.
func hasAddedRule(o, n []Attr) bool {
	for _, a := range n {
		if _, ok := addedRules[a.Key]; ok && !hasAttr(o, a.Key) {
			return true
		}
	}
	return false
}
