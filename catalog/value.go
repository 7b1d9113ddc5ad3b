package catalog

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
type Value struct {
	Kind Kind
	// Str is the text of a string, the literal of a number as JSON would spell
	// it, and "true"/"false" for a boolean. Numbers are spelled as
	// encoding/json spells their float64 value, because opm decodes every blob
	// into map[string]any before its typed decoding: 1.0 is "1", 1e3 is
	// "1000", and an integer beyond 2^53 loses its last digits as in opm.
	Str string
	// Fields of an object in document order. A key given twice keeps its last
	// value (the loader reports the duplicate).
	Fields []Field
	// Items of an array.
	Items []Value
	// Line and Col are where the value starts, counting from 1.
	Line, Col int32
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
	for i := range v.Fields {
		if v.Fields[i].Key == key {
			return &v.Fields[i].Value
		}
	}
	return nil
}

// Field returns the field named key (compared exactly), or nil.
func (v *Value) Field(key string) *Field {
	if v == nil || v.Kind != KindObject {
		return nil
	}
	for i := range v.Fields {
		if v.Fields[i].Key == key {
			return &v.Fields[i]
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
func (v *Value) Bool() bool { return v != nil && v.Kind == KindBool && v.Str == "true" }

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
		return append(b, v.Str...)
	case KindString:
		return appendJSONString(b, v.Str)
	case KindArray:
		b = append(b, '[')
		for i := range v.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.Items[i].AppendJSON(b)
		}
		return append(b, ']')
	case KindObject:
		b = append(b, '{')
		for i := range v.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, v.Fields[i].Key)
			b = append(b, ':')
			b = v.Fields[i].Value.AppendJSON(b)
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
// Strings in a Value are always valid UTF-8 (the loader replaces bad bytes).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 {
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
