package crd

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// schema compares one schema node of an existing version (or, for served
// compatibility, of an older served version) with its counterpart. Each cause
// is reported once: a removed field or a changed type stops the walk below it.
func (d *differ) schema(o, n *Schema, path string) {
	if o.Type != n.Type {
		d.emitProp(RuleTypeChanged, path, n.line(attrType), o.line(attrType), o.Type, n.Type,
			fmt.Sprintf("type changed from %q to %q", o.Type, n.Type))
		return
	}
	d.required(o, n, path)
	d.defaults(o, n, path)
	d.enum(o, n, path)
	d.bounds(o, n, path)
	d.pattern(o, n, path)
	if o.Nullable && !n.Nullable {
		d.emitProp(RuleNullableRemoved, path, n.line(attrNullable), o.line(attrNullable), "true", "false", "nullable removed")
	}

	// Attributes no rule judges, plus changes in the shape of the children.
	var unknown []string
	unknown = extraChanges(unknown, o.Extra, n.Extra)
	if o.AdditionalKind != n.AdditionalKind {
		unknown = append(unknown, fmt.Sprintf("additionalProperties %s → %s", orNone(o.AdditionalKind), orNone(n.AdditionalKind)))
	}
	if (o.Items == nil) != (n.Items == nil) {
		unknown = append(unknown, presence("items", o.Items != nil))
	}
	if (o.Not == nil) != (n.Not == nil) {
		unknown = append(unknown, presence("not", o.Not != nil))
	}
	for _, l := range [...]struct {
		key  string
		o, n []*Schema
	}{{"allOf", o.AllOf, n.AllOf}, {"anyOf", o.AnyOf, n.AnyOf}, {"oneOf", o.OneOf, n.OneOf}} {
		if len(l.o) != len(l.n) {
			unknown = append(unknown, fmt.Sprintf("%s %d → %d entries", l.key, len(l.o), len(l.n)))
		}
	}
	if len(unknown) > 0 {
		d.emitProp(RuleUnknownChange, path, n.Line, o.Line, "", "",
			"unknown change, no rule can judge it safe: "+strings.Join(unknown, "; "))
	}

	// Children.
	for i := range o.Properties {
		op := &o.Properties[i]
		child := path + "." + op.Name
		np := n.Property(op.Name)
		if np == nil {
			d.emit(RuleFieldRemoved, child, 0, op.Schema.Line, op.Schema.Type, "", "field removed"+wasType(op.Schema.Type),
				"NoExistingFieldRemoved", fmt.Sprintf("crd/%s version/%s field/%s may not be removed", d.crd, d.version, child))
			continue
		}
		d.schema(op.Schema, np, child)
	}
	if o.Items != nil && n.Items != nil {
		d.schema(o.Items, n.Items, path+".items")
	}
	if o.AdditionalProperties != nil && n.AdditionalProperties != nil {
		d.schema(o.AdditionalProperties, n.AdditionalProperties, path+".additionalProperties")
	}
	if o.Not != nil && n.Not != nil {
		d.schema(o.Not, n.Not, path+".not")
	}
	for _, l := range [...]struct {
		key  string
		o, n []*Schema
	}{{"allOf", o.AllOf, n.AllOf}, {"anyOf", o.AnyOf, n.AnyOf}, {"oneOf", o.OneOf, n.OneOf}} {
		if len(l.o) == len(l.n) {
			for i := range l.o {
				d.schema(l.o[i], l.n[i], fmt.Sprintf("%s.%s[%d]", path, l.key, i))
			}
		}
	}
}

func (d *differ) required(o, n *Schema, path string) {
	var added []Name
	for _, r := range n.Required {
		if !hasName(o.Required, r.Name) && !hasName(added, r.Name) {
			added = append(added, r)
		}
	}
	for _, r := range added {
		d.emitProp(RuleRequiredFieldAdded, path, orLine(r.Line, n.line(attrRequired)), o.line(attrRequired), "", r.Name,
			fmt.Sprintf("new required fields added: [%s]", r.Name))
	}
}

func hasName(list []Name, name string) bool {
	for _, r := range list {
		if r.Name == name {
			return true
		}
	}
	return false
}

func (d *differ) defaults(o, n *Schema, path string) {
	nl, ol := n.line(attrDefault), o.line(attrDefault)
	switch {
	case o.Default == n.Default:
	case o.Default == "":
		d.emitProp(RuleDefaultAdded, path, nl, ol, "", n.Default, "default value added: "+short(n.Default))
	case n.Default == "":
		d.emitProp(RuleDefaultRemoved, path, n.Line, ol, o.Default, "", "default value removed (was "+short(o.Default)+")")
	default:
		d.emitProp(RuleDefaultChanged, path, nl, ol, o.Default, n.Default,
			fmt.Sprintf("default value changed from %s to %s", short(o.Default), short(n.Default)))
	}
}

func (d *differ) enum(o, n *Schema, path string) {
	switch {
	case !n.HasEnum:
		// No enum, or an enum dropped: every value is allowed now.
	case !o.HasEnum:
		d.emitProp(RuleEnumAdded, path, n.line(attrEnum), o.Line, "", list(n.Enum),
			"enum constraint added to a field without one: "+list(n.Enum))
	default:
		var removed []string
		for _, v := range o.Enum {
			if !contains(n.Enum, v) && !contains(removed, v) {
				removed = append(removed, v)
			}
		}
		if len(removed) > 0 {
			d.emitProp(RuleEnumValueRemoved, path, n.line(attrEnum), o.line(attrEnum), list(o.Enum), list(n.Enum),
				"allowed enum values removed: "+list(removed))
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
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
		rule := RuleMaximumTightened
		if b.isMin() {
			rule = RuleMinimumTightened
		}
		switch {
		case !oset:
			d.emitProp(rule, path, nl, ol, "", nb.Text, fmt.Sprintf("%s constraint added: %s", key, nb.Text))
		case b.isMin() && nb.Num > ob.Num:
			d.emitProp(rule, path, nl, ol, ob.Text, nb.Text, fmt.Sprintf("%s increased from %s to %s", key, ob.Text, nb.Text))
		case !b.isMin() && nb.Num < ob.Num:
			d.emitProp(rule, path, nl, ol, ob.Text, nb.Text, fmt.Sprintf("%s decreased from %s to %s", key, ob.Text, nb.Text))
		}
	}
	if len(unknown) > 0 {
		d.emitProp(RuleUnknownChange, path, n.Line, o.Line, "", "",
			"unknown change, no rule can judge it safe: non-numeric "+strings.Join(unknown, ", "))
	}
}

func (d *differ) pattern(o, n *Schema, path string) {
	switch {
	case !n.HasPattern:
	case !o.HasPattern:
		d.emitProp(RulePatternAdded, path, n.line(attrPattern), o.Line, "", n.Pattern,
			"pattern added: "+strconv.Quote(truncate(n.Pattern, 80)))
	case o.Pattern != n.Pattern:
		d.emitProp(RulePatternChanged, path, n.line(attrPattern), o.line(attrPattern), o.Pattern, n.Pattern,
			fmt.Sprintf("pattern changed from %q to %q", truncate(o.Pattern, 80), truncate(n.Pattern, 80)))
	}
}

// extraChanges lists, by key, the unmodelled attributes that differ. Both
// lists are sorted by key.
func extraChanges(out []string, o, n []Attr) []string {
	i, j := 0, 0
	for i < len(o) || j < len(n) {
		switch {
		case j == len(n) || (i < len(o) && o[i].Key < n[j].Key):
			out = append(out, o[i].Key+" removed (was "+short(o[i].JSON)+")")
			i++
		case i == len(o) || n[j].Key < o[i].Key:
			out = append(out, n[j].Key+" added: "+short(n[j].JSON))
			j++
		default:
			if o[i].JSON != n[j].JSON {
				out = append(out, fmt.Sprintf("%s %s → %s", o[i].Key, short(o[i].JSON), short(n[j].JSON)))
			}
			i++
			j++
		}
	}
	return out
}

func presence(key string, had bool) string {
	if had {
		return key + " removed"
	}
	return key + " added"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func wasType(t string) string {
	if t == "" {
		return ""
	}
	return " (was type " + t + ")"
}
