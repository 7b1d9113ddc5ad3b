package catalog

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog/catalogtest"
)

// streamLags are the lags the equivalence tests run ValidateFS with: the
// default, and the shortest (a package is judged as soon as one file
// without it is read, so any package whose files are apart is read again).
var streamLags = []struct {
	name  string
	files int
	bytes int64
}{{"default", streamLagFiles, streamLagBytes}, {"lag1", 1, 1}}

// wholeValidation is what ValidateFS must equal: Validate(Load(fsys)) and
// the counts catalog-check validate prints.
func wholeValidation(t testing.TB, fsys fs.FS, lim Limits) (*FSValidation, error) {
	t.Helper()
	c, err := Load(context.Background(), fsys, lim)
	if err != nil {
		return nil, err
	}
	out := &FSValidation{Findings: Validate(c, ValidateOptions{})}
	for _, p := range c.Packages {
		if p.Declared {
			out.Packages++
		}
		out.Bundles += len(p.Bundles)
	}
	return out, nil
}

// sameAsWhole checks ValidateFS against Validate(Load) on fsys at every lag.
func sameAsWhole(t *testing.T, fsys fs.FS, lim Limits) {
	t.Helper()
	want, werr := wholeValidation(t, fsys, lim)
	for _, lag := range streamLags {
		got, gerr := validateStream(context.Background(), fsys, lim, lag.files, lag.bytes)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("lag %s: error %v, Load's %v", lag.name, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if !reflect.DeepEqual(got.Findings, want.Findings) {
			t.Errorf("lag %s: findings differ from Validate(Load)\ngot:\n%s\nwant:\n%s", lag.name, renderFindings(got.Findings), renderFindings(want.Findings))
		}
		if got.Packages != want.Packages || got.Bundles != want.Bundles {
			t.Errorf("lag %s: %d packages, %d bundles; Load has %d, %d", lag.name, got.Packages, got.Bundles, want.Packages, want.Bundles)
		}
		if got.Stats.PeakHeldDocs < 0 {
			t.Errorf("lag %s: held blobs went negative", lag.name)
		}
	}
}

// TestValidateFSGolden: every golden case and every opm parity case gives
// the same findings streamed.
func TestValidateFSGolden(t *testing.T) {
	var dirs []string
	for _, name := range goldenCases(t) {
		dirs = append(dirs, filepath.Join("testdata", "validate", name, "catalog"))
	}
	parity, _ := filepath.Glob(filepath.Join(opmParityCasesDir, "*", "catalog"))
	if len(parity) < 80 {
		t.Fatalf("%d opm parity cases found under %s", len(parity), opmParityCasesDir)
	}
	dirs = append(dirs, parity...)
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			sameAsWhole(t, os.DirFS(dir), DefaultLimits())
		})
	}
}

// opmParityCasesDir is the opm parity corpus (opm_parity_test.go).
const opmParityCasesDir = "../testdata/opm-parity/cases"

// TestValidateFSLoadCases: the loader's cases, each alone and all of them
// as one catalog, and under tight limits.
func TestValidateFSLoadCases(t *testing.T) {
	for _, dir := range []string{"decode/testdata/load/cases", "decode/testdata/load/regressions"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			t.Run(e.Name(), func(t *testing.T) {
				sameAsWhole(t, fstest.MapFS{"pkg/" + e.Name(): {Data: data}}, DefaultLimits())
			})
		}
		t.Run(dir, func(t *testing.T) {
			sameAsWhole(t, os.DirFS(dir), DefaultLimits())
			sameAsWhole(t, os.DirFS(dir), Limits{MaxAliasExpansion: 40, MaxAliasExpansionPerFile: 60, MaxDocuments: 3, MaxFileSize: 2000, MaxDepth: 5})
		})
	}
}

// TestValidateFSSynthetic: generated catalogs with planted defects, whole
// and with their files shuffled apart (every package read again).
func TestValidateFSSynthetic(t *testing.T) {
	for seed := range uint64(4) {
		fsys := catalogtest.Generate(catalogtest.Options{Bundles: 400, PerPackage: 10, Seed: seed, ObjectsEvery: 3, Defects: 12})
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			sameAsWhole(t, fsys, DefaultLimits())
			sameAsWhole(t, splitApart(fsys, seed), DefaultLimits())
		})
	}
}

// splitApart cuts every file of fsys into one file per document, under
// paths that put the documents of a package far apart, in random order.
func splitApart(fsys fstest.MapFS, seed uint64) fstest.MapFS {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := fstest.MapFS{}
	for name, f := range fsys {
		docs := strings.Split(string(f.Data), "\n---\n")
		for i, d := range docs {
			if i > 0 {
				d = "---\n" + d
			}
			out[fmt.Sprintf("%02d/%s-%d.yaml", rng.IntN(40), strings.ReplaceAll(name, "/", "_"), i)] = &fstest.MapFile{Data: []byte(d + "\n")}
		}
	}
	return out
}

// TestValidateFSMixed: packages spread over several files and folders, a
// package declared twice in files far apart, requirements of packages read
// before and after, a file that does not parse holding a package's
// redeclaration, aliases, blobs of no package and of other schemas.
func TestValidateFSMixed(t *testing.T) {
	bundle := func(pkg, name, ver, extra string) string {
		return fmt.Sprintf("---\nschema: olm.bundle\npackage: %s\nname: %s\nimage: quay.io/x/%s:1\nproperties:\n  - type: olm.package\n    value:\n      packageName: %s\n      version: %s\n%s", pkg, name, name, pkg, ver, extra)
	}
	req := func(pkg, rng string) string {
		return fmt.Sprintf("  - type: olm.package.required\n    value:\n      packageName: %s\n      versionRange: '%s'\n", pkg, rng)
	}
	pkg := func(name string) string {
		return fmt.Sprintf("---\nschema: olm.package\nname: %s\ndefaultChannel: stable\n", name)
	}
	channel := func(pkg string, entries ...string) string {
		s := fmt.Sprintf("---\nschema: olm.channel\npackage: %s\nname: stable\nentries:\n", pkg)
		for i, e := range entries {
			s += "  - name: " + e + "\n"
			if i > 0 {
				s += "    replaces: " + entries[i-1] + "\n"
			}
		}
		return s
	}
	fsys := fstest.MapFS{
		"a/catalog.yaml":   {Data: []byte(pkg("a") + channel("a", "a.v1", "a.v2") + bundle("a", "a.v1", "1.0.0", req("z", ">=2.0.0")) + bundle("a", "a.v2", "2.0.0", req("b", "<1.0.0")+req("nope", ">=1")+req("b", "bad range")))},
		"b/catalog.yaml":   {Data: []byte(pkg("b") + channel("b", "b.v1") + bundle("b", "b.v1", "1.2.0", req("a", ">=2.0.0")+req("", "")+req("ghost", ">=0.0.1")))},
		"b/more.yaml":      {Data: []byte(bundle("b", "b.v2", "1.3.0", ""))},
		"c/x.json":         {Data: []byte(`{"schema":"olm.bundle","package":"a","name":"a.v3","image":"quay.io/x/a:3","properties":[{"type":"olm.package","value":{"packageName":"a","version":"3.0.0"}}]}`)},
		"d/broken.yaml":    {Data: []byte(pkg("b") + "---\nschema: olm.channel\npackage: d\nname: [\n")},
		"e/alias.yaml":     {Data: []byte("---\nschema: olm.package\nname: &n e\ndefaultChannel: *n\n" + channel("e", "e.v1") + bundle("e", "e.v1", "0.1.0", ""))},
		"f/orphan.yaml":    {Data: []byte(channel("", "x") + bundle("", "y", "1.0.0", "") + bundle("ghost", "g.v1", "1.0.0", "") + "---\nschema: other.thing\nname: q\npackage: a\n")},
		"f/other.yaml":     {Data: []byte("---\nschema: olm.deprecations\npackage: a\nentries:\n  - reference: {schema: olm.bundle, name: a.v9}\n    message: gone\n")},
		"z/z.yaml":         {Data: []byte(pkg("z") + channel("z", "z.v2") + bundle("z", "z.v2", "2.1.0", ""))},
		"zz/late-a.yaml":   {Data: []byte(bundle("a", "a.v1", "1.0.1", ""))},
		"zz/late-pkg.yaml": {Data: []byte(pkg("a") + pkg("z"))},
	}
	sameAsWhole(t, fsys, DefaultLimits())
	// Some of those are far apart even at the default lag.
	got, err := ValidateFS(context.Background(), fsys, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got.Stats.Files != len(fsys) {
		t.Errorf("read %d files, want %d", got.Stats.Files, len(fsys))
	}
}

// TestValidateFSReadsOnce: a catalog of one folder per package is read once,
// holding a few packages at a time.
func TestValidateFSReadsOnce(t *testing.T) {
	fsys := catalogtest.Generate(catalogtest.Options{Bundles: 2000, Seed: 3, ObjectsEvery: 4})
	got, err := ValidateFS(context.Background(), fsys, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got.Stats.Reread != 0 {
		t.Errorf("read %d files again, want none", got.Stats.Reread)
	}
	perPackage := 20 + 2 + 1 + 1 // bundles, channels, package, a deprecation
	// The lag's packages, and those waiting for a judge or being judged.
	if max := (streamLagFiles + 2 + 2*runtime.GOMAXPROCS(0)) * perPackage; got.Stats.PeakHeldDocs > max {
		t.Errorf("held %d blobs at once, want at most %d", got.Stats.PeakHeldDocs, max)
	}
	if got.Packages != 100 || got.Bundles != 2000 {
		t.Errorf("%d packages, %d bundles; want 100, 2000", got.Packages, got.Bundles)
	}
}

// TestValidateFSErrors: the errors are Load's.
func TestValidateFSErrors(t *testing.T) {
	if _, err := ValidateFS(context.Background(), nil, Limits{}); err == nil {
		t.Error("no file system: no error")
	}
	fsys := catalogtest.Generate(catalogtest.Options{Bundles: 100, Seed: 1})
	if _, err := ValidateFS(context.Background(), fsys, Limits{MaxTotalSize: 1000}); err == nil {
		t.Error("over MaxTotalSize: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ValidateFS(ctx, fsys, Limits{}); err == nil {
		t.Error("cancelled: no error")
	}
	if _, err := ValidateDir(context.Background(), filepath.Join(t.TempDir(), "none"), Limits{}); err == nil {
		t.Error("no directory: no error")
	}
}

// TestValidateFSRealCatalogs: the real catalogs next to the repository.
func TestValidateFSRealCatalogs(t *testing.T) {
	for _, name := range []string{"community-operators-prod-v4.16", "community-operators-prod-v4.21"} {
		dir := filepath.Join("..", "..", "shared", "testdata", "catalogs", name)
		if _, err := os.Stat(dir); err != nil {
			t.Skipf("%s not found (it lives outside the repository)", dir)
		}
		t.Run(name, func(t *testing.T) {
			sameAsWhole(t, os.DirFS(dir), DefaultLimits())
		})
	}
}

// FuzzValidateFS: any three files give ValidateFS the findings of
// Validate(Load), at the default lag and when every package whose files
// are apart is read again, and never a panic.
func FuzzValidateFS(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "validate", "*", "catalog", "*", "*"))
	for i, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		next, _ := os.ReadFile(seeds[(i+1)%len(seeds)])
		f.Add(string(data), "", string(next))
	}
	f.Add("schema: olm.package\nname: a\ndefaultChannel: s\n", `{"schema":"olm.channel","package":"b","name":"s","entries":[{"name":"b.v1"}]}`,
		"schema: olm.bundle\npackage: a\nname: a.v1\nproperties:\n- type: olm.package.required\n  value: {packageName: b, versionRange: '>=1'}\n---\nschema: olm.package\nname: b\n")
	f.Fuzz(func(t *testing.T, first, second, third string) {
		sameAsWhole(t, fstest.MapFS{
			"a/catalog.yaml": {Data: []byte(first)},
			"b/catalog.json": {Data: []byte(second)},
			"c/catalog.yaml": {Data: []byte(third)},
		}, Limits{MaxFileSize: 1 << 20})
	})
}
