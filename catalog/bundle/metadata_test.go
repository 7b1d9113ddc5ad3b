package bundle

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
)

// metadata/ is read as opm reads it (issue 26.3): the annotations of the first file in name order that has
// them, dependencies and properties from any file; what a person could read otherwise is refused at its line.
func TestLoadMetadataAsOpm(t *testing.T) {
	other := strings.Replace(goodAnnotations, "package.v1: etcd", "package.v1: redis", 1)
	deps := "dependencies:\n  - type: olm.package\n    value: {packageName: prometheus, version: '>=0.14.0'}\n"
	for _, tc := range []struct {
		name      string
		files     map[string]string // metadata/ files, replacing annotations.yaml
		pkg       string
		deps      int
		ambiguous string // file:line of the bundle.metadata-ambiguous finding, "" for none
	}{
		{"annotations under another name", map[string]string{"bundle.yaml": goodAnnotations}, "etcd", 0, ""},
		{"a second file that sorts first", map[string]string{"annotations.yaml": goodAnnotations, "00.yaml": other}, "redis", 0, "metadata/annotations.yaml:1"},
		{"a second file that sorts last", map[string]string{"annotations.yaml": goodAnnotations, "zz.yaml": other}, "etcd", 0, "metadata/zz.yaml:1"},
		{"a hidden file", map[string]string{"annotations.yaml": goodAnnotations, ".a.yaml": other}, "redis", 0, "metadata/annotations.yaml:1"},
		{"dependencies inside annotations.yaml", map[string]string{"annotations.yaml": goodAnnotations + deps}, "etcd", 1, ""},
		{"dependencies in an odd name", map[string]string{"annotations.yaml": goodAnnotations, "extra.yaml": deps}, "etcd", 1, ""},
		{"two dependencies lists", map[string]string{"annotations.yaml": goodAnnotations + deps, "dependencies.yaml": deps}, "etcd", 1, "metadata/dependencies.yaml:1"},
		{"annotations in a second document", map[string]string{"annotations.yaml": goodAnnotations + "---\n" + deps}, "etcd", 0, "metadata/annotations.yaml:9"},
		{"olm.package of another package", map[string]string{"annotations.yaml": goodAnnotations, "properties.yaml": "properties:\n  - type: olm.package\n    value: {packageName: redis, version: 1.0.0}\n"}, "etcd", 0, "metadata/properties.yaml:2"},
		{"package spelled in upper case", map[string]string{"annotations.yaml": strings.Replace(goodAnnotations, "bundle.package.v1", "bundle.PACKAGE.v1", 1)}, "etcd", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := goodBundle()
			delete(m, "metadata/annotations.yaml")
			for name, data := range tc.files {
				m["metadata/"+name] = &fstest.MapFile{Data: []byte(data)}
			}
			b, fs := load(t, m)
			if b.Package != tc.pkg || len(b.Dependencies) != tc.deps {
				t.Errorf("package %q with %d dependencies, want %q with %d; findings %v", b.Package, len(b.Dependencies), tc.pkg, tc.deps, fs)
			}
			var got []string
			for _, f := range fs {
				if f.Rule == ruleMetadataAmbiguous {
					got = append(got, f.File+":"+itoa(f.Line))
				}
				if f.Rule == ruleNoAnnotations {
					t.Errorf("no annotations found: %v", f)
				}
			}
			if tc.ambiguous == "" && len(got) > 0 || tc.ambiguous != "" && (len(got) != 1 || got[0] != tc.ambiguous) {
				t.Errorf("ambiguity findings at %v, want %q; findings %v", got, tc.ambiguous, fs)
			}
		})
	}
}

// Links are findings, never followed, whatever the file system does with them; every file of manifests/ and
// metadata/, at any depth, counts against the bounds (issue 26.7).
func TestLoadLinksAndBounds(t *testing.T) {
	link := &fstest.MapFile{Data: []byte("/etc/passwd"), Mode: fs.ModeSymlink}
	for _, tc := range []struct {
		name  string
		edit  func(fstest.MapFS)
		lim   Limits
		rule  string
		where string
	}{
		{"a manifest link", func(m fstest.MapFS) { m["manifests/x.yaml"] = link }, Limits{}, ruleNotRegular, "manifests/x.yaml"},
		{"a metadata link", func(m fstest.MapFS) { m["metadata/annotations.yaml"] = link }, Limits{}, ruleNotRegular, "metadata/annotations.yaml"},
		{"metadata/ a link", func(m fstest.MapFS) {
			delete(m, "metadata/annotations.yaml")
			m["metadata"] = link
		}, Limits{}, ruleNotRegular, "metadata"},
		{"a link deep in metadata/", func(m fstest.MapFS) { m["metadata/a/b/c"] = link }, Limits{}, ruleNotRegular, "metadata/a/b/c"},
		{"bytes of an unread file", func(m fstest.MapFS) {
			m["metadata/icons/big.png"] = &fstest.MapFile{Data: make([]byte, 4096)}
		}, Limits{MaxTotalBytes: 4096}, ruleTooLarge, "metadata/icons/big.png"},
		{"files of an unread folder", func(m fstest.MapFS) {
			for _, n := range []string{"a", "b", "c", "d", "e"} {
				m["metadata/extra/"+n] = &fstest.MapFile{}
			}
		}, Limits{MaxFiles: 6}, ruleTooLarge, "metadata/extra/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := goodBundle()
			tc.edit(m)
			_, found, err := Load(context.Background(), m, tc.lim)
			if err != nil {
				t.Fatal(err)
			}
			f := Unreadable(found)
			if f == nil || f.Rule != tc.rule || f.File != tc.where || f.Severity != catalog.SeverityError {
				t.Errorf("unreadable = %v, want %s at %s; findings %v", f, tc.rule, tc.where, found)
			}
		})
	}
}

// FuzzLoadMetadata: any content of two metadata files loads without panic, and the package taken is the one
// of a file whose annotations opm would read.
func FuzzLoadMetadata(f *testing.F) {
	f.Add([]byte(goodAnnotations), []byte("dependencies:\n  - type: olm.gvk\n    value: {group: g, kind: K, version: v1}\n"))
	f.Add([]byte("---\n---\n"+goodAnnotations), []byte("{\"annotations\": {\"operators.operatorframework.io.bundle.package.v1\": 7}}"))
	f.Add([]byte("# c\n---\nannotations: [x]\n"), []byte("--- x\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if len(a)+len(b) > 64<<10 {
			return
		}
		m := goodBundle()
		m["metadata/annotations.yaml"] = &fstest.MapFile{Data: a}
		m["metadata/b.yaml"] = &fstest.MapFile{Data: b}
		bd, _, err := Load(context.Background(), m, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if bd.Package != "" && !strings.Contains(string(a)+string(b), bd.Package) && !strings.ContainsAny(bd.Package, "0123456789truefals") {
			t.Fatalf("package %q is in neither file", bd.Package)
		}
	})
}
