package catalog

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog/load"
)

// aliasBombs is a YAML stream of n documents, each just under the per-document bounds: about 90,000 values
// from aliases beside enough plain values to stay under goyaml.v2's share of alias expansions.
func aliasBombs(n int) string {
	var b strings.Builder
	for d := 0; d < n; d++ {
		b.WriteString("---\nschema: olm.package\nname: p")
		fmt.Fprintf(&b, "%d\n", d)
		b.WriteString("pad: [" + strings.TrimSuffix(strings.Repeat("0,", 1100), ",") + "]\n")
		b.WriteString("a: &a [" + strings.TrimSuffix(strings.Repeat("1,", 10), ",") + "]\n")
		b.WriteString("b: &b [" + strings.TrimSuffix(strings.Repeat("*a,", 10), ",") + "]\n")
		b.WriteString("c: &c [" + strings.TrimSuffix(strings.Repeat("*b,", 10), ",") + "]\n")
		b.WriteString("d: [" + strings.TrimSuffix(strings.Repeat("*c,", 80), ",") + "]\n")
	}
	return b.String()
}

// TestAliasExpansionBoundedPerFile: many small alias bombs in one file, each under the per-document bound,
// stop at the per-file bound with one finding, and memory stays bounded. Before, each document was judged
// alone: a 3.2 MB file of them reached 2.85 GB.
func TestAliasExpansionBoundedPerFile(t *testing.T) {
	one := aliasBombs(1)
	docs, fs := ParseFile("one.yaml", []byte(one), Limits{})
	if len(docs) != 1 || len(fs) != 0 {
		t.Fatalf("one document under the bounds: %d docs, findings %v; want it read", len(docs), fs)
	}
	src := aliasBombs(200)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	docs, fs = ParseFile("bombs.yaml", []byte(src), Limits{})
	runtime.ReadMemStats(&after)
	var alias []Finding
	for _, f := range fs {
		if f.Rule == "load.alias-expansion" {
			alias = append(alias, f)
		}
	}
	if len(alias) != 1 || !strings.Contains(alias[0].Message, "in this file") {
		t.Fatalf("findings = %v; want one %s about the file", fs, "load.alias-expansion")
	}
	if len(docs) > 12 {
		t.Errorf("%d documents read, want the file to stop near 1,000,000 alias values (about 10 documents)", len(docs))
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<30 {
		t.Errorf("parsing allocated %d MiB; the per-file bound should keep it far lower", grown>>20)
	}
}

// TestAliasExpansionBoundedPerRead: files each under the per-file bound stop at the bound of one read.
func TestAliasExpansionBoundedPerRead(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := 0; i < 8; i++ {
		fsys[fmt.Sprintf("f%d.yaml", i)] = &fstest.MapFile{Data: []byte(aliasBombs(6))}
	}
	_, fs, err := load.ReadFS(context.Background(), fsys, Limits{MaxAliasExpansionPerRead: 2_000_000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fs {
		if f.Rule == "load.alias-expansion" && strings.Contains(f.Message, "read together") {
			n++
		}
	}
	if n == 0 {
		t.Errorf("no finding about the read's alias bound: %v", fs)
	}
}
