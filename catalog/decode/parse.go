package decode

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/cases"
)

// Limits bound what one parse reads. A zero field means its default (see DefaultLimits).
type Limits struct {
	// MaxFileSize is the largest file read, in bytes (at most MaxSourceLen, the longest text a Value
	// holds; larger settings are lowered to it).
	MaxFileSize int64
	// MaxDocuments bounds the documents of one file.
	MaxDocuments int
	// MaxDepth bounds the nesting of objects and arrays.
	MaxDepth int
	// MaxAliasExpansion bounds the values YAML aliases may produce in one document.
	MaxAliasExpansion int
	// MaxAliasExpansionPerFile bounds the values aliases may produce in all documents of one file, and
	// MaxAliasExpansionPerRead in all files of one read (one revision of a pull request) that share
	// AliasSpent: many small alias bombs, each under the per-document bound, cannot add up to gigabytes.
	MaxAliasExpansionPerFile int
	MaxAliasExpansionPerRead int64
	// AliasSpent, when set, counts the values aliases produced across the files of one read; the reader
	// of a tree gives each of its files the same counter. Nil: each file is bounded alone.
	AliasSpent *atomic.Int64
}

// MaxSourceLen is the longest file a parse reads: a Value's text and children are counted in 32 bits.
const MaxSourceLen = maxValueLen

// DefaultLimits returns the limits used for zero fields. They are far above real catalogs (the largest
// community package file is a few MB, the deepest CRD schema a few dozen levels) and low enough that
// hostile input is refused in milliseconds.
func DefaultLimits() Limits {
	return Limits{
		MaxFileSize:       256 << 20,
		MaxDocuments:      1_000_000,
		MaxDepth:          200,
		MaxAliasExpansion: 100_000,
		// About 50 MiB of values per file and 200 MiB per read; real catalogs use a handful of
		// aliases, if any.
		MaxAliasExpansionPerFile: 1_000_000,
		MaxAliasExpansionPerRead: 4_000_000,
	}
}

// WithDefaults fills zero fields from DefaultLimits and lowers MaxFileSize to MaxSourceLen.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = d.MaxFileSize
	}
	l.MaxFileSize = min(l.MaxFileSize, MaxSourceLen)
	if l.MaxDocuments <= 0 {
		l.MaxDocuments = d.MaxDocuments
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxAliasExpansion <= 0 {
		l.MaxAliasExpansion = d.MaxAliasExpansion
	}
	if l.MaxAliasExpansionPerFile <= 0 {
		l.MaxAliasExpansionPerFile = d.MaxAliasExpansionPerFile
	}
	if l.MaxAliasExpansionPerRead <= 0 {
		l.MaxAliasExpansionPerRead = d.MaxAliasExpansionPerRead
	}
	return l
}

// Doc is one object read from a catalog file.
type Doc struct {
	// Pos is the file (slash path relative to the root), line and column where the object starts.
	Pos Position
	// Value is the whole object (Kind == KindObject).
	Value Value
	// Schema, Package and Name are the top-level keys of those names, matched
	// case-insensitively as opm does; empty when absent or not strings (the
	// loader reports the latter).
	Schema, Package, Name string
}

// ParseFile parses one file's bytes into documents, as opm v1.60.0 reads a
// catalog file: a file whose first non-space byte (within 4096 bytes) is '{' is
// a stream of JSON objects, any other is YAML split on '---' lines. name only
// labels positions. Malformed content yields findings (never a panic); the
// documents that parsed are still returned. Besides syntax, the decoder reports
// what opm's reading of a blob refuses: documents that are not objects, blank
// or comment-only YAML documents, top-level keys equal under case folding,
// non-string schema/package/name, and a missing or empty schema
// (load.missing-schema), so the model need not report those again.
func ParseFile(name string, data []byte, lim Limits) ([]Doc, []Finding) {
	return parseData(name, data, lim, false)
}

// parseData reads one file; plain leaves out the rules of catalog blobs.
func parseData(name string, data []byte, lim Limits, plain bool) ([]Doc, []Finding) {
	if len(data) == 0 {
		return nil, nil
	}
	lim = lim.WithDefaults()
	if f, over := overMaxFileSize(name, len(data), lim); over {
		return nil, []Finding{f}
	}
	// One copy of the file: the values' strings are substrings of it (until
	// compactStrings moves them), and the caller may reuse data.
	p := newFileParser(name, string(data), lim)
	p.plain = plain
	p.parse()
	compactStrings(p.docs, p.src, len(p.src), false)
	return p.docs, p.findings
}

// ParseDocuments reads a YAML or JSON stream as opm's reader does (same syntax, bounds and line handling)
// into objects with positions, without the rules of catalog blobs: for Kubernetes manifests and bundle
// metadata. A document that is not an object is a finding.
func ParseDocuments(name string, data []byte, lim Limits) ([]Doc, []Finding) {
	return parseData(name, data, lim, true)
}

// ParseDocumentsShared is ParseDocuments on a buffer the documents keep: their strings are slices of data,
// neither copied first nor moved out after, so data must never be written again. For a caller that reads
// each file into a buffer of its own and holds it as long as the documents anyway (bundle.Load keeps the
// bytes for the compressed size): it saves copying the file twice.
func ParseDocumentsShared(name string, data []byte, lim Limits) ([]Doc, []Finding) {
	if len(data) == 0 {
		return nil, nil
	}
	lim = lim.WithDefaults()
	if f, over := overMaxFileSize(name, len(data), lim); over {
		return nil, []Finding{f}
	}
	p := newFileParser(name, unsafe.String(unsafe.SliceData(data), len(data)), lim)
	p.plain = true
	p.parse()
	return p.docs, p.findings
}

// overMaxFileSize is the finding of a file over lim.MaxFileSize, which is not read.
func overMaxFileSize(name string, size int, lim Limits) (Finding, bool) {
	if int64(size) <= lim.MaxFileSize {
		return Finding{}, false
	}
	return fileFinding(ruleLoadFileTooLarge, name, fmt.Sprintf("file is %d bytes, over the limit of %d bytes; it was not read", size, lim.MaxFileSize)), true
}

// Parsed is what one file holds.
type Parsed struct {
	Docs     []Doc
	Findings []Finding
	// Aliases is set when the file's YAML expanded aliases.
	Aliases bool
}

// ParseShared is ParseFile on a buffer the documents may keep: their strings are slices of data, moved out
// of it afterwards (into one block of their exact size) unless they make up most of it. kept reports that
// the documents still point into data, which must then never be written again; otherwise the caller may
// reuse data at once. lim must have its defaults (Limits.WithDefaults) and data be within lim.MaxFileSize.
func ParseShared(name string, data []byte, lim Limits) (res Parsed, kept bool) {
	if len(data) == 0 {
		return Parsed{}, false
	}
	src := unsafe.String(unsafe.SliceData(data), len(data))
	p := newFileParser(name, src, lim)
	p.parse()
	res = Parsed{Docs: p.docs, Findings: p.findings, Aliases: p.aliasValues > 0}
	return res, compactStrings(p.docs, src, cap(data), true)
}

// fileFinding is a finding of rule about a whole file (its first line).
func fileFinding(rule, file, msg string) Finding {
	r := ruleHints[rule]
	return Finding{Rule: rule, Severity: r.Severity, Position: Position{File: file, Line: 1}, Message: msg, Hint: r.Hint}
}

// fileParser holds the state of parsing one file.
type fileParser struct {
	name string
	src  string
	lim  Limits
	// aliasValues counts the values aliases produced in the whole file.
	aliasValues int
	// plain: the documents are not catalog blobs (Kubernetes manifests, bundle metadata): no schema,
	// package or name rules.
	plain    bool
	docs     []Doc
	findings []Finding
	cols     columnCache
	slabs    valueSlabs
	// Scratch stacks the parsers reuse from one document to the next (each
	// document leaves them empty and cleared).
	fieldStack []Field
	itemStack  []Value
	lineStack  []lineSpan
}

func newFileParser(name, src string, lim Limits) *fileParser {
	return &fileParser{name: name, src: src, lim: lim, cols: columnCache{src: src, col: 1}}
}

// parse sniffs the format the way opm's YAMLOrJSONDecoder does and reads the file.
func (p *fileParser) parse() {
	if len(p.src) == 0 {
		return
	}
	if looksLikeJSON(p.src) {
		p.parseJSONStream()
		return
	}
	if strings.Contains(p.src, "\r\n") {
		// opm reads YAML line by line (bufio's ReadLine drops one "\r\n" or "\n" and a "\n" is put back)
		// before its YAML parser sees it, so one CR before each LF goes: "\r\r\n" is then a single line
		// break, where a YAML parser reading the file itself would see two. Lines and columns do not move.
		p.src = strings.ReplaceAll(p.src, "\r\n", "\n")
		p.cols = columnCache{src: p.src, col: 1}
	}
	p.parseYAMLStream()
}

// looksLikeJSON reports whether the first non-space rune of the first 4096
// bytes is '{' (a UTF-8 byte order mark is not a space, so it defeats the sniff).
func looksLikeJSON(src string) bool {
	head := src
	if len(head) > 4096 {
		head = head[:4096]
	}
	trimmed := bytes.TrimLeftFunc([]byte(head), unicode.IsSpace)
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// ruleHints maps each rule id of the decoder to its table entry (an immutable table).
var ruleHints = func() map[string]Rule {
	m := map[string]Rule{}
	for _, r := range Rules() {
		m[r.ID] = r
	}
	return m
}()

// addf records a finding. A zero line becomes 1 so every finding points into the file.
func (p *fileParser) addf(rule string, line, col int, hint, format string, args ...any) {
	r := ruleHints[rule]
	if hint == "" {
		hint = r.Hint
	}
	if line < 1 {
		line, col = 1, 0
	}
	p.findings = append(p.findings, Finding{
		Rule:     rule,
		Severity: r.Severity,
		Position: Position{File: p.name, Line: line, Column: col},
		Message:  fmt.Sprintf(format, args...),
		Hint:     hint,
	})
}

// addDoc checks what opm checks of every blob (an object, unique folded
// top-level keys, string schema/package/name, a schema) and records the document.
func (p *fileParser) addDoc(v Value) {
	if v.Kind != KindObject {
		p.addf(ruleLoadNotObject, int(v.Line), int(v.Col), "",
			"document is %s %s, not an object: opm refuses every document that is not a mapping", articleFor(v.Kind), v.String())
		return
	}
	d := Doc{Pos: Position{File: p.name, Line: int(v.Line), Column: int(v.Col)}, Value: v}
	if p.plain {
		p.docs = append(p.docs, d)
		return
	}
	p.checkFoldedKeys(&d.Value)
	fields := d.Value.Fields()
	for i := range fields {
		f := &fields[i]
		var dst *string
		switch {
		case foldEqual(f.Key, "schema"):
			dst = &d.Schema
		case foldEqual(f.Key, "package"):
			dst = &d.Package
		case foldEqual(f.Key, "name"):
			dst = &d.Name
		default:
			continue
		}
		if f.Value.Kind != KindString {
			p.addf(ruleLoadMetaNotString, int(f.Value.Line), int(f.Value.Col), "",
				"%q is %s %s, but opm requires a string", f.Key, articleFor(f.Value.Kind), f.Value.String())
			continue
		}
		*dst = f.Value.Str()
	}
	if d.Schema == "" {
		if sf := findFolded(&d.Value, "schema"); sf == nil || sf.Value.Kind == KindString {
			p.addf(ruleLoadMissingSchema, d.Pos.Line, d.Pos.Column, "",
				"object has no schema: opm refuses it (\"missing root schema field\")")
		}
	}
	p.docs = append(p.docs, d)
}

func findFolded(v *Value, key string) *Field {
	fields := v.Fields()
	for i := range fields {
		if foldEqual(fields[i].Key, key) {
			return &fields[i]
		}
	}
	return nil
}

// checkFoldedKeys reports top-level keys equal under case folding, which opm refuses.
func (p *fileParser) checkFoldedKeys(v *Value) {
	fields := v.Fields()
	if len(fields) < 2 {
		return
	}
	if len(fields) <= 16 {
		for i := 1; i < len(fields); i++ {
			for j := 0; j < i; j++ {
				if foldEqual(fields[i].Key, fields[j].Key) {
					p.reportFolded(&fields[j], &fields[i])
					break
				}
			}
		}
		return
	}
	seen := make(map[string]int, len(fields))
	for i := range fields {
		k := foldKey(fields[i].Key)
		if j, ok := seen[k]; ok {
			p.reportFolded(&fields[j], &fields[i])
			continue
		}
		seen[k] = i
	}
}

func (p *fileParser) reportFolded(first, second *Field) {
	p.addf(ruleLoadFoldedKey, int(second.KeyLine), int(second.KeyCol), "",
		"key %q differs only in letter case from %q at line %d: opm refuses objects with case-insensitively duplicate keys",
		second.Key, first.Key, first.KeyLine)
}

// foldEqual compares keys as opm's loader does: under full Unicode case
// folding (golang.org/x/text/cases.Fold), so "ss" and "ß" are one key, as
// are "schema" and "ſchema".
func foldEqual(a, b string) bool {
	if isASCII(a) && isASCII(b) {
		return strings.EqualFold(a, b) // exactly full folding on ASCII
	}
	return foldKey(a) == foldKey(b)
}

// foldKey is s under full Unicode case folding.
func foldKey(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	// A Caser keeps state: one per call (non-ASCII keys are rare).
	return cases.Fold().String(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func articleFor(k Kind) string {
	switch k {
	case KindArray:
		return "an array"
	case KindObject:
		return "an object"
	case KindNull:
		return "null:"
	}
	return "a " + k.String()
}

// formatNumber spells f as encoding/json does. opm decodes every blob into
// map[string]any and encodes it again, so every number of a catalog passes
// through float64: 1.0 becomes 1, 1e3 becomes 1000. ok is false for NaN and
// infinities, which JSON cannot hold.
func formatNumber(f float64) (s string, ok bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(make([]byte, 0, 24), f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b), true
}

// shortInteger reports whether lit is a decimal integer that float64 holds
// exactly and encoding/json spells the same way, so it can be kept as is.
func shortInteger(lit string) bool {
	s := lit
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 15 || (s[0] == '0' && (len(s) > 1 || len(lit) != len(s))) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// columnCache turns byte offsets into 1-based columns counted in characters,
// as goyaml counts them, in time linear in the file even for one long line.
type columnCache struct {
	src       string
	lineStart int // offset of the line of the last query
	off       int // offset of the last query
	col       int // its column
}

func (c *columnCache) column(lineStart, off int) int {
	if lineStart != c.lineStart || off < c.off {
		c.lineStart, c.off, c.col = lineStart, lineStart, 1
	}
	seg := c.src[c.off:off]
	n := len(seg)
	for i := 0; i < len(seg); i++ {
		if seg[i] >= utf8.RuneSelf {
			n = i + utf8.RuneCountInString(seg[i:])
			break
		}
	}
	c.col += n
	c.off = off
	return c.col
}

// setField adds f to the fields of an object, (*fields)[base:] (base is
// where the object starts on a stack its parser shares), or replaces the
// field of the same key (the last value wins, as in opm), reporting the
// duplicate when warn is set.
func (p *fileParser) setField(fields *[]Field, base int, keys *keyIndex, f Field, warn bool) {
	own := (*fields)[base:]
	if i := keys.find(own, f.Key); i >= 0 {
		if warn {
			p.warnDuplicate(f, own[i])
		}
		own[i] = f
		return
	}
	*fields = append(*fields, f)
	keys.add((*fields)[base:], f.Key)
}

func (p *fileParser) warnDuplicate(again, first Field) {
	p.addf(ruleLoadDuplicateKey, int(again.KeyLine), int(again.KeyCol), "", "key %q is given again (first at line %d); the last value wins", again.Key, first.KeyLine)
}

// valueSlabs hands out the Fields and Items slices of one file's values from
// a few large blocks instead of one allocation per object: far fewer
// allocations for the garbage collector to track, the same memory.
type valueSlabs struct {
	fieldBlock []Field
	itemBlock  []Value
}

const slabSize = 512

func (s *valueSlabs) fields(src []Field) []Field { return slabCopy(&s.fieldBlock, src) }

func (s *valueSlabs) items(src []Value) []Value { return slabCopy(&s.itemBlock, src) }

// slabCopy returns a copy of src in *block (a new block when it is full),
// with its own capacity: appending to it never writes into a neighbour.
// Large slices get their own allocation.
func slabCopy[T any](block *[]T, src []T) []T {
	n := len(src)
	if n == 0 {
		return nil
	}
	if n > slabSize/4 {
		return append([]T(nil), src...)
	}
	if len(*block)+n > cap(*block) {
		*block = make([]T, 0, slabSize)
	}
	start := len(*block)
	*block = append(*block, src...)
	return (*block)[start : start+n : start+n]
}
