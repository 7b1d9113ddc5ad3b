package decode

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonParser reads a stream of JSON values the way encoding/json's Decoder
// does (whitespace between values optional), building positioned Values.
// Strings without escapes are substrings of the source, never copied.
type jsonParser struct {
	p         *fileParser
	src       string
	pos       int
	line      int // current line, 1-based
	lineStart int // offset of the current line
	depth     int
	err       bool
	fields    []Field // stack of the fields of the objects being read
	items     []Value // stack of the items of the arrays being read
}

// parseJSONStream reads every top-level value of the file.
func (p *fileParser) parseJSONStream() {
	j := &jsonParser{p: p, src: p.src, line: 1}
	for {
		j.skipSpace()
		if j.pos >= len(j.src) {
			return
		}
		if len(p.docs) >= p.lim.MaxDocuments {
			line, col := j.here()
			p.addf(ruleLoadTooManyDocs, line, col, "", "file holds more than %d documents; the rest were not read", p.lim.MaxDocuments)
			return
		}
		v := j.value()
		if j.err {
			return
		}
		p.addDoc(v)
	}
}

func (j *jsonParser) here() (int, int) {
	return j.line, j.p.cols.column(j.lineStart, j.pos)
}

// fail reports a syntax error at the current position and stops the file.
func (j *jsonParser) fail(format string, args ...any) {
	if j.err {
		return
	}
	j.err = true
	line, col := j.here()
	j.p.addf(ruleLoadJSONSyntax, line, col, "", "invalid JSON: %s; the rest of the file was not read", fmt.Sprintf(format, args...))
}

func (j *jsonParser) skipSpace() {
	for j.pos < len(j.src) {
		switch j.src[j.pos] {
		case ' ', '\t', '\r':
			j.pos++
		case '\n':
			j.pos++
			j.line++
			j.lineStart = j.pos
		default:
			return
		}
	}
}

func describeByte(s string, i int) string {
	if i >= len(s) {
		return "end of file"
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return strconv.QuoteRune(r)
}

func (j *jsonParser) value() Value {
	j.skipSpace()
	if j.pos >= len(j.src) {
		j.fail("unexpected end of file")
		return Value{}
	}
	line, col := j.here()
	v := Value{Line: int32(line), Col: int32(col)}
	switch c := j.src[j.pos]; {
	case c == '{':
		j.object(&v)
	case c == '[':
		j.array(&v)
	case c == '"':
		v.Kind = KindString
		v.setStr(j.str())
	case c == '-' || ('0' <= c && c <= '9'):
		j.number(&v)
	case c == 't':
		j.literal("true")
		v.Kind = KindBool
		v.setStr("true")
	case c == 'f':
		j.literal("false")
		v.Kind = KindBool
		v.setStr("false")
	case c == 'n':
		j.literal("null")
		v.Kind = KindNull
	default:
		j.fail("unexpected %s looking for the beginning of a value", describeByte(j.src, j.pos))
	}
	return v
}

func (j *jsonParser) literal(word string) {
	if len(j.src)-j.pos >= len(word) && j.src[j.pos:j.pos+len(word)] == word {
		j.pos += len(word)
		return
	}
	j.fail("invalid literal, expected %q", word)
}

func (j *jsonParser) enter() bool {
	j.depth++
	if j.depth > j.p.lim.MaxDepth {
		if !j.err {
			j.err = true
			line, col := j.here()
			j.p.addf(ruleLoadTooDeep, line, col, "", "values nest deeper than %d levels; the rest of the file was not read", j.p.lim.MaxDepth)
		}
		return false
	}
	return true
}

func (j *jsonParser) object(v *Value) {
	v.Kind = KindObject
	j.pos++ // {
	if !j.enter() {
		return
	}
	// Fields gather on a stack shared by all objects of the file, then move
	// to a slice of exact size.
	base := len(j.fields)
	var keys keyIndex
	j.skipSpace()
	if j.pos < len(j.src) && j.src[j.pos] == '}' {
		j.pos++
		j.depth--
		return
	}
	for !j.err {
		j.skipSpace()
		if j.pos >= len(j.src) || j.src[j.pos] != '"' {
			j.fail("unexpected %s looking for the beginning of an object key string", describeByte(j.src, j.pos))
			break
		}
		kl, kc := j.here()
		key := j.str()
		j.skipSpace()
		if j.pos >= len(j.src) || j.src[j.pos] != ':' {
			j.fail("unexpected %s after object key", describeByte(j.src, j.pos))
			break
		}
		j.pos++
		val := j.value()
		if j.err {
			break
		}
		j.p.setField(&j.fields, base, &keys, Field{Key: key, KeyLine: int32(kl), KeyCol: int32(kc), Value: val}, true)
		j.skipSpace()
		if j.pos >= len(j.src) {
			j.fail("unexpected end of file in an object")
			break
		}
		if c := j.src[j.pos]; c == ',' {
			j.pos++
			continue
		} else if c == '}' {
			j.pos++
			break
		}
		j.fail("unexpected %s after object key:value pair", describeByte(j.src, j.pos))
	}
	v.setFields(j.p.slabs.fields(j.fields[base:]))
	clear(j.fields[base:])
	j.fields = j.fields[:base]
	j.depth--
}

func (j *jsonParser) array(v *Value) {
	v.Kind = KindArray
	j.pos++ // [
	if !j.enter() {
		return
	}
	base := len(j.items)
	j.skipSpace()
	if j.pos < len(j.src) && j.src[j.pos] == ']' {
		j.pos++
		j.depth--
		return
	}
	for !j.err {
		item := j.value()
		if j.err {
			break
		}
		j.items = append(j.items, item)
		j.skipSpace()
		if j.pos >= len(j.src) {
			j.fail("unexpected end of file in an array")
			break
		}
		if c := j.src[j.pos]; c == ',' {
			j.pos++
			continue
		} else if c == ']' {
			j.pos++
			break
		}
		j.fail("unexpected %s after array element", describeByte(j.src, j.pos))
	}
	v.setItems(j.p.slabs.items(j.items[base:]))
	clear(j.items[base:])
	j.items = j.items[:base]
	j.depth--
}

func (j *jsonParser) number(v *Value) {
	s, i := j.src, j.pos
	start := i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		j.pos = i
		j.fail("invalid number: expected a digit, found %s", describeByte(s, i))
		return
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			j.pos = i
			j.fail("invalid number: expected a digit after the decimal point, found %s", describeByte(s, i))
			return
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			j.pos = i
			j.fail("invalid number: expected a digit in the exponent, found %s", describeByte(s, i))
			return
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	lit := s[start:i]
	v.Kind = KindNumber
	if shortInteger(lit) {
		v.setStr(lit)
	} else {
		f, err := strconv.ParseFloat(lit, 64)
		str, ok := formatNumber(f)
		if err != nil || !ok {
			line, col := j.here()
			j.p.addf(ruleLoadNumberRange, line, col, "", "number %s is beyond float64, where opm decodes every number: opm fails on it (or, in a file's first two objects, re-reads the file as YAML, where it becomes a string)", lit)
			str = "0"
		}
		v.setStr(str)
	}
	j.pos = i
}

// str reads a string at j.pos (which holds '"') as encoding/json does: bad
// UTF-8 and lone surrogates become U+FFFD.
func (j *jsonParser) str() string {
	s := j.src
	i := j.pos + 1
	start := i
	for i < len(s) {
		c := s[i]
		if c == '"' {
			j.pos = i + 1
			return s[start:i]
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	// Slow path: escapes, control characters or non-ASCII.
	var b []byte
	b = append(b, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			j.pos = i + 1
			return string(b)
		case c < 0x20:
			j.pos = i
			j.fail("invalid character %s in string literal (control characters must be escaped)", describeByte(s, i))
			return ""
		case c == '\\':
			if i+1 >= len(s) {
				j.pos = i
				j.fail("unexpected end of file in a string escape")
				return ""
			}
			i++
			switch s[i] {
			case '"', '\\', '/', '\'':
				if s[i] == '\'' {
					j.pos = i
					j.fail("invalid escape \\' in string literal")
					return ""
				}
				b = append(b, s[i])
				i++
			case 'b':
				b = append(b, '\b')
				i++
			case 'f':
				b = append(b, '\f')
				i++
			case 'n':
				b = append(b, '\n')
				i++
			case 'r':
				b = append(b, '\r')
				i++
			case 't':
				b = append(b, '\t')
				i++
			case 'u':
				r, ok := hex4(s, i+1)
				if !ok {
					j.pos = i
					j.fail("invalid \\u escape in string literal")
					return ""
				}
				i += 5
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(-1), false
					if i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2, ok2 = hex4(s, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
						i += 6
						r = dec
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				j.pos = i
				j.fail("invalid escape %s in string literal", describeByte(s, i))
				return ""
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
		}
	}
	j.pos = i
	j.fail("unexpected end of file in a string literal")
	return ""
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// keyIndex finds duplicate keys of one object: a linear scan for small
// objects, a map once the object grows.
type keyIndex struct {
	m map[string]int
}

const keyIndexThreshold = 12

func (k *keyIndex) find(fields []Field, key string) int {
	if k.m != nil {
		if i, ok := k.m[key]; ok {
			return i
		}
		return -1
	}
	for i := range fields {
		if fields[i].Key == key {
			return i
		}
	}
	return -1
}

// add records the key just appended as the last field.
func (k *keyIndex) add(fields []Field, key string) {
	if k.m == nil {
		if len(fields) < keyIndexThreshold {
			return
		}
		k.m = make(map[string]int, 2*len(fields))
		for i := range fields {
			k.m[fields[i].Key] = i
		}
		return
	}
	k.m[key] = len(fields) - 1
}
