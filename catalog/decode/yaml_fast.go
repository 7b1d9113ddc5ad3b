package decode

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// yamlFast parses the block-style YAML that real catalogs are made of —
// block mappings and sequences, plain, quoted and literal scalars, empty flow
// collections — straight into a Value, with the positions goyaml.v3 gives.
// ok is false as soon as the chunk holds anything outside that subset or
// anything invalid; the caller then uses yamlFull, which reports errors and
// must give the same Value (FuzzParseFile and
// TestYAMLFastMatchesFullOnRealCatalogs check it). Scalars that fit on one
// line are substrings of the file, never copied.
func (p *fileParser) yamlFast(c yamlChunk) (Value, bool) {
	end := c.off + len(c.text)
	if !fastYAMLChars(c.text) {
		return Value{}, false
	}
	f := fastYAML{p: p, src: p.src, end: end, line: c.line, fields: p.fieldStack[:0], items: p.itemStack[:0], lines: p.lineStack[:0], indLs: -1}
	f.setLine(c.off)
	v := f.document()
	// Every collection cleared its part of the stacks on the way out.
	p.fieldStack, p.itemStack, p.lineStack = f.fields[:0], f.items[:0], f.lines[:0]
	if f.bail {
		return Value{}, false
	}
	return v, true
}

// fastYAMLChars reports whether text holds only what the fast path handles:
// printable ASCII, tabs, newlines and valid UTF-8 that YAML allows and reads
// as no line break; and no document end marker.
func fastYAMLChars(text string) bool {
	covered := 0 // end of the last multi-byte rune checked
	// checkByte judges the byte at i: printable ASCII, tab and newline pass,
	// other ASCII fails, and a rune starting at i must be one YAML allows
	// and does not read as a line break.
	checkByte := func(i int) bool {
		c := text[i]
		if c >= 0x20 && c < 0x7F || c == '\n' || c == '\t' {
			return true
		}
		if c < 0x80 {
			return false // control character or CR: let the full parser decide
		}
		if i < covered {
			return true
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		covered = i + size
		switch {
		case r == utf8.RuneError, r < 0xA0, r == 0x2028, r == 0x2029, r == 0xFEFF, r == 0xFFFE, r == 0xFFFF:
			return false
		}
		return true
	}
	i := 0
	// Eight bytes at a time: a word of printable ASCII, tabs and newlines
	// passes at once; any other word is looked at byte by byte. The byte
	// tests are exact (no carry crosses bytes). Before that, two words at a
	// time, a cheaper test passes words of printable ASCII alone (no tab or
	// newline): it is exact in saying whether any byte is outside 0x20–0x7E.
	const ones, low7, highs = 0x0101010101010101, 0x7F7F7F7F7F7F7F7F, 0x8080808080808080
	isZero := func(x uint64) uint64 { return ^(((x & low7) + low7) | x) & highs }
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(text[i:]), 8)) }
	notPrintable := func(w uint64) uint64 { return (w-ones*0x20)&^w&highs | ((w+ones)|w)&highs }
	wordPasses := func(k int) bool {
		w := word(k)
		below := ^(((w & low7) + ones*(0x80-0x20)) | w) & highs // bytes < 0x20
		bad := w&highs | below&^isZero(w^(ones*'\n'))&^isZero(w^(ones*'\t')) | isZero(w^(ones*0x7F))
		if bad == 0 {
			return true
		}
		for j := k; j < k+8; j++ {
			if !checkByte(j) {
				return false
			}
		}
		return true
	}
	for ; i+16 <= len(text); i += 16 {
		if notPrintable(word(i))|notPrintable(word(i+8)) == 0 {
			continue
		}
		if !wordPasses(i) || !wordPasses(i+8) {
			return false
		}
	}
	for ; i+8 <= len(text); i += 8 {
		if !wordPasses(i) {
			return false
		}
	}
	for ; i < len(text); i++ {
		if !checkByte(i) {
			return false
		}
	}
	return !strings.HasPrefix(text, "...") && !strings.Contains(text, "\n...")
}

// fastYAML is the cursor of the fast parser: the current line of the chunk.
type fastYAML struct {
	p     *fileParser
	src   string // the whole file
	end   int    // end of the chunk in src
	ls    int    // start of the current line
	le    int    // end of the current line (its '\n' or end)
	line  int    // file line number of the current line
	depth int
	bail  bool
	// Stacks of the fields and items of the collections being parsed, and
	// the lines of the block scalar being read.
	fields []Field
	items  []Value
	lines  []lineSpan
	// The last key read, as keyAt is asked twice about the first key of a mapping.
	keyOff, keyAfter int
	key              string
	// The indentation of the line starting at indLs.
	indLs, ind int
}

func (f *fastYAML) setLine(start int) {
	f.ls = start
	if start >= f.end {
		f.le = f.end
		return
	}
	if i := strings.IndexByte(f.src[start:f.end], '\n'); i >= 0 {
		f.le = start + i
	} else {
		f.le = f.end
	}
}

func (f *fastYAML) eof() bool { return f.ls >= f.end }

func (f *fastYAML) advance() {
	f.line++
	f.setLine(f.le + 1)
}

// indent counts the leading spaces of the current line, once a line (the
// parser asks several times). A tab right after them makes the line one the
// fast path does not handle.
func (f *fastYAML) indent() int {
	if f.ls == f.indLs {
		return f.ind
	}
	s := f.src
	i := f.ls
	// Eight bytes at a time while they are all spaces (manifests are
	// indented deeply), then the first byte that is not.
	const spaces = 0x2020202020202020
	for i+8 <= f.le {
		if x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8)) ^ spaces; x != 0 {
			i += bits.TrailingZeros64(x) / 8
			break
		}
		i += 8
	}
	for i < f.le && s[i] == ' ' {
		i++
	}
	if i < f.le && s[i] == '\t' {
		f.bail = true
	}
	f.indLs, f.ind = f.ls, i-f.ls
	return f.ind
}

// skipBlank moves to the next line holding content (not blank, not a comment).
func (f *fastYAML) skipBlank() {
	for !f.eof() && !f.bail {
		i := f.ls + f.indent()
		if i < f.le && f.src[i] != '#' {
			return
		}
		f.advance()
	}
}

func (f *fastYAML) pos(off int) (int32, int32) {
	return int32(f.line), int32(f.p.cols.column(f.ls, off))
}

// document parses the chunk: an optional "---" line, then one block mapping.
func (f *fastYAML) document() Value {
	f.skipBlank()
	if ln := f.src[f.ls:f.le]; !f.eof() && strings.HasPrefix(ln, "---") {
		// A document start for YAML only when a blank follows ("---#c" cuts
		// for opm's reader but is text to the YAML parser).
		if len(ln) > 3 && !isBlank(ln[3]) {
			f.bail = true
			return Value{}
		}
		f.advance()
		f.skipBlank()
	}
	if f.eof() || f.bail {
		f.bail = true
		return Value{}
	}
	ind := f.indent()
	if ind == 0 && f.src[f.ls] == '%' {
		f.bail = true
		return Value{}
	}
	off := f.ls + ind
	if _, _, ok := f.keyAt(off); !ok {
		f.bail = true
		return Value{}
	}
	v := f.mapping(ind, off)
	f.skipBlank()
	if !f.eof() {
		f.bail = true
	}
	return v
}

// isBlank reports a space or a tab.
func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// keyAt reads a mapping key starting at off on the current line: a plain
// key up to ": " (or ':' at the end of the line), or a quoted key directly
// followed by ':'. It returns the key, the offset after the ':' and ok.
// Anything else — including keys the fast path does not handle — is !ok.
func (f *fastYAML) keyAt(off int) (key string, after int, ok bool) {
	if off == f.keyOff && f.keyAfter > 0 {
		return f.key, f.keyAfter, true
	}
	key, after, ok = f.readKey(off)
	if ok {
		f.keyOff, f.keyAfter, f.key = off, after, key
	}
	return key, after, ok
}

func (f *fastYAML) readKey(off int) (key string, after int, ok bool) {
	s := f.src
	if off >= f.le {
		return "", 0, false
	}
	switch c := s[off]; c {
	case '\'', '"':
		return f.quotedKey(off)
	case '-', '?', ':':
		if off+1 >= f.le || isBlank(s[off+1]) {
			return "", 0, false
		}
		if c != '-' {
			return "", 0, false
		}
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return "", 0, false
	}
	i := off
	for i < f.le {
		c := s[i]
		if c == ':' && (i+1 == f.le || s[i+1] == ' ') {
			break
		}
		if c == ':' && s[i+1] == '\t' {
			return "", 0, false
		}
		if c == '#' && isBlank(s[i-1]) {
			return "", 0, false
		}
		i++
	}
	if i >= f.le || i-off > 1000 || isBlank(s[i-1]) {
		return "", 0, false
	}
	raw := s[off:i]
	if raw == "<<" {
		return "", 0, false
	}
	key, problem := yamlKeyString(raw)
	if problem != "" {
		return "", 0, false
	}
	return key, i + 1, true
}

// quotedKey reads a single-line quoted key followed by ':'.
func (f *fastYAML) quotedKey(off int) (string, int, bool) {
	str, next, ok := f.quotedLine(off)
	if !ok || next >= f.le || f.src[next] != ':' || (next+1 < f.le && f.src[next+1] != ' ') || next-off > 1000 {
		// Long keys go to the full parser, which applies goyaml.v2's bound on simple keys.
		return "", 0, false
	}
	return str, next + 1, true
}

// node parses the value that starts on the current line, which is indented
// more than parent.
func (f *fastYAML) node(parent int) Value {
	ind := f.indent()
	off := f.ls + ind
	s := f.src
	if s[off] == '-' && (off+1 == f.le || s[off+1] == ' ') {
		return f.sequence(ind)
	}
	if _, _, ok := f.keyAt(off); ok {
		return f.mapping(ind, off)
	}
	return f.scalarAfter(off, parent)
}

func (f *fastYAML) enter() bool {
	f.depth++
	if f.depth > f.p.lim.MaxDepth {
		f.bail = true // the full parser reports it
		return false
	}
	return true
}

// mapping parses a block mapping whose keys are at column m; the first key
// starts at off on the current line (which may follow a "- ").
func (f *fastYAML) mapping(m, off int) Value {
	line, col := f.pos(off)
	v := Value{Kind: KindObject, Line: line, Col: col}
	if !f.enter() {
		return v
	}
	// Fields gather on a stack shared by all mappings of the document and
	// are copied out at the end, so each object gets a slice of exact size.
	base := len(f.fields)
	var keys keyIndex
	for !f.bail {
		key, after, ok := f.keyAt(off)
		if !ok {
			f.bail = true
			break
		}
		kl, kc := f.pos(off)
		val := f.valueAfter(after, m, true)
		if f.bail {
			break
		}
		f.p.setField(&f.fields, base, &keys, Field{Key: key, KeyLine: kl, KeyCol: kc, Value: val}, true)
		f.skipBlank()
		if f.eof() || f.bail {
			break
		}
		ind := f.indent()
		if ind < m {
			break
		}
		if ind > m {
			f.bail = true
			break
		}
		off = f.ls + ind
	}
	v.setFields(f.p.slabs.fields(f.fields[base:]))
	clear(f.fields[base:])
	f.fields = f.fields[:base]
	f.depth--
	return v
}

// sequence parses a block sequence whose dashes are at column s.
func (f *fastYAML) sequence(s int) Value {
	line, col := f.pos(f.ls + s)
	v := Value{Kind: KindArray, Line: line, Col: col}
	if !f.enter() {
		return v
	}
	base := len(f.items)
	src := f.src
	for !f.bail {
		off := f.ls + s + 1
		for off < f.le && src[off] == ' ' {
			off++
		}
		if off < f.le && src[off] == '\t' {
			f.bail = true
			break
		}
		var item Value
		switch {
		case off == f.le || src[off] == '#':
			item = f.valueAfter(off, s, false)
		case src[off] == '-' && (off+1 == f.le || src[off+1] == ' '):
			f.bail = true // "- - x": a compact nested sequence
		default:
			if _, _, ok := f.keyAt(off); ok {
				item = f.mapping(off-f.ls, off)
			} else {
				item = f.scalarAfter(off, s)
			}
		}
		if f.bail {
			break
		}
		f.items = append(f.items, item)
		f.skipBlank()
		if f.eof() || f.bail {
			break
		}
		ind := f.indent()
		if ind < s {
			break
		}
		if ind > s {
			f.bail = true
			break
		}
		if o := f.ls + s; src[o] != '-' || (o+1 < f.le && src[o+1] != ' ') {
			break // the parent mapping goes on (indentless sequence)
		}
	}
	v.setItems(f.p.slabs.items(f.items[base:]))
	clear(f.items[base:])
	f.items = f.items[:base]
	f.depth--
	return v
}

// valueAfter parses the value that follows "key:" or "- " at off (spaces
// skipped) in a collection at column parent. mapValue allows a sequence at
// the key's own column on the next line.
func (f *fastYAML) valueAfter(off, parent int, mapValue bool) Value {
	s := f.src
	for off < f.le && s[off] == ' ' {
		off++
	}
	if off < f.le && s[off] == '\t' {
		f.bail = true
		return Value{}
	}
	if off < f.le && s[off] != '#' {
		return f.scalarAfter(off, parent)
	}
	if off < f.le && !isBlank(s[off-1]) {
		f.bail = true
		return Value{}
	}
	// The value starts on a later line.
	f.advance()
	f.skipBlank()
	if f.eof() || f.bail {
		f.bail = true // an empty value: null, left to the full parser
		return Value{}
	}
	ind := f.indent()
	if ind > parent {
		return f.node(parent)
	}
	if mapValue && ind == parent {
		if o := f.ls + ind; s[o] == '-' && (o+1 == f.le || s[o+1] == ' ') {
			return f.sequence(ind)
		}
	}
	f.bail = true
	return Value{}
}

// scalarAfter parses a scalar (or an empty flow collection) starting at off.
func (f *fastYAML) scalarAfter(off, parent int) Value {
	s := f.src
	line, col := f.pos(off)
	var v Value
	switch s[off] {
	case '|', '>':
		v = f.literal(off, parent)
	case '\'', '"':
		v = f.quoted(off, parent)
	case '[', '{':
		close := byte(']')
		kind := KindArray
		if s[off] == '{' {
			close, kind = '}', KindObject
		}
		if off+1 >= f.le || s[off+1] != close || !f.restIsComment(off+2) {
			f.bail = true
			return Value{}
		}
		if !f.enter() {
			return Value{}
		}
		f.depth--
		v = Value{Kind: kind}
		f.advance()
	case '&', '*', '!', '%', '@', '`', '?', ':', ',', ']', '}', '#':
		f.bail = true
		return Value{}
	case '-':
		if off+1 == f.le || isBlank(s[off+1]) {
			f.bail = true
			return Value{}
		}
		v = f.plain(off, parent)
	default:
		v = f.plain(off, parent)
	}
	v.Line, v.Col = line, col
	return v
}

// restIsComment reports whether the current line holds only blanks and an
// optional comment from i on.
func (f *fastYAML) restIsComment(i int) bool {
	s := f.src
	start := i
	for i < f.le && isBlank(s[i]) {
		i++
	}
	return i == f.le || (s[i] == '#' && i > start)
}

// plain parses a plain scalar starting at off, folding continuation lines
// (indented more than parent) as YAML does, and resolves it as YAML 1.1.
func (f *fastYAML) plain(off, parent int) Value {
	s := f.src
	end, ok := f.plainLineEnd(off)
	if !ok {
		f.bail = true
		return Value{}
	}
	text := s[off:end]
	commented := end < f.le
	f.advance()
	if !commented {
		// Continuation lines, if any.
		var b []byte
		breaks := 0
		for !f.eof() {
			ind := f.indent()
			if f.bail {
				return Value{}
			}
			o := f.ls + ind
			if o == f.le { // an empty line
				breaks++
				f.advance()
				continue
			}
			if ind <= parent || s[o] == '#' {
				break
			}
			e, ok := f.plainLineEnd(o)
			if !ok || e < f.le {
				f.bail = true
				return Value{}
			}
			if b == nil {
				b = append(make([]byte, 0, len(text)+e-o+16), text...)
			}
			if breaks == 0 {
				b = append(b, ' ')
			}
			for ; breaks > 0; breaks-- {
				b = append(b, '\n')
			}
			b = append(b, s[o:e]...)
			f.advance()
		}
		if b != nil {
			text = string(b)
		}
	}
	v, rule, _ := resolvePlainScalar(text)
	if rule != "" {
		f.bail = true
	}
	return v
}

// plainLineEnd finds where a plain scalar's text ends on the current line
// (before trailing blanks and a comment). ok is false when the line holds
// ": " or ends with ':' (a mapping where a scalar is expected).
func (f *fastYAML) plainLineEnd(off int) (int, bool) {
	s := f.src
	line := s[off:f.le]
	e := len(line)
	// A comment starts at " #"; look for '#' first, with a fast scan.
	for from := 1; from < len(line); {
		k := strings.IndexByte(line[from:], '#')
		if k < 0 {
			break
		}
		from += k
		if isBlank(line[from-1]) {
			e = from
			break
		}
		from++
	}
	// ": " or a final ':' makes the line a mapping entry, not a scalar.
	for from := 0; from < e; {
		k := strings.IndexByte(line[from:e], ':')
		if k < 0 {
			break
		}
		from += k
		if from+1 == len(line) || isBlank(line[from+1]) {
			return 0, false
		}
		from++
	}
	for e > 0 && isBlank(line[e-1]) {
		e--
	}
	return off + e, true
}

// quotedLine reads a quoted scalar that closes on the current line. next is
// the offset after the closing quote.
func (f *fastYAML) quotedLine(off int) (str string, next int, ok bool) {
	s := f.src
	q := s[off]
	i := off + 1
	for i < f.le {
		c := s[i]
		if c == q {
			if q == '\'' && i+1 < f.le && s[i+1] == '\'' {
				break // an escaped quote: the slow loop handles it
			}
			return s[off+1 : i], i + 1, true
		}
		if c == '\\' && q == '"' {
			break
		}
		i++
	}
	if i >= f.le {
		return "", 0, false
	}
	var b []byte
	b = append(b, s[off+1:i]...)
	for i < f.le {
		c := s[i]
		switch {
		case c == q && q == '\'':
			if i+1 < f.le && s[i+1] == '\'' {
				b = append(b, '\'')
				i += 2
				continue
			}
			return string(b), i + 1, true
		case c == q:
			return string(b), i + 1, true
		case c == '\\' && q == '"':
			var ok bool
			b, i, ok = f.escape(b, i)
			if !ok {
				return "", 0, false
			}
		default:
			b = append(b, c)
			i++
		}
	}
	return "", 0, false
}

// escape decodes the double-quoted escape at s[i] ('\\').
func (f *fastYAML) escape(b []byte, i int) ([]byte, int, bool) {
	s := f.src
	if i+1 >= f.le {
		return nil, 0, false // an escaped line break
	}
	c := s[i+1]
	var r byte
	switch c {
	case '0':
		r = 0
	case 'a':
		r = '\a'
	case 'b':
		r = '\b'
	case 't', '\t':
		r = '\t'
	case 'n':
		r = '\n'
	case 'v':
		r = '\v'
	case 'f':
		r = '\f'
	case 'r':
		r = '\r'
	case 'e':
		r = 0x1b
	case ' ', '"', '\\': // no \/: goyaml refuses it
		r = c
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if i+2+n > f.le {
			return nil, 0, false
		}
		var cp rune
		for _, h := range []byte(s[i+2 : i+2+n]) {
			switch {
			case '0' <= h && h <= '9':
				h -= '0'
			case 'a' <= h && h <= 'f':
				h = h - 'a' + 10
			case 'A' <= h && h <= 'F':
				h = h - 'A' + 10
			default:
				return nil, 0, false
			}
			cp = cp<<4 | rune(h)
		}
		if (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF {
			return nil, 0, false
		}
		return utf8.AppendRune(b, cp), i + 2 + n, true
	default:
		return nil, 0, false // \N, \_, \L, \P and invalid escapes
	}
	return append(b, r), i + 2, true
}

// quoted parses a single- or double-quoted scalar starting at off, over
// several lines if need be (folded as YAML does), and moves past it.
func (f *fastYAML) quoted(off, parent int) Value {
	if str, next, ok := f.quotedLine(off); ok {
		if !f.restIsComment(next) {
			f.bail = true
			return Value{}
		}
		f.advance()
		return scalarValue(KindString, str)
	}
	// A quoted scalar over several lines.
	s := f.src
	q := s[off]
	var b []byte
	i := off + 1
	for {
		// The text of this line up to a quote or the end of the line.
		start := len(b)
		closed, escapedBreak := false, false
		for i < f.le {
			c := s[i]
			if c == q {
				if q == '\'' && i+1 < f.le && s[i+1] == '\'' {
					b = append(b, '\'')
					i += 2
					continue
				}
				closed = true
				break
			}
			if c == '\\' && q == '"' {
				if i+1 == f.le { // an escaped line break: the line goes on the next one, blanks before it kept
					escapedBreak = true
					break
				}
				var ok bool
				b, i, ok = f.escape(b, i)
				if !ok {
					f.bail = true
					return Value{}
				}
				start = len(b) // escaped characters are not trimmed
				continue
			}
			b = append(b, c)
			i++
		}
		if closed {
			if !f.restIsComment(i + 1) {
				f.bail = true
				return Value{}
			}
			f.advance()
			return scalarValue(KindString, string(b))
		}
		// Trailing blanks of the line are dropped, but not before an escaped line break.
		for !escapedBreak && len(b) > start && isBlank(b[len(b)-1]) {
			b = b[:len(b)-1]
		}
		// Following lines: empty ones become line breaks, then one line break
		// becomes a space.
		breaks := 0
		for {
			f.advance()
			if f.eof() {
				f.bail = true
				return Value{}
			}
			j := f.ls
			for j < f.le && s[j] == ' ' {
				j++
			}
			if j < f.le && s[j] == '\t' {
				f.bail = true // tabs around indentation: leave them to the full parser
				return Value{}
			}
			if j < f.le {
				// A quoted scalar's lines need no indentation (a document marker cannot start one: the
				// chunk ends before "---", and "..." keeps the chunk off the fast path).
				i = j
				break
			}
			breaks++
		}
		if breaks == 0 && !escapedBreak {
			b = append(b, ' ')
		}
		for ; breaks > 0; breaks-- {
			b = append(b, '\n')
		}
	}
}

// literal parses a literal block scalar ("|", "|-", "|+") or a folded one
// (">", ">-", ">+") whose indicator is at off, with content indented more
// than parent.
func (f *fastYAML) literal(off, parent int) Value {
	s := f.src
	folded := s[off] == '>'
	i := off + 1
	chomp, increment := byte(0), 0
	for k := 0; k < 2 && i < f.le; k++ {
		switch c := s[i]; {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
			i++
		case '1' <= c && c <= '9' && increment == 0:
			increment = int(c - '0')
			i++
		}
	}
	if !f.restIsComment(i) {
		f.bail = true
		return Value{}
	}
	f.advance()
	lines := f.lines[:0]
	defer func() { f.lines = lines[:0] }() // keep the grown buffer for the next one
	maxLead := 0
	contentIndent := -1
	if increment > 0 {
		// An indentation indicator counts from the enclosing collection's column.
		contentIndent = parent + increment
	}
	// Without an indicator, leading empty lines are skipped and the first
	// content line sets the indentation.
	for contentIndent < 0 && !f.eof() {
		j := f.ls
		for j < f.le && s[j] == ' ' {
			j++
		}
		if j < f.le {
			if s[j] == '\t' {
				f.bail = true
				return Value{}
			}
			contentIndent = j - f.ls
			break
		}
		maxLead = max(maxLead, j-f.ls)
		lines = append(lines, lineSpan{})
		f.advance()
	}
	if contentIndent <= parent || (increment == 0 && maxLead > contentIndent) {
		f.bail = true // empty scalar or odd leading lines
		return Value{}
	}
	for !f.eof() {
		j := f.ls
		for j < f.le && j-f.ls < contentIndent && s[j] == ' ' {
			j++
		}
		if j-f.ls == contentIndent {
			lines = append(lines, lineSpan{j, f.le})
		} else if j == f.le {
			lines = append(lines, lineSpan{}) // an empty line, less indented
		} else {
			if s[j] == '\t' {
				f.bail = true
				return Value{}
			}
			break
		}
		f.advance()
	}
	// Trailing empty lines are kept only with "+".
	last := len(lines) - 1
	if !hasContent(lines) {
		f.bail = true // an empty scalar
		return Value{}
	}
	for last >= 0 && lines[last].a == lines[last].b {
		last--
	}
	trailing := len(lines) - 1 - last
	body := lines[:last+1]
	if len(body) == 1 && chomp == 0 && body[0].b < f.end && trailing == 0 {
		// One line with its line break: a substring of the file.
		return scalarValue(KindString, s[body[0].a:body[0].b+1])
	}
	if folded {
		return scalarValue(KindString, f.fold(body, chomp, trailing))
	}
	n := 0
	for _, l := range body {
		n += l.b - l.a + 1
	}
	// Built in place at its final size (a Builder hands its bytes over
	// without the copy string(b) would make).
	var b strings.Builder
	b.Grow(n + trailing)
	for k, l := range body {
		if k > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s[l.a:l.b])
	}
	endChomped(&b, chomp, trailing)
	return scalarValue(KindString, b.String())
}

// endChomped ends a block scalar's text as its chomping indicator says: clip (none) keeps one final line
// break, keep ('+') keeps it and the trailing empty lines, strip ('-') keeps none.
func endChomped(b *strings.Builder, chomp byte, trailing int) {
	switch chomp {
	case 0:
		b.WriteByte('\n')
	case '+':
		b.WriteByte('\n')
		for ; trailing > 0; trailing-- {
			b.WriteByte('\n')
		}
	}
}

// fold joins the lines of a folded block scalar as YAML does: a line break
// between two lines that both start with text becomes a space, or goes when
// empty lines follow it (each of them is a line break); a line break next to
// a more indented line (one starting with a blank) is kept. The end is
// chomped as a literal scalar's.
func (f *fastYAML) fold(body []lineSpan, chomp byte, trailing int) string {
	s := f.src
	n := 0
	for _, l := range body {
		n += l.b - l.a + 1
	}
	var b strings.Builder
	b.Grow(n + trailing)
	started, prevBlank, empty := false, false, 0
	for _, l := range body {
		if l.a == l.b {
			empty++
			continue
		}
		blank := isBlank(s[l.a])
		switch {
		case !started:
		case !prevBlank && !blank:
			if empty == 0 {
				b.WriteByte(' ')
			}
		default:
			b.WriteByte('\n')
		}
		for ; empty > 0; empty-- {
			b.WriteByte('\n')
		}
		b.WriteString(s[l.a:l.b])
		started, prevBlank = true, blank
	}
	endChomped(&b, chomp, trailing)
	return b.String()
}

// lineSpan is the text of one line of a block scalar, after its indentation.
type lineSpan struct{ a, b int }

func hasContent(lines []lineSpan) bool {
	for _, l := range lines {
		if l.a != l.b {
			return true
		}
	}
	return false
}
