package catalog

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestCSVIdentity(t *testing.T) {
	tests := []struct {
		doc                 string
		kind, name, version string
		ok                  bool
	}{
		{`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"annotations":{"a":"{\"x\":[1,2]}"},"name":"foo.v1.0.0"},"spec":{"icon":[{"base64data":"AAAA"}],"version":"1.0.0","install":{"spec":{"deployments":[]}}}}`,
			"ClusterServiceVersion", "foo.v1.0.0", "1.0.0", true},
		{` { "spec" : { "version" : "2.0.0" } , "kind" : "ClusterServiceVersion" , "metadata" : { "name" : "b\u0061r" } } `,
			"ClusterServiceVersion", "bar", "2.0.0", true},
		{`{"kind":"CustomResourceDefinition","metadata":{"name":"x.example.com"},"spec":{"n":1.5e3,"b":true,"z":null}}`,
			"CustomResourceDefinition", "x.example.com", "", true},
		{`{"kind":"ClusterServiceVersion","metadata":{"name":"a\"b"}}`, "ClusterServiceVersion", `a"b`, "", true},
		{`{"kind":"ClusterServiceVersion","metadata":{"name":"x\\"}}`, "ClusterServiceVersion", `x\`, "", true},
		{`{"kind":"ClusterServiceVersion"`, "ClusterServiceVersion", "", "", false},
		{`{"kind":5}`, "", "", "", false},
		{`[1]`, "", "", "", false},
		{``, "", "", "", false},
	}
	for _, tt := range tests {
		kind, name, version, ok := csvIdentity([]byte(tt.doc))
		if kind != tt.kind || name != tt.name || version != tt.version || ok != tt.ok {
			t.Errorf("csvIdentity(%s) = %q, %q, %q, %v; want %q, %q, %q, %v", tt.doc, kind, name, version, ok, tt.kind, tt.name, tt.version, tt.ok)
		}
	}
}

// FuzzCSVIdentity: on valid JSON objects the skimmer agrees with encoding/json
// decoding into maps (keys compared exactly, as Kubernetes does).
func FuzzCSVIdentity(f *testing.F) {
	f.Add(`{"kind":"ClusterServiceVersion","metadata":{"name":"a"},"spec":{"version":"1.0.0"}}`)
	f.Add(`{"metadata":{"name":"\u00e9\\"},"spec":[1,{"version":"x"}],"kind":"K"}`)
	f.Fuzz(func(t *testing.T, doc string) {
		kind, name, version, ok := csvIdentity([]byte(doc))
		if !utf8.ValidString(doc) {
			return // encoding/json replaces bad bytes; the skimmer keeps them
		}
		var m map[string]any
		if json.Unmarshal([]byte(doc), &m) != nil || !ok {
			return
		}
		want := struct{ Kind, Metadata, Spec any }{m["kind"], m["metadata"], m["spec"]}
		str := func(v any) string { s, _ := v.(string); return s }
		sub := func(v any, k string) string {
			if m, isMap := v.(map[string]any); isMap {
				return str(m[k])
			}
			return ""
		}
		if kind != str(want.Kind) || name != sub(want.Metadata, "name") || version != sub(want.Spec, "version") {
			t.Errorf("csvIdentity(%q) = %q %q %q, encoding/json says %q %q %q", doc, kind, name, version, str(want.Kind), sub(want.Metadata, "name"), sub(want.Spec, "version"))
		}
	})
}
