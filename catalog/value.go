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
	// it, and "true"/"false" for a boolean.
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
