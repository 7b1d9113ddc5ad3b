package bundle

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/catalogbot/catalogbot/catalog"
	"sigs.k8s.io/yaml"
)

// How opm (operator-registry's bundle parser, behind opm render and every catalog built from bundle images)
// reads metadata/: it lists the folder in name order and decodes each entry's first document (as
// Kubernetes' YAML-or-JSON decoder reads it) three times — as annotations, until one file gives a package,
// channels or default channel; as dependencies, until one gives a non-empty list; as properties, likewise.
// A file that does not decode for one of the three is skipped for it, silently. Every name counts
// (hidden files too, not only annotations.yaml); keys match as encoding/json matches struct fields, exactly
// or case-insensitively, the last match winning. catalogbot reads metadata/ the same way, so the package it
// judges (and whose owners it asks) is the one opm will publish, and refuses metadata that a person could
// read otherwise: two files with annotations, two with dependencies or properties, or an olm.package
// property of another package.

// opmAnnotationKeys are the annotations opm's parser decodes (the others it ignores).
var opmAnnotationKeys = [3]string{AnnotationPackage, AnnotationChannels, AnnotationDefaultChannel}

// metaFile is one file of metadata/ as opm's parser sees it.
type metaFile struct {
	name string
	doc  *catalog.Doc // its first document, nil when it does not decode (or is empty)

	ann        annotationsRead
	deps, prop entriesRead
}

// annotationsRead is what decoding a document as an annotations file gives.
type annotationsRead struct {
	holds   bool   // it has an annotations mapping naming a bundle annotation (whether opm can decode it or not)
	bad     string // why opm cannot decode it; "" when it can
	badPos  catalog.Position
	values  [3]string // of opmAnnotationKeys
	at      [3]*catalog.Value
	mapping []*catalog.Value // every annotations mapping of the document (usually one)
	pos     catalog.Position
}

// taken: opm takes this file's annotations.
func (a *annotationsRead) taken() bool {
	return a.bad == "" && (a.values[0] != "" || a.values[1] != "" || a.values[2] != "")
}

// entriesRead is what decoding a document as a dependencies or properties file gives.
type entriesRead struct {
	holds   bool // it has a non-empty list under the key (whether opm can decode it or not)
	bad     string
	badPos  catalog.Position
	entries []Entry
	pos     catalog.Position
}

func (e *entriesRead) taken() bool { return e.bad == "" && len(e.entries) > 0 }

// readMetadata reads every file of metadata/ as opm does, and takes annotations, dependencies and
// properties where opm takes them.
func (r *reader) readMetadata(list []scanned) error {
	var files []*metaFile
	for _, e := range list {
		if e.dir {
			continue // opm cannot decode a folder; its files were counted against the bounds
		}
		data, ok, err := r.read(e)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		f := &metaFile{name: e.name}
		doc, end, syntax := firstDocumentEnd(e.name, data, r.lim.Parse)
		for _, s := range syntax {
			// opm skips a file it cannot decode; so do we, saying so (the verdict comes from what is missing).
			s.Severity = catalog.SeverityWarning
			s.Message = "opm cannot decode this file of metadata/ and skips it: " + s.Message
			r.findings = append(r.findings, s)
		}
		if doc != nil {
			f.doc = doc
			f.ann = readAnnotationsDoc(doc, e.name)
			f.deps = readEntriesDoc(doc, e.name, "dependencies")
			f.prop = readEntriesDoc(doc, e.name, "properties")
		}
		r.checkLaterDocuments(e.name, data, end)
		files = append(files, f)
	}
	var ann, deps, props *metaFile
	for _, f := range files {
		if ann == nil && f.ann.taken() {
			ann = f
		}
		if deps == nil && f.deps.taken() {
			deps = f
		}
		if props == nil && f.prop.taken() {
			props = f
		}
	}
	r.checkAmbiguous(files, ann, deps, props)
	if ann == nil {
		where := catalog.Position{File: "metadata/annotations.yaml"}
		for _, f := range files {
			if f.ann.holds {
				where = f.ann.pos
				r.add(ruleAnnotationNotString, f.ann.badPos, "opm cannot read the annotations of %s (%s), so it skips the file", f.name, cmp.Or(f.ann.bad, "the package, channels and default channel are all empty"))
				break
			}
		}
		r.add(ruleNoAnnotations, where, "no file of metadata/ holds annotations opm can read (an 'annotations:' mapping with the package and channels)")
	} else {
		r.takeAnnotations(ann)
	}
	for _, f := range files {
		for _, e := range []*entriesRead{&f.deps, &f.prop} {
			if e.holds && e.bad != "" {
				r.add(ruleMetadataShape, e.badPos, "opm cannot read %s (%s), so it ignores the list", f.name, e.bad)
			}
		}
	}
	if deps != nil {
		r.b.Dependencies = deps.deps.entries
		for _, d := range r.b.Dependencies {
			switch d.Type {
			case "olm.package", "olm.gvk", "olm.constraint", "olm.label":
			default:
				r.add(ruleDependencyType, d.Pos, "dependency type %q is not one OLM knows (olm.package, olm.gvk, olm.constraint, olm.label)", d.Type)
			}
		}
	}
	if props != nil {
		r.b.Properties = props.prop.entries
	}
	return nil
}

// checkAmbiguous refuses metadata a person could read otherwise than opm: a second file with bundle
// annotations, dependencies or properties (opm silently ignores it).
func (r *reader) checkAmbiguous(files []*metaFile, ann, deps, props *metaFile) {
	first := func(chosen *metaFile, holds func(*metaFile) bool) *metaFile {
		if chosen != nil {
			return chosen
		}
		for _, f := range files {
			if holds(f) {
				return f
			}
		}
		return nil
	}
	a := first(ann, func(f *metaFile) bool { return f.ann.holds })
	d := first(deps, func(f *metaFile) bool { return f.deps.holds })
	p := first(props, func(f *metaFile) bool { return f.prop.holds })
	for _, f := range files {
		if f.ann.holds && a != nil && f != a {
			r.add(ruleMetadataAmbiguous, f.ann.pos, "%s holds bundle annotations (package %q) as %s does (package %q); opm reads only %s, the first in name order whose annotations it can read%s, and ignores the other: keep one annotations file",
				f.name, f.ann.values[0], a.name, a.ann.values[0], a.name, takenNote(a == ann))
		}
		if f.deps.holds && d != nil && f != d {
			r.add(ruleMetadataAmbiguous, f.deps.pos, "%s lists dependencies as %s does; opm takes only those of %s%s and ignores the others: keep one dependencies list", f.name, d.name, d.name, takenNote(d == deps))
		}
		if f.prop.holds && p != nil && f != p {
			r.add(ruleMetadataAmbiguous, f.prop.pos, "%s lists properties as %s does; opm takes only those of %s%s and ignores the others: keep one properties list", f.name, p.name, p.name, takenNote(p == props))
		}
	}
}

// checkLaterDocuments refuses annotations, dependencies or properties in a document of a metadata file that
// opm does not read (it reads the first only).
func (r *reader) checkLaterDocuments(name string, data []byte, end catalog.Position) {
	if !bytes.Contains(data, []byte("---")) && !bytes.Contains(data, []byte("}")) {
		return // one document
	}
	docs, _ := catalog.ParseDocuments(name, data, r.lim.Parse)
	for i := range docs {
		d := &docs[i]
		if !end.Less(d.Pos) {
			continue
		}
		var what []string
		if a := readAnnotationsDoc(d, name); a.holds {
			what = append(what, "bundle annotations")
		}
		if e := readEntriesDoc(d, name, "dependencies"); e.holds {
			what = append(what, "dependencies")
		}
		if e := readEntriesDoc(d, name, "properties"); e.holds {
			what = append(what, "properties")
		}
		if len(what) > 0 {
			r.add(ruleMetadataAmbiguous, d.Pos, "this document of %s holds %s, which opm never reads: it reads only the first document of each file of metadata/; move them into a file of their own", name, strings.Join(what, " and "))
		}
	}
}

func takenNote(taken bool) string {
	if taken {
		return ""
	}
	return " (were they readable)"
}

// takeAnnotations makes the annotations of f the bundle's.
func (r *reader) takeAnnotations(f *metaFile) {
	name := f.name
	r.b.AnnotationsAt = catalog.Position{File: name, Line: 1}
	for _, m := range f.ann.mapping {
		for _, fl := range m.Fields() {
			if fl.Value.Kind == catalog.KindString {
				key := fl.Key
				for _, k := range opmAnnotationKeys {
					if strings.EqualFold(key, k) {
						key = k
					}
				}
				r.b.Annotations[key] = fl.Value.Str()
				r.b.AnnotationPos[key] = fl.Value.Pos(name)
			}
		}
	}
	// The three keys opm reads, as it reads them (the last of several spellings wins).
	for i, k := range opmAnnotationKeys {
		if v := f.ann.at[i]; v != nil {
			r.b.Annotations[k] = f.ann.values[i]
			r.b.AnnotationPos[k] = v.Pos(name)
		}
	}
	for _, m := range f.ann.mapping {
		for _, fl := range m.Fields() {
			if fl.Value.Kind != catalog.KindString && fl.Value.Kind != catalog.KindNull && strings.HasPrefix(strings.ToLower(fl.Key), BundleLabelPrefixLower) && !isOpmKey(fl.Key) {
				r.add(ruleAnnotationNotString, fl.Value.Pos(name), "annotation %q is %s, not a string: quote it", fl.Key, fl.Value.Kind)
			}
		}
	}
	at := func(key string) catalog.Position {
		if p, ok := r.b.AnnotationPos[key]; ok {
			return p
		}
		return f.ann.pos
	}
	for _, key := range []string{AnnotationMediaType, AnnotationManifests, AnnotationMetadata, AnnotationPackage, AnnotationChannels} {
		if _, ok := r.b.Annotations[key]; !ok {
			r.add(ruleAnnotationMissing, f.ann.pos, "annotation %q is missing", key)
		}
	}
	if v, ok := r.b.Annotations[AnnotationMediaType]; ok && v != MediaTypeRegistryV1 {
		r.add(ruleMediaType, at(AnnotationMediaType), "mediatype is %q; a registry+v1 bundle says %q", v, MediaTypeRegistryV1)
	}
	if v, ok := r.b.Annotations[AnnotationManifests]; ok && v != ManifestsDir {
		r.add(ruleAnnotationPath, at(AnnotationManifests), "%s is %q; the manifests are read from %q", AnnotationManifests, v, ManifestsDir)
	}
	if v, ok := r.b.Annotations[AnnotationMetadata]; ok && v != MetadataDir {
		r.add(ruleAnnotationPath, at(AnnotationMetadata), "%s is %q; the metadata is read from %q", AnnotationMetadata, v, MetadataDir)
	}
	r.b.Package = f.ann.values[0]
	if _, ok := r.b.Annotations[AnnotationPackage]; ok && strings.TrimSpace(r.b.Package) == "" {
		r.add(ruleAnnotationEmpty, at(AnnotationPackage), "the package annotation is empty")
	}
	if f.ann.at[1] != nil {
		for _, c := range strings.Split(f.ann.values[1], ",") {
			if c = strings.TrimSpace(c); c != "" {
				r.b.Channels = append(r.b.Channels, c)
			}
		}
		if len(r.b.Channels) == 0 {
			r.add(ruleAnnotationEmpty, at(AnnotationChannels), "the channels annotation names no channel; a bundle is in at least one")
		}
	}
	if f.ann.at[2] != nil {
		r.b.DefaultChannel = strings.TrimSpace(f.ann.values[2])
		if r.b.DefaultChannel == "" {
			r.add(ruleAnnotationEmpty, at(AnnotationDefaultChannel), "the default channel annotation is empty; remove it or name a channel")
		}
	}
}

// asString is a scalar as opm's YAML decoder (sigs.k8s.io/yaml) writes it into a string field: a string as
// it is, a boolean as true or false, an integer in decimal, any other number as the shortest float32 text.
func asString(v *catalog.Value) string {
	switch v.Kind {
	case catalog.KindBool:
		if v.Bool() {
			return "true"
		}
		return "false"
	case catalog.KindNumber:
		text := string(v.AppendJSON(nil))
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			return strconv.FormatUint(u, 10)
		}
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 32)
		}
		return text
	}
	return v.Str()
}

func isOpmKey(key string) bool {
	for _, k := range opmAnnotationKeys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// BundleLabelPrefixLower starts every bundle annotation, in lower case.
const BundleLabelPrefixLower = "operators.operatorframework.io.bundle."

// fields returns the fields of an object whose key matches key as encoding/json matches a struct field's
// name (exactly or case-insensitively), in order: the last one is the one that counts.
func fields(v *catalog.Value, key string) []*catalog.Field {
	if v == nil || v.Kind != catalog.KindObject {
		return nil
	}
	var out []*catalog.Field
	fs := v.Fields()
	for i := range fs {
		if strings.EqualFold(fs[i].Key, key) {
			out = append(out, &fs[i])
		}
	}
	return out
}

// readAnnotationsDoc decodes a document as opm decodes an annotations file.
func readAnnotationsDoc(doc *catalog.Doc, file string) annotationsRead {
	var a annotationsRead
	a.pos = doc.Pos
	fail := func(pos catalog.Position, format string, args ...any) {
		if a.bad == "" {
			a.bad, a.badPos = fmt.Sprintf(format, args...), pos
		}
	}
	for _, f := range fields(&doc.Value, "annotations") {
		m := &f.Value
		switch m.Kind {
		case catalog.KindNull:
			continue
		case catalog.KindObject:
		default:
			fail(m.Pos(file), "its 'annotations' is %s, not a mapping", m.Kind)
			continue
		}
		a.mapping = append(a.mapping, m)
		for _, fl := range m.Fields() {
			if strings.HasPrefix(strings.ToLower(fl.Key), BundleLabelPrefixLower) {
				a.holds = true
				if a.pos == doc.Pos {
					a.pos = f.KeyPos(file)
				}
			}
		}
		for i, k := range opmAnnotationKeys {
			for _, fl := range fields(m, k) {
				switch fl.Value.Kind {
				case catalog.KindNull:
				case catalog.KindString, catalog.KindNumber, catalog.KindBool:
					a.values[i], a.at[i] = asString(&fl.Value), &fl.Value
				default:
					fail(fl.Value.Pos(file), "annotation %q is %s, not a string", fl.Key, fl.Value.Kind)
				}
			}
		}
	}
	return a
}

// readEntriesDoc decodes a document as opm decodes a dependencies (key "dependencies") or properties
// (key "properties") file: a list of {type, value}.
func readEntriesDoc(doc *catalog.Doc, file, key string) entriesRead {
	var e entriesRead
	e.pos = doc.Pos
	fail := func(pos catalog.Position, format string, args ...any) {
		if e.bad == "" {
			e.bad, e.badPos = fmt.Sprintf(format, args...), pos
		}
	}
	for _, f := range fields(&doc.Value, key) {
		list := &f.Value
		e.entries = nil
		switch list.Kind {
		case catalog.KindNull:
			continue
		case catalog.KindArray:
		default:
			fail(list.Pos(file), "its %q is %s, not a list", f.Key, list.Kind)
			continue
		}
		if list.Len() > 0 {
			e.holds = true
			e.pos = f.KeyPos(file)
		}
		items := list.Items()
		for i := range items {
			it := &items[i]
			ent := Entry{Pos: it.Pos(file)}
			switch it.Kind {
			case catalog.KindNull:
			case catalog.KindObject:
				for _, t := range fields(it, "type") {
					switch t.Value.Kind {
					case catalog.KindNull:
					case catalog.KindString, catalog.KindNumber, catalog.KindBool:
						ent.Type = asString(&t.Value)
					default:
						fail(t.Value.Pos(file), "the type of an entry is %s, not a string", t.Value.Kind)
					}
				}
				for _, v := range fields(it, "value") {
					ent.Value = &v.Value
				}
			default:
				fail(it.Pos(file), "an entry of %q is %s, not a mapping", f.Key, it.Kind)
			}
			e.entries = append(e.entries, ent)
		}
	}
	if e.bad != "" {
		e.entries = nil
	}
	return e
}

// firstDocumentEnd is firstDocument, and the position after which the first document ends (its last line
// for YAML; for JSON the first document's start).
func firstDocumentEnd(name string, data []byte, lim catalog.Limits) (*catalog.Doc, catalog.Position, []catalog.Finding) {
	var errs []catalog.Finding
	keepErrors := func(fs []catalog.Finding) {
		for _, f := range fs {
			if f.Severity == catalog.SeverityError {
				errs = append(errs, f)
			}
		}
	}
	if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n\f\v"), []byte("{")) {
		// opm reads metadata through a YAML reader even when it is JSON, and that reader refuses bytes that are
		// not UTF-8 (encoding/json would have replaced them): such a file is one opm cannot decode.
		if bad := firstNotUTF8(data); bad >= 0 {
			return nil, catalog.Position{File: name}, []catalog.Finding{{Rule: "load.yaml-syntax", Severity: catalog.SeverityError,
				Position: catalog.Position{File: name, Line: 1 + bytes.Count(data[:bad], []byte("\n"))},
				Message:  fmt.Sprintf("byte %d is not UTF-8, which opm's YAML reader refuses", bad)}}
		}
		docs, fs := catalog.ParseDocuments(name, data, lim)
		if len(docs) > 0 {
			for _, f := range fs {
				if f.Severity == catalog.SeverityError && f.Position.Less(docs[0].Pos) {
					if doc, ok := flowYAML(name, data, lim); ok {
						return doc, wholeFile(name), nil
					}
					keepErrors([]catalog.Finding{f})
					return nil, catalog.Position{File: name}, errs
				}
			}
			return &docs[0], docs[0].Pos, nil
		}
		if doc, ok := flowYAML(name, data, lim); ok {
			return doc, wholeFile(name), nil
		}
		keepErrors(fs)
		return nil, catalog.Position{File: name}, errs
	}
	// The first line always starts the piece (a '---' there too); the next '---' line ends it.
	var piece bytes.Buffer
	line := 0
	for rest := data; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		l := rest
		if i >= 0 {
			l, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		line++
		if bytes.HasPrefix(l, []byte("---")) {
			after := strings.TrimSpace(string(l[3:]))
			if after != "" && after[0] != '#' {
				return nil, catalog.Position{File: name}, []catalog.Finding{{Rule: "load.yaml-syntax", Severity: catalog.SeverityError, Position: catalog.Position{File: name, Line: line},
					Message: fmt.Sprintf("invalid document separator %q: only a comment may follow '---'", strings.TrimSpace(string(l)))}}
			}
			if piece.Len() > 0 {
				line--
				break
			}
		}
		piece.Write(l)
	}
	end := catalog.Position{File: name, Line: line, Column: 1 << 30}
	if piece.Len() == 0 {
		return nil, end, nil
	}
	docs, fs := catalog.ParseDocuments(name, piece.Bytes(), lim)
	for _, f := range fs {
		// An empty or null piece decodes to nothing, without error.
		if f.Severity == catalog.SeverityError && f.Rule != "load.empty-document" && !(f.Rule == "load.not-object" && strings.Contains(f.Message, "is null")) {
			errs = append(errs, f)
		}
	}
	if len(errs) > 0 || len(docs) == 0 {
		return nil, end, errs
	}
	return &docs[0], end, nil
}

// firstNotUTF8 is the offset of the first byte of data that is not part of valid UTF-8, or -1.
func firstNotUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// checkPackageProperties refuses an olm.package property (of the properties file opm takes, or of the CSV's
// olm.properties annotation) that names another package than the annotations: opm would publish a blob of
// one package whose olm.package property says another.
func (r *reader) checkPackageProperties() {
	if r.b.Package == "" {
		return
	}
	check := func(pos catalog.Position, where, pkg string) {
		if pkg != r.b.Package {
			r.add(ruleMetadataAmbiguous, pos, "%s declares an olm.package property of package %q, but the annotations (%s) say %q: a catalog would list the bundle under one and resolve it as the other; remove the property",
				where, pkg, r.b.AnnotationsAt.File, r.b.Package)
		}
	}
	for _, p := range r.b.Properties {
		if p.Type == "olm.package" && p.Value != nil {
			if name := lastString(p.Value, "packageName"); name != nil {
				check(p.Pos, p.Pos.File, *name)
			}
		}
	}
	if r.b.CSV == nil {
		return
	}
	ann := path2(r.b.CSV.Value, "metadata", "annotations", "olm.properties")
	if ann == nil || ann.Kind != catalog.KindString {
		return
	}
	var list []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal([]byte(ann.Str()), &list) != nil {
		return
	}
	for _, p := range list {
		if p.Type != "olm.package" {
			continue
		}
		var v struct {
			PackageName string `json:"packageName"`
		}
		if json.Unmarshal(p.Value, &v) == nil {
			check(ann.Pos(r.b.CSV.File), "the CSV's olm.properties annotation", v.PackageName)
		}
	}
}

// lastString is the string value of the last field of v matching key as encoding/json matches it.
func lastString(v *catalog.Value, key string) *string {
	var out *string
	for _, f := range fields(v, key) {
		if f.Value.Kind == catalog.KindString {
			s := f.Value.Str()
			out = &s
		}
	}
	return out
}

// flowYAML reads a file that begins with '{' but is not JSON as opm's YAML reader reads it — a YAML flow
// mapping (unquoted keys, a key with no value, single quotes): its first document, converted to JSON with the
// library opm uses, read as one document whose positions are all on line 1.
func flowYAML(name string, data []byte, lim catalog.Limits) (*catalog.Doc, bool) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, false
	}
	docs, fs := catalog.ParseDocuments(name, j, lim)
	if len(docs) == 0 {
		return nil, false
	}
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return nil, false
		}
	}
	return &docs[0], true
}

// wholeFile is the end of a file's first document when it was read whole (no later document to look at).
func wholeFile(name string) catalog.Position {
	return catalog.Position{File: name, Line: math.MaxInt32}
}
