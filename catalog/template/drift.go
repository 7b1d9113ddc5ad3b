package template

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/catalogbot/catalogbot/catalog"
)

// RuleDriftFormat: same blobs, other bytes.
const RuleDriftFormat = "template.drift-format"

// maxDriftPerBlob bounds the differences reported for one blob; the rest are counted.
const maxDriftPerBlob = 20

// Drift compares a rendered catalog with the committed catalog file it should equal and reports every
// difference on the committed line that differs (or, for what the catalog lacks, on the template line
// it comes from). file is the committed file's repository path, data its bytes; fix is the command that
// writes what should be committed, named in every message.
func Drift(out *Output, file string, data []byte, lim catalog.Limits, fix string) []catalog.Finding {
	docs, parseFindings := catalog.ParseFile(file, data, lim)
	var findings []catalog.Finding
	for _, f := range parseFindings {
		if f.Severity == catalog.SeverityError {
			findings = append(findings, catalog.Finding{Rule: RuleDriftMapping, Severity: catalog.SeverityError, Position: f.Position,
				Message: fmt.Sprintf("the committed catalog does not parse (%s), so it cannot equal what its template renders; %s", f.Message, fix),
				Hint:    "run the command and commit its output"})
		}
	}
	if len(findings) > 0 {
		return findings
	}
	type key struct{ schema, pkg, name string }
	keyOf := func(schema, pkg, name string) key {
		if schema == "olm.package" {
			return key{schema, name, name}
		}
		return key{schema, pkg, name}
	}
	committed := map[key][]*catalog.Doc{}
	var order []key
	for i := range docs {
		d := &docs[i]
		k := keyOf(d.Schema, d.Package, d.Name)
		if _, ok := committed[k]; !ok {
			order = append(order, k)
		}
		committed[k] = append(committed[k], d)
	}
	seen := map[key]int{}
	for _, b := range out.Blobs {
		k := keyOf(b.Schema, b.Package, b.Name)
		i := seen[k]
		seen[k]++
		list := committed[k]
		if i >= len(list) {
			findings = append(findings, catalog.Finding{Rule: RuleDriftMissing, Severity: catalog.SeverityError, Position: b.Source, Package: b.Package,
				Message: fmt.Sprintf("%s lacks the %s the template renders; %s", file, describe(b.Schema, b.Package, b.Name), fix),
				Hint:    "commit the rendered catalog rather than editing either file by hand"})
			continue
		}
		want, _ := catalog.ParseDocuments("rendered", b.JSON, catalog.Limits{})
		if len(want) != 1 {
			continue
		}
		var diffs []diffItem
		diffValues(&diffs, "", &list[i].Value, &want[0].Value, file)
		for n, d := range diffs {
			if n == maxDriftPerBlob {
				findings = append(findings, catalog.Finding{Rule: RuleDriftChanged, Severity: catalog.SeverityError, Position: list[i].Pos, Package: b.Package,
					Message: fmt.Sprintf("and %d more differences in this %s; %s", len(diffs)-n, describe(b.Schema, b.Package, b.Name), fix)})
				break
			}
			findings = append(findings, catalog.Finding{Rule: RuleDriftChanged, Severity: catalog.SeverityError, Position: d.pos, Package: b.Package,
				Message: fmt.Sprintf("%s %s: %s; %s", describe(b.Schema, b.Package, b.Name), d.path, d.what, fix),
				Hint:    "change the template rather than the catalog, then run the command and commit its output"})
		}
	}
	for _, k := range order {
		for i := seen[k]; i < len(committed[k]); i++ {
			d := committed[k][i]
			findings = append(findings, catalog.Finding{Rule: RuleDriftExtra, Severity: catalog.SeverityError, Position: d.Pos, Package: d.Package,
				Message: fmt.Sprintf("the %s is not what the template renders (the next render drops it); %s", describe(d.Schema, d.Package, d.Name), fix),
				Hint:    "add it to the template if it belongs, then run the command and commit its output"})
		}
	}
	if len(findings) == 0 {
		var buf bytes.Buffer
		var err error
		if strings.HasSuffix(file, ".json") {
			err = out.WriteJSON(&buf)
		} else {
			err = out.WriteYAML(&buf)
		}
		if err == nil && !bytes.Equal(buf.Bytes(), data) {
			findings = append(findings, catalog.Finding{Rule: RuleDriftFormat, Severity: catalog.SeverityWarning, Position: catalog.Position{File: file, Line: firstDifferentLine(buf.Bytes(), data)},
				Message: fmt.Sprintf("same blobs as the template renders, but not byte for byte what opm writes (order or formatting); %s", fix),
				Hint:    "commit the rendered output as is, so the next render changes nothing"})
		}
	}
	catalog.SortFindings(findings)
	return findings
}

func firstDifferentLine(a, b []byte) int {
	line := 1
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return line
		}
		if a[i] == '\n' {
			line++
		}
	}
	return line
}

func describe(schema, pkg, name string) string {
	switch schema {
	case "olm.package":
		return "olm.package " + name
	case "olm.channel":
		return fmt.Sprintf("channel %s of %s", name, pkg)
	case "olm.bundle":
		return "bundle " + name
	case "olm.deprecations":
		return "olm.deprecations of " + pkg
	}
	if name != "" {
		return schema + " " + name
	}
	return schema + " blob of " + pkg
}

type diffItem struct {
	path string
	pos  catalog.Position
	what string
}

// diffValues lists how got (committed) differs from want (rendered). Lists of objects with a name (channel
// entries, related images) are matched by name, lists of objects with a type (properties) as multisets,
// other lists item by item.
func diffValues(out *[]diffItem, path string, got, want *catalog.Value, file string) {
	if len(*out) > maxDriftPerBlob {
		return
	}
	if path == "" {
		path = "."
	}
	if got.Kind != want.Kind {
		*out = append(*out, diffItem{path, got.Pos(file), fmt.Sprintf("is %s, the template renders %s", got.String(), want.String())})
		return
	}
	switch got.Kind {
	case catalog.KindObject:
		for _, wf := range want.Fields() {
			g := got.Get(wf.Key)
			if g == nil {
				*out = append(*out, diffItem{join(path, wf.Key), got.Pos(file), fmt.Sprintf("is missing; the template renders %s", wf.Value.String())})
				continue
			}
			diffValues(out, join(path, wf.Key), g, &wf.Value, file)
		}
		for i, gf := range got.Fields() {
			if want.Get(gf.Key) == nil {
				*out = append(*out, diffItem{join(path, gf.Key), got.Fields()[i].KeyPos(file), fmt.Sprintf("is %s, which the template does not render", gf.Value.String())})
			}
		}
	case catalog.KindArray:
		diffLists(out, path, got, want, file)
	default:
		if got.Str() != want.Str() {
			*out = append(*out, diffItem{path, got.Pos(file), fmt.Sprintf("is %s, the template renders %s", got.String(), want.String())})
		}
	}
}

func join(path, key string) string {
	if path == "." {
		return key
	}
	return path + "." + key
}

func itemKey(v *catalog.Value, field string) (string, bool) {
	if v.Kind != catalog.KindObject {
		return "", false
	}
	f := v.Get(field)
	if f == nil || f.Kind != catalog.KindString {
		return "", false
	}
	return f.Str(), true
}

func allKeyed(items []catalog.Value, field string) bool {
	for i := range items {
		if _, ok := itemKey(&items[i], field); !ok {
			return false
		}
	}
	return true
}

// uniqueKeys: every item is an object with a string field, no two alike.
func uniqueKeys(items []catalog.Value, field string) bool {
	seen := map[string]bool{}
	for i := range items {
		k, ok := itemKey(&items[i], field)
		if !ok || seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

func objects(items []catalog.Value) bool {
	for i := range items {
		if items[i].Kind != catalog.KindObject {
			return false
		}
	}
	return true
}

func diffLists(out *[]diffItem, path string, got, want *catalog.Value, file string) {
	gi, wi := got.Items(), want.Items()
	switch {
	case len(gi)+len(wi) > 0 && uniqueKeys(gi, "name") && uniqueKeys(wi, "name") && !allKeyed(gi, "type"):
		byName := map[string]*catalog.Value{}
		for i := range gi {
			n, _ := itemKey(&gi[i], "name")
			if _, dup := byName[n]; !dup {
				byName[n] = &gi[i]
			}
		}
		wantNames := map[string]bool{}
		for i := range wi {
			n, _ := itemKey(&wi[i], "name")
			wantNames[n] = true
			g, ok := byName[n]
			if !ok {
				*out = append(*out, diffItem{fmt.Sprintf("%s[name=%s]", path, n), got.Pos(file), "is missing; the template renders " + wi[i].String()})
				continue
			}
			diffValues(out, fmt.Sprintf("%s[name=%s]", path, n), g, &wi[i], file)
		}
		for i := range gi {
			n, _ := itemKey(&gi[i], "name")
			if !wantNames[n] {
				*out = append(*out, diffItem{fmt.Sprintf("%s[name=%s]", path, n), gi[i].Pos(file), "is not what the template renders"})
			}
		}
	case len(gi) == len(wi) && allEqual(gi, wi):
		// The common case, settled without encoding anything.
	case len(gi)+len(wi) > 0 && objects(gi) && objects(wi):
		canon := func(v *catalog.Value) string { return string(appendCanonical(nil, v)) }
		left := map[string][]int{}
		for i := range gi {
			c := canon(&gi[i])
			left[c] = append(left[c], i)
		}
		var missing []*catalog.Value
		for i := range wi {
			c := canon(&wi[i])
			if l := left[c]; len(l) > 0 {
				left[c] = l[1:]
				continue
			}
			missing = append(missing, &wi[i])
		}
		var extra []int
		for _, l := range left {
			extra = append(extra, l...)
		}
		sort.Ints(extra)
		// A changed property: one missing and one extra of the same type.
		label := func(v *catalog.Value) string {
			if t, ok := itemKey(v, "type"); ok {
				return fmt.Sprintf("%s[type=%s]", path, t)
			}
			return path + "[]"
		}
		for _, m := range missing {
			t, typed := itemKey(m, "type")
			matched := -1
			for n, e := range extra {
				if et, _ := itemKey(&gi[e], "type"); typed && et == t {
					matched = n
					break
				}
			}
			if matched >= 0 {
				e := extra[matched]
				extra = append(extra[:matched], extra[matched+1:]...)
				diffValues(out, label(m), &gi[e], m, file)
				continue
			}
			*out = append(*out, diffItem{label(m), got.Pos(file), "is missing; the template renders " + m.String()})
		}
		for _, e := range extra {
			*out = append(*out, diffItem{label(&gi[e]), gi[e].Pos(file), "is " + gi[e].String() + ", which the template does not render"})
		}
	default:
		n := len(gi)
		if len(wi) < n {
			n = len(wi)
		}
		for i := 0; i < n; i++ {
			diffValues(out, fmt.Sprintf("%s[%d]", path, i), &gi[i], &wi[i], file)
		}
		for i := n; i < len(wi); i++ {
			*out = append(*out, diffItem{fmt.Sprintf("%s[%d]", path, i), got.Pos(file), "is missing; the template renders " + wi[i].String()})
		}
		for i := n; i < len(gi); i++ {
			*out = append(*out, diffItem{fmt.Sprintf("%s[%d]", path, i), gi[i].Pos(file), "is not what the template renders"})
		}
	}
}

func allEqual(a, b []catalog.Value) bool {
	for i := range a {
		if !valuesEqual(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// valuesEqual compares two values as JSON: objects regardless of key order.
func valuesEqual(a, b *catalog.Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case catalog.KindObject:
		af, bf := a.Fields(), b.Fields()
		if len(af) != len(bf) {
			return false
		}
		for i := range af {
			if i < len(bf) && af[i].Key == bf[i].Key {
				if !valuesEqual(&af[i].Value, &bf[i].Value) {
					return false
				}
				continue
			}
			o := b.Get(af[i].Key)
			if o == nil || !valuesEqual(&af[i].Value, o) {
				return false
			}
		}
		return true
	case catalog.KindArray:
		ai, bi := a.Items(), b.Items()
		return len(ai) == len(bi) && allEqual(ai, bi)
	}
	return a.Str() == b.Str()
}
