package template

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

// BenchmarkRenderAndDrift renders every template of testdata/opm from the bundle directories (their digests
// learned once, as the App keeps them) into YAML, and checks it for drift against itself.
func BenchmarkRenderAndDrift(b *testing.B) {
	ctx := context.Background()
	dirs := realBundleDirs(b)
	res := NewDirResolver(os.DirFS(realBundles), dirs, "", "none").AnyRepository()
	files, _ := filepath.Glob("testdata/opm/*/template.yaml")
	var srcs [][]byte
	for _, f := range files {
		data, _ := os.ReadFile(f)
		srcs = append(srcs, data)
	}
	beh, _ := BehaviourOf("v1.60.0")
	var outs [][]byte
	for i, src := range srcs {
		tmpl, _ := Parse(files[i], src, catalog.Limits{})
		out, fs := Render(ctx, tmpl, Options{Resolver: res, Behaviour: beh})
		if out == nil {
			b.Fatal(fs)
		}
		var buf bytes.Buffer
		_ = out.WriteYAML(&buf)
		outs = append(outs, buf.Bytes())
	}
	for _, mode := range []string{"render", "drift"} {
		b.Run(mode, func(b *testing.B) {
			for n := 0; n < b.N; n++ {
				for i, src := range srcs {
					tmpl, _ := Parse(files[i], src, catalog.Limits{})
					out, _ := Render(ctx, tmpl, Options{Resolver: res, Behaviour: beh})
					if mode == "render" {
						var buf bytes.Buffer
						_ = out.WriteYAML(&buf)
						continue
					}
					if f := Drift(out, "catalog.yaml", outs[i], catalog.Limits{}, "fix"); len(f) != 0 {
						b.Fatal(f)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(srcs)), "µs/template")
		})
	}
}
