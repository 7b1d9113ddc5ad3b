package decode

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/load/cases.golden from the current output")

// updateGolden reports whether -update is set.
func updateGolden() bool { return *update }

// renderParse writes what ParseFile makes of a file, for golden files.
func renderParse(name string, data []byte) string {
	docs, findings := ParseFile(name, data, Limits{})
	var b strings.Builder
	fmt.Fprintf(&b, "== %s\n", name)
	for _, d := range docs {
		fmt.Fprintf(&b, "doc %d:%d schema=%q package=%q name=%q %s\n", d.Pos.Line, d.Pos.Column, d.Schema, d.Package, d.Name, d.Value.AppendJSON(nil))
	}
	for _, f := range findings {
		fmt.Fprintf(&b, "%s %s: %s: %s\n", f.Severity, f.Position, f.Rule, f.Message)
	}
	return b.String()
}

// TestParseFileCases reads every file of testdata/load/cases: the verdict
// (any error finding refuses) must be opm v1.60.0's, recorded in
// opm-verdicts.txt, and the whole output must match cases.golden.
func TestParseFileCases(t *testing.T) {
	dir := filepath.Join("testdata", "load", "cases")
	verdicts := readVerdicts(t, filepath.Join("testdata", "load", "opm-verdicts.txt"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var all strings.Builder
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		_, findings := ParseFile(name, data, Limits{})
		got := "accept"
		for _, f := range findings {
			if f.Severity == SeverityError {
				got = "refuse"
			}
		}
		want, ok := verdicts[name]
		if !ok {
			t.Errorf("%s: no verdict in opm-verdicts.txt", name)
		} else if got != want {
			t.Errorf("%s: we %s, want %s (opm's verdict or our recorded difference); findings %v", name, got, want, findings)
		}
		all.WriteString(renderParse(name, data))
	}
	golden := filepath.Join("testdata", "load", "cases.golden")
	if updateGolden() {
		if err := os.WriteFile(golden, []byte(all.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestParseFileCases -update)", err)
	}
	if got := all.String(); got != string(want) {
		t.Errorf("output differs from %s (rerun with -update and review the diff):\n%s", golden, firstDiff(got, string(want)))
	}
}

// readVerdicts reads "<file> accept|refuse [ours=accept|refuse: why]" lines;
// the verdict we must give is ours= when present.
func readVerdicts(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		v := fields[1]
		if len(fields) > 2 && strings.HasPrefix(fields[2], "ours=") {
			v = strings.TrimSuffix(strings.TrimPrefix(fields[2], "ours="), ":")
		}
		m[fields[0]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, a, b)
		}
	}
	return ""
}
