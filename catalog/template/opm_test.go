package template

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

const realBundles = "../../../shared/testdata/bundles"

type opmGolden struct {
	Outputs  map[string]string `json:"outputs"`
	Skeleton []json.RawMessage `json:"skeleton"`
	Error    string            `json:"error"`
}

// TestRenderMatchesOpm renders the templates of testdata/opm (generated over the community bundles of
// ../shared/testdata/bundles by scripts/record-template-render) and compares every output, byte for
// byte, with what opm v1.60.0 and v1.69.0 printed: YAML, JSON, and JSON with --migrate-level
// bundle-object-to-csv-metadata. The bundle images are resolved from the bundle directories (the
// images were built from them, deterministically), so nothing is pulled.
func TestRenderMatchesOpm(t *testing.T) {
	ctx := context.Background()
	dirs := realBundleDirs(t)
	base := NewDirResolver(os.DirFS(realBundles), dirs, "", "none").AnyRepository()
	levels := map[string]*DirResolver{"yaml": base, "json": base, "json-csv-metadata": base.AtLevel("bundle-object-to-csv-metadata")}
	cases, _ := filepath.Glob("testdata/opm/*/template.yaml")
	if len(cases) == 0 {
		t.Fatal("no recorded cases in testdata/opm")
	}
	agree, total := 0, 0
	for _, c := range cases {
		dir := filepath.Dir(c)
		src, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		tmpl, fs := Parse(c, src, catalog.Limits{})
		goldens, _ := filepath.Glob(filepath.Join(dir, "opm-*.json"))
		for _, gf := range goldens {
			version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(gf), "opm-"), ".json")
			var g opmGolden
			data, _ := os.ReadFile(gf)
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatal(err)
			}
			beh, err := BehaviourOf(version)
			if err != nil {
				t.Fatal(err)
			}
			keys := make([]string, 0, len(g.Outputs))
			for k := range g.Outputs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if g.Error != "" {
				total++
				if tmpl != nil {
					if out, _ := Render(ctx, tmpl, Options{Resolver: levels["json"], Behaviour: beh}); out != nil {
						t.Errorf("%s with opm %s: opm refused it (%s) but it rendered", dir, version, g.Error)
						continue
					}
				}
				agree++
				continue
			}
			if tmpl == nil {
				t.Errorf("%s: opm %s renders it but it does not parse: %v", c, version, fs)
				continue
			}
			for _, key := range keys {
				total++
				out, rfs := Render(ctx, tmpl, Options{Resolver: levels[key], Behaviour: beh})
				if out == nil {
					t.Errorf("%s (%s, opm %s): does not render: %v", dir, key, version, rfs)
					continue
				}
				var buf bytes.Buffer
				if key == "yaml" {
					err = out.WriteYAML(&buf)
				} else {
					err = out.WriteJSON(&buf)
				}
				if err != nil {
					t.Fatal(err)
				}
				if d := os.Getenv("CATALOGBOT_TEMPLATE_DUMP"); d != "" {
					f := filepath.Join(d, filepath.Base(dir), version+"."+key)
					_ = os.MkdirAll(filepath.Dir(f), 0o755)
					_ = os.WriteFile(f, buf.Bytes(), 0o644)
				}
				sum := sha256.Sum256(buf.Bytes())
				if hex.EncodeToString(sum[:]) == g.Outputs[key] {
					agree++
					continue
				}
				t.Errorf("%s (%s, opm %s): output differs from opm's%s", dir, key, version, skeletonDiff(buf.Bytes(), key, g.Skeleton))
			}
		}
	}
	t.Logf("%d of %d renderings identical to opm's", agree, total)
}

// skeletonDiff names the first non-bundle blob that differs, when the JSON output is at hand.
func skeletonDiff(out []byte, key string, want []json.RawMessage) string {
	if key != "json" {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	i := 0
	for ; ; i++ {
		var blob json.RawMessage
		if err := dec.Decode(&blob); err != nil {
			break
		}
		var head struct{ Schema, Name string }
		_ = json.Unmarshal(blob, &head)
		var got []byte
		if head.Schema == "olm.bundle" {
			got, _ = json.Marshal(map[string]string{"schema": head.Schema, "name": head.Name})
		} else {
			got = hashIcon(blob)
		}
		if i >= len(want) {
			return ": extra blob " + string(got)
		}
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal(want[i], &w)
		if !reflect.DeepEqual(g, w) {
			return ":\n got  " + short(got) + "\n want " + short(want[i])
		}
	}
	if i < len(want) {
		return ": missing blob " + string(want[i])
	}
	return " (only inside bundle blobs)"
}

func short(b []byte) string {
	var buf bytes.Buffer
	_ = json.Compact(&buf, b)
	if buf.Len() > 400 {
		return buf.String()[:400] + "..."
	}
	return buf.String()
}

// hashIcon is the recorder's: the blob with its icon's base64data replaced by its sha256.
func hashIcon(blob []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(blob, &m) == nil {
		var icon map[string]json.RawMessage
		if raw, ok := m["icon"]; ok && json.Unmarshal(raw, &icon) == nil {
			if data, ok := icon["base64data"]; ok {
				sum := sha256.Sum256(data)
				icon["base64data"], _ = json.Marshal("sha256:" + hex.EncodeToString(sum[:]))
				m["icon"], _ = json.Marshal(icon)
				blob, _ = json.Marshal(m)
			}
		}
	}
	return blob
}

// realBundleDirs lists the bundle directories of ../shared/testdata/bundles (relative to it), or skips.
func realBundleDirs(tb testing.TB) []string {
	tb.Helper()
	if _, err := os.Stat(realBundles); err != nil {
		tb.Skipf("no %s (the shared test data is not on this machine)", realBundles)
	}
	var dirs []string
	anns, _ := filepath.Glob(filepath.Join(realBundles, "*", "*", "metadata", "annotations.yaml"))
	for _, a := range anns {
		rel, _ := filepath.Rel(realBundles, filepath.Dir(filepath.Dir(a)))
		dirs = append(dirs, filepath.ToSlash(rel))
	}
	return dirs
}
