package decode

import "testing"

// TestValueAccessors: each accessor answers only for what the value holds,
// whatever its Kind is set to afterwards, so no change of Kind makes the
// text be read as fields or the fields as items.
func TestValueAccessors(t *testing.T) {
	docs, findings := ParseFile("v.yaml", []byte("schema: x\ns: text\nnum: 12\nb: yes\nz: null\no:\n  k: v\na:\n  - 1\n  - two\n"), DefaultLimits())
	if len(findings) > 0 || len(docs) != 1 {
		t.Fatalf("docs %d, findings %v", len(docs), findings)
	}
	v := &docs[0].Value
	for _, tt := range []struct {
		key        string
		kind       Kind
		str        string
		nFields, n int
	}{
		{"s", KindString, "text", 0, 0},
		{"num", KindNumber, "12", 0, 0},
		{"b", KindBool, "true", 0, 0},
		{"z", KindNull, "", 0, 0},
		{"o", KindObject, "", 1, 1},
		{"a", KindArray, "", 0, 2},
	} {
		got := v.Get(tt.key)
		if got == nil || got.Kind != tt.kind || got.Str() != tt.str || len(got.Fields()) != tt.nFields || got.Len() != tt.n {
			t.Errorf("%s: got %+v", tt.key, got)
		}
	}
	if items := v.Get("a").Items(); len(items) != 2 || items[1].Str() != "two" || items[1].Line != 10 || items[1].Col != 5 {
		t.Errorf("items = %v", items)
	}
	if f := v.Field("o"); f == nil || f.Value.Fields()[0].Key != "k" || f.KeyLine != 6 {
		t.Errorf("field o = %+v", f)
	}

	s := *v.Get("s")
	s.Kind = KindObject
	if s.Fields() != nil || s.Items() != nil || s.Len() != 0 || s.Str() != "text" {
		t.Error("a string relabelled as an object reads its text as fields")
	}
	o := *v.Get("o")
	o.Kind = KindArray
	if o.Items() != nil || o.Str() != "" {
		t.Error("an object relabelled as an array reads its fields as items")
	}
	var nilValue *Value
	if nilValue.Str() != "" || nilValue.Fields() != nil || nilValue.Items() != nil || nilValue.Len() != 0 {
		t.Error("a nil Value is not empty")
	}
}
