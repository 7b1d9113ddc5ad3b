// Package jsonout writes JSON output byte for byte as encoding/json does, without its reflection and without
// running its scanner over every byte twice (once to compact a json.RawMessage, once to indent the result). A
// rendered bundle is mostly long base64 strings, which encoding/json's indenting encoder steps through one
// byte at a time; here they are copied.
//
// The output is equal to encoding/json's for every input, valid or not (FuzzIndent, FuzzAppendString): an
// input encoding/json refuses is refused.
package jsonout

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// maxDepth is encoding/json's nesting limit, so that the same inputs are refused.
const maxDepth = 10000

// SyntaxError says where src is not JSON.
type SyntaxError struct {
	Offset int // byte offset in src
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Indent appends src, a JSON value, to dst as json.Indent(dst, src, "", indent) does: one element per line,
// each level indented once more by indent, "key": value, empty objects and arrays as {} and []; whitespace
// before the value is dropped, whitespace after it kept. On an error dst is returned as it was.
func Indent(dst, src []byte, indent string) ([]byte, error) {
	w := writer{dst: dst, src: src, indent: indent}
	w.skipSpace()
	if err := w.value(0); err != nil {
		return dst, err
	}
	rest := src[w.i:]
	for j, c := range rest {
		if !isSpace(c) {
			return dst, &SyntaxError{w.i + j, fmt.Sprintf("%q after the top-level value", c)}
		}
	}
	return append(w.dst, rest...), nil
}

// AppendNested appends src, a JSON value, as encoding/json's indenting encoder writes a json.RawMessage found
// depth levels deep: whitespace around the value dropped, lines after the first indented depth+1 times and
// the closing bracket depth times. A nil src is null, as encoding/json writes a nil json.RawMessage.
func AppendNested(dst, src []byte, indent string, depth int) ([]byte, error) {
	if src == nil {
		return append(dst, "null"...), nil
	}
	w := writer{dst: dst, src: src, indent: indent}
	w.skipSpace()
	if err := w.value(depth); err != nil {
		return dst, err
	}
	w.skipSpace()
	if w.i < len(src) {
		return dst, &SyntaxError{w.i, fmt.Sprintf("%q after the top-level value", src[w.i])}
	}
	return w.dst, nil
}

type writer struct {
	dst    []byte
	src    []byte
	i      int
	indent string
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (w *writer) skipSpace() {
	for w.i < len(w.src) && isSpace(w.src[w.i]) {
		w.i++
	}
}

func (w *writer) newline(depth int) {
	w.dst = append(w.dst, '\n')
	for range depth {
		w.dst = append(w.dst, w.indent...)
	}
}

func (w *writer) fail(msg string) error {
	if w.i >= len(w.src) {
		return &SyntaxError{w.i, "unexpected end of JSON input"}
	}
	return &SyntaxError{w.i, msg}
}

// value writes the value at w.i, found depth levels deep.
func (w *writer) value(depth int) error {
	if w.i >= len(w.src) {
		return w.fail("")
	}
	switch c := w.src[w.i]; {
	case c == '{' || c == '[':
		return w.container(depth)
	case c == '"':
		return w.str()
	case c == '-' || '0' <= c && c <= '9':
		return w.number()
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		return w.literal("null")
	default:
		return w.fail(fmt.Sprintf("%q looking for the beginning of a value", c))
	}
}

func (w *writer) container(depth int) error {
	if depth+1 > maxDepth {
		return w.fail("exceeded max depth")
	}
	open := w.src[w.i]
	end := byte(']')
	if open == '{' {
		end = '}'
	}
	w.dst = append(w.dst, open)
	w.i++
	w.skipSpace()
	if w.i < len(w.src) && w.src[w.i] == end {
		w.dst = append(w.dst, end)
		w.i++
		return nil
	}
	for {
		w.newline(depth + 1)
		if open == '{' {
			if w.i >= len(w.src) || w.src[w.i] != '"' {
				return w.fail("looking for the beginning of an object key string")
			}
			if err := w.str(); err != nil {
				return err
			}
			w.skipSpace()
			if w.i >= len(w.src) || w.src[w.i] != ':' {
				return w.fail("after object key")
			}
			w.i++
			w.dst = append(w.dst, ':', ' ')
			w.skipSpace()
		}
		if err := w.value(depth + 1); err != nil {
			return err
		}
		w.skipSpace()
		if w.i >= len(w.src) {
			return w.fail("")
		}
		switch w.src[w.i] {
		case ',':
			w.dst = append(w.dst, ',')
			w.i++
			w.skipSpace()
		case end:
			w.i++
			w.newline(depth)
			w.dst = append(w.dst, end)
			return nil
		default:
			return w.fail(fmt.Sprintf("%q after an element", w.src[w.i]))
		}
	}
}

// str copies a string as it is (escapes and all), checking its escapes and that it holds no control
// character.
func (w *writer) str() error {
	start := w.i
	i := w.i + 1
	for {
		// The long base64 strings of rendered bundles go by here: no byte needs more than this test.
		for i < len(w.src) && w.src[i] >= 0x20 && w.src[i] != '"' && w.src[i] != '\\' {
			i++
		}
		if i >= len(w.src) {
			w.i = i
			return w.fail("")
		}
		switch c := w.src[i]; {
		case c == '"':
			i++
			w.dst = append(w.dst, w.src[start:i]...)
			w.i = i
			return nil
		case c < 0x20:
			w.i = i
			return w.fail("control character in string literal")
		}
		// A backslash.
		i++
		if i >= len(w.src) {
			w.i = i
			return w.fail("")
		}
		switch w.src[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			for k := 1; k <= 4; k++ {
				if i+k >= len(w.src) {
					w.i = len(w.src)
					return w.fail("")
				}
				if !isHex(w.src[i+k]) {
					w.i = i + k
					return w.fail("in \\u hexadecimal character escape")
				}
			}
			i += 5
		default:
			w.i = i
			return w.fail("in string escape code")
		}
	}
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number copies a number, checking JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (w *writer) number() error {
	s, i := w.src, w.i
	digits := func() bool {
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return true
	}
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		w.i = i
		return w.fail("in numeric literal")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			w.i = i
			return w.fail("after decimal point in numeric literal")
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			w.i = i
			return w.fail("in exponent of numeric literal")
		}
	}
	w.dst = append(w.dst, s[w.i:i]...)
	w.i = i
	return nil
}

func (w *writer) literal(lit string) error {
	for k := 0; k < len(lit); k++ {
		if w.i+k >= len(w.src) {
			w.i += k
			return w.fail("")
		}
		if w.src[w.i+k] != lit[k] {
			w.i += k
			return w.fail(fmt.Sprintf("in literal %s (expecting %q)", lit, lit[k]))
		}
	}
	w.dst = append(w.dst, lit...)
	w.i += len(lit)
	return nil
}

// AppendString appends s as a JSON string, as encoding/json writes a string with HTML escaping off
// (Encoder.SetEscapeHTML(false)).
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return appendStringSlow(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendStringSlow leaves the strings that need escapes (or may: control characters, invalid UTF-8,
// U+2028 and U+2029) to encoding/json itself.
func appendStringSlow(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes: writing to a bytes.Buffer does not fail
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
