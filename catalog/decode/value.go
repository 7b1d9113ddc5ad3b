package decode

import (
	"math"
	"unsafe"
)

// Kind is the JSON kind of a Value.
type Kind uint8

const (
	KindNull Kind = iota
	KindBool
	KindNumber
	KindString
	KindObject
	KindArray
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "boolean"
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindObject:
		return "object"
	case KindArray:
		return "array"
	}
	return "unknown"
}

// Value is one parsed JSON or YAML value together with where it starts in its
// file. It is what the loader produces and what the typed model and the
// validator read, so that every finding can point at the exact line of the
// field it is about. YAML is resolved as YAML 1.1 (as opm reads it), so a
// Value always has a JSON equivalent.
//
// A catalog holds hundreds of thousands of values, so a Value is kept to 24
// bytes: one pointer serves as the text of a scalar, the fields of an object
// or the items of an array (read them with Str, Fields and Items), with one
// length. Values are built only by the loader; the children and text of a
// Value must not be modified.
type Value struct {
	ptr unsafe.Pointer // text bytes, first Field or first Value; see holds
	n   uint32         // length of the text, or number of fields or items
	// Line and Col are where the value starts, counting from 1.
	Line, Col int32
	Kind      Kind
	holds     valueHolds
}

// valueHolds says what a Value's pointer points at. It is kept apart from
// Kind so that no change of Kind can make the pointer be read as another type.
type valueHolds uint8

const (
	holdsNothing valueHolds = iota
	holdsText
	holdsFields
	holdsItems
)

// maxValueLen bounds a value's text and children. Files are refused above it
// (see Limits.MaxFileSize), so no value comes near.
const maxValueLen = math.MaxInt32

// Str is the text of a string, the literal of a number as JSON would spell
// it, and "true"/"false" for a boolean; "" for null, objects and arrays.
// Numbers are spelled as encoding/json spells their float64 value, because
// opm decodes every blob into map[string]any before its typed decoding: 1.0
// is "1", 1e3 is "1000", and an integer beyond 2^53 loses its last digits as
// in opm.
func (v *Value) Str() string {
	if v == nil || v.holds != holdsText {
		return ""
	}
	return unsafe.String((*byte)(v.ptr), int(v.n))
}

// Fields returns the fields of an object in document order (nil for any
// other kind). A key given twice keeps its last value (the loader reports the
// duplicate). The slice is shared: do not modify it.
func (v *Value) Fields() []Field {
	if v == nil || v.holds != holdsFields {
		return nil
	}
	return unsafe.Slice((*Field)(v.ptr), int(v.n))
}

// Items returns the items of an array (nil for any other kind). The slice is
// shared: do not modify it.
func (v *Value) Items() []Value {
	if v == nil || v.holds != holdsItems {
		return nil
	}
	return unsafe.Slice((*Value)(v.ptr), int(v.n))
}

// Len is the number of fields of an object or items of an array, else 0.
func (v *Value) Len() int {
	if v == nil || (v.holds != holdsFields && v.holds != holdsItems) {
		return 0
	}
	return int(v.n)
}

// scalarValue returns a scalar of kind k with text s (a string, a number's
// literal, "true" or "false"; "" for null).
func scalarValue(k Kind, s string) Value {
	v := Value{Kind: k}
	v.setStr(s)
	return v
}

// objectValue returns an object whose fields are fields (not copied).
func objectValue(fields []Field) Value {
	v := Value{Kind: KindObject}
	v.setFields(fields)
	return v
}

// arrayValue returns an array whose items are items (not copied).
func arrayValue(items []Value) Value {
	v := Value{Kind: KindArray}
	v.setItems(items)
	return v
}

func (v *Value) setStr(s string) {
	v.ptr, v.n, v.holds = unsafe.Pointer(unsafe.StringData(s)), valueLen(len(s)), holdsText
}

func (v *Value) setFields(fields []Field) {
	v.ptr, v.n, v.holds = unsafe.Pointer(unsafe.SliceData(fields)), valueLen(len(fields)), holdsFields
}

func (v *Value) setItems(items []Value) {
	v.ptr, v.n, v.holds = unsafe.Pointer(unsafe.SliceData(items)), valueLen(len(items)), holdsItems
}

// valueLen converts a length the loader has already bounded (files above
// maxValueLen are refused, and no value is longer than its file).
func valueLen(n int) uint32 {
	if n > maxValueLen {
		n = maxValueLen // unreachable: cut rather than wrap
	}
	return uint32(n)
}

// Field is one key of an object.
type Field struct {
	Key     string
	KeyLine int32
	KeyCol  int32
	Value   Value
}

// Get returns the value of key (compared exactly), or nil.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != KindObject {
		return nil
	}
	fields := v.Fields()
	for i := range fields {
		if fields[i].Key == key {
			return &fields[i].Value
		}
	}
	return nil
}

// Field returns the field named key (compared exactly), or nil.
func (v *Value) Field(key string) *Field {
	if v == nil || v.Kind != KindObject {
		return nil
	}
	fields := v.Fields()
	for i := range fields {
		if fields[i].Key == key {
			return &fields[i]
		}
	}
	return nil
}

// Pos is where the value starts in file.
func (v *Value) Pos(file string) Position {
	if v == nil {
		return Position{File: file}
	}
	return Position{File: file, Line: int(v.Line), Column: int(v.Col)}
}

// KeyPos is where the field's key starts in file.
func (f *Field) KeyPos(file string) Position {
	if f == nil {
		return Position{File: file}
	}
	return Position{File: file, Line: int(f.KeyLine), Column: int(f.KeyCol)}
}

// Bool reports the value of a boolean (false for any other kind).
func (v *Value) Bool() bool { return v != nil && v.Kind == KindBool && v.Str() == "true" }

// MarshalJSON writes the value as canonical compact JSON: fields in document
// order, numbers as Go's encoding/json spells a float64, strings escaped as
// encoding/json does without HTML escaping.
func (v Value) MarshalJSON() ([]byte, error) {
	return v.AppendJSON(nil), nil
}

// AppendJSON appends the canonical compact JSON of v to b.
func (v *Value) AppendJSON(b []byte) []byte {
	switch v.Kind {
	case KindNull:
		return append(b, "null"...)
	case KindBool, KindNumber:
		return append(b, v.Str()...)
	case KindString:
		return appendJSONString(b, v.Str())
	case KindArray:
		b = append(b, '[')
		items := v.Items()
		for i := range items {
			if i > 0 {
				b = append(b, ',')
			}
			b = items[i].AppendJSON(b)
		}
		return append(b, ']')
	case KindObject:
		b = append(b, '{')
		fields := v.Fields()
		for i := range fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, fields[i].Key)
			b = append(b, ':')
			b = fields[i].Value.AppendJSON(b)
		}
		return append(b, '}')
	}
	return append(b, "null"...)
}

// String gives a short rendering of the value for messages: scalars as JSON,
// objects and arrays abbreviated when long.
func (v *Value) String() string {
	if v == nil {
		return "<missing>"
	}
	const max = 80
	b := v.AppendJSON(nil)
	if len(b) > max {
		cut := max
		for cut > 0 && b[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		return string(b[:cut]) + "…"
	}
	return string(b)
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with HTML escaping off.
func appendJSONString(b []byte, s string) []byte { return AppendJSONString(b, s, false) }

// AppendJSONString quotes s as encoding/json does, with or without its HTML escaping (<, > and & as
// \u003c, \u003e, \u0026). Strings in a Value are always valid UTF-8 (the loader replaces bad bytes).
func AppendJSONString(b []byte, s string, escapeHTML bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 && !(escapeHTML && (c == '<' || c == '>' || c == '&')) {
			i++
			continue
		}
		if c < 0x80 {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are escaped by encoding/json even without HTML escaping.
		if c == 0xE2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xF])
			i += 3
			start = i
			continue
		}
		i++
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
