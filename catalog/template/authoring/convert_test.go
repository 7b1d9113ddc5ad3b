package authoring

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var recordConvert = flag.Bool("record-convert", false, "rewrite testdata/convert's goldens from $OPM's output")

// convertCases are inputs of `opm alpha convert-template basic`: real catalogs, and the corners of opm's
// reading (numbers, escapes, key case, YAML document markers, a JSON stream falling back to YAML, blobs that
// cannot be read).
var convertCases = map[string]string{
	"sample-yaml": "@../../../testdata/catalogs/sample/etcd-lite/catalog.yaml",
	"sample-json": "@../../../testdata/catalogs/sample/widget-operator/catalog.json",
	"numbers-escapes-keys": `---
schema: olm.package
name: p
defaultChannel: stable
description: "<b>fast</b> & safe — é  ok"
icon: {mediatype: image/svg+xml, base64data: PHN2Zz4=}
zeta: 1
Alpha: {z: 1000000, a: 1.5, m: 1e3, big: 12345678901234567890, neg: -0.0, list: [3, "x", true, null]}
---
schema: olm.channel
package: p
name: stable
entries:
  - name: p.v1.0.0
  - {name: p.v1.1.0, replaces: p.v1.0.0, skipRange: "<1.1.0"}
--- # the bundles
schema: olm.bundle
package: p
name: p.v1.1.0
image: quay.io/acme/p-bundle@sha256:0000000000000000000000000000000000000000000000000000000000000001
properties:
  - {type: olm.package, value: {packageName: p, version: 1.1.0}}
relatedImages:
  - {name: op, image: quay.io/acme/p:1.1.0}
---
schema: olm.deprecations
package: p
entries:
  - reference: {schema: olm.bundle, name: p.v1.0.0}
    message: "use 1.1.0"
---
schema: example.other
Name: case
package: p
`,
	"bundle-without-image": "schema: olm.bundle\nname: x.v1\npackage: x\n",
	"schema-key-case":      "Schema: olm.bundle\nimage: quay.io/a/b:1\nname: a\n",
	"comment-only-last":    "schema: olm.package\nname: p\n---\n# nothing more\n",
	"leading-markers":      "---\n---\nschema: olm.package\nname: p\n",
	"json-stream":          `{"schema":"olm.package","name":"p","defaultChannel":"s"} {"schema":"olm.channel","package":"p","name":"s","entries":[{"name":"p.v1"}]}` + "\n" + `{"schema":"olm.bundle","name":"p.v1","package":"p","image":"q.io/a/p:1","properties":[]}`,
	"json-then-yaml":       "{\"schema\":\"olm.package\",\"name\":\"p\"}\nschema: olm.channel\npackage: p\nname: s\n",
	"bad-separator":        "schema: olm.package\nname: p\n----\nschema: olm.channel\n",
	"duplicate-folded-key": "schema: olm.package\nname: p\nName: q\n",
	"schema-not-string":    "schema: 5\nname: p\n",
	"bundle-image-number":  "schema: olm.bundle\nname: p.v1\nimage: 5\n",
	"not-an-object":        "- a\n- b\n",
	"empty":                "",
	"blank-lines":          "\n  \n\n",
}

func convertInput(t *testing.T, spec string) []byte {
	t.Helper()
	if p, ok := strings.CutPrefix(spec, "@"); ok {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	return []byte(spec)
}

// TestConvertMatchesOpm: Convert's output is, byte for byte, what `opm alpha convert-template basic` (v1.60.0)
// printed for each case (testdata/convert/<case>.{json,yaml}; "error" where opm failed); with $OPM it is also
// compared with that opm now (-record-convert rewrites the goldens from it).
func TestConvertMatchesOpm(t *testing.T) {
	opm := opmBinary()
	if opm == "" && *recordConvert {
		t.Fatal("-record-convert needs $OPM")
	}
	dir := filepath.Join("testdata", "convert")
	for name, spec := range convertCases {
		input := convertInput(t, spec)
		for _, format := range []string{"json", "yaml"} {
			golden := filepath.Join(dir, name+"."+format)
			if opm != "" {
				theirs, ok := runOpmConvert(t, opm, input, format)
				want := theirs
				if !ok {
					want = []byte("error\n")
				}
				if *recordConvert {
					os.MkdirAll(dir, 0o755)
					if err := os.WriteFile(golden, want, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				got, err := Convert(input, format)
				if ok != (err == nil) || ok && !bytes.Equal(got, theirs) {
					t.Errorf("%s -o %s: differs from opm now (opm ok %v, ours: %v):\nours:\n%s\nopm:\n%s", name, format, ok, err, got, theirs)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (record the goldens with OPM=… go test ./catalog/template/authoring -run TestConvertMatchesOpm -record-convert)", err)
			}
			got, cerr := Convert(input, format)
			if string(want) == "error\n" {
				if cerr == nil {
					t.Errorf("%s -o %s: opm fails, Convert gave:\n%s", name, format, got)
				}
				continue
			}
			if cerr != nil || !bytes.Equal(got, want) {
				t.Errorf("%s -o %s: %v\nours:\n%s\nopm v1.60.0:\n%s", name, format, cerr, got, want)
			}
		}
	}
}

// TestConvertRealCatalogs: every package catalog of the shared test data's templates converts as opm
// converts it (only with $OPM and the shared test data).
func TestConvertRealCatalogs(t *testing.T) {
	opm := opmBinary()
	if opm == "" {
		t.Skip("compared with opm only with $OPM (the opm binary) or $CATALOGBOT_TOOLS/bin/opm")
	}
	files, _ := filepath.Glob(filepath.Join(realTemplates, "catalogs", "*", "*", "catalog.*"))
	if len(files) == 0 {
		t.Skipf("no %s (the shared test data is not on this machine)", realTemplates)
	}
	if testing.Short() && len(files) > 10 {
		files = files[:10]
	}
	for _, f := range files {
		input, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"json", "yaml"} {
			theirs, ok := runOpmConvert(t, opm, input, format)
			got, err := Convert(input, format)
			if ok != (err == nil) || !bytes.Equal(got, theirs) {
				t.Errorf("%s -o %s: differs from opm (opm ok %v, ours %v)", f, format, ok, err)
			}
		}
	}
	t.Logf("%d catalogs converted as opm does, in JSON and YAML", len(files))
}

// opmBinary is $OPM, else $CATALOGBOT_TOOLS/bin/opm when it exists, else "".
func opmBinary() string {
	if p := os.Getenv("OPM"); p != "" {
		return p
	}
	if d := os.Getenv("CATALOGBOT_TOOLS"); d != "" {
		if p := filepath.Join(d, "bin", "opm"); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func runOpmConvert(t *testing.T, opm string, input []byte, format string) ([]byte, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, opm, "alpha", "convert-template", "basic", "-o", format)
	cmd.Stdin = bytes.NewReader(input)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("running opm: %v", err)
	}
	return out, err == nil
}

func FuzzConvert(f *testing.F) {
	for _, spec := range convertCases {
		if !strings.HasPrefix(spec, "@") {
			f.Add([]byte(spec))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		for _, format := range []string{"json", "yaml"} {
			out, err := Convert(data, format)
			if err == nil && format == "json" && len(out) > 1 && !bytes.HasPrefix(out, []byte("{\n    \"schema\": \"olm.template.basic\"")) {
				t.Fatalf("output does not start as a basic template: %q", out)
			}
		}
	})
}
