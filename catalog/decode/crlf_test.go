package decode

import "testing"

// TestCRBeforeCRLF: opm's line reader turns "\r\r\n" into one line break before YAML parsing; a multi-line
// string (and base64 in olm.bundle.object) reads as opm reads it. The expected values are what opm v1.60.0's
// reading gives (k8s.io/apimachinery's YAML reader, then sigs.k8s.io/yaml).
func TestCRBeforeCRLF(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"schema: x\ndescription: |\r\r\n  one\r\r\n  two\r\r\n", "one\ntwo\n"},
		{"schema: x\ndescription: |\r\n  one\r\n  two\r\n", "one\ntwo\n"},
		{"schema: x\ndescription: |\r\r\r\n  one\r\r\r\n  two\r\n", "\none\n\ntwo\n"},
		{"schema: x\ndescription: \"a\r\r\n  b\"\n", "a b"},
		{"schema: x\ndescription: a\r\r\n  b\n", "a b"},
	} {
		docs, fs := ParseFile("c.yaml", []byte(tc.in), Limits{})
		if len(docs) != 1 {
			t.Errorf("ParseFile(%q) = %d docs, %v", tc.in, len(docs), fs)
			continue
		}
		if got := docs[0].Value.Get("description").Str(); got != tc.want {
			t.Errorf("ParseFile(%q) description = %q, want %q", tc.in, got, tc.want)
		}
	}
}
