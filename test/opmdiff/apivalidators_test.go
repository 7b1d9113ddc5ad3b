package opmdiff

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
)

// TestBundleVerdictsMatchTheAPIValidators compares, on every bundle directory of the shared test data and on
// broken variants of one, catalogbot's verdict (catalog/bundle: no error finding) with that of operator-sdk
// bundle validate's default validators (operator-framework/api: CSV, CRD and bundle validators).
func TestBundleVerdictsMatchTheAPIValidators(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Skipf("the shared test data is absent (%s)", root)
	}
	sort.Strings(anns)
	dirs := make([]string, 0, len(anns)+4)
	for _, a := range anns {
		dirs = append(dirs, filepath.Dir(filepath.Dir(a)))
	}
	// Broken variants of a real bundle, each breaking one rule both sides know.
	src := filepath.Dir(filepath.Dir(anns[0]))
	for name, edit := range map[string]func(csv string) string{
		"no-install-modes": func(csv string) string { return dropBlock(csv, "installModes:") },
		"bad-version":      func(csv string) string { return strings.Replace(csv, "  version: ", "  version: not-a-", 1) },
		"bad-examples": func(csv string) string {
			return strings.Replace(csv, "alm-examples: |-", "alm-examples: |-\n      {[", 1)
		},
	} {
		dirs = append(dirs, variant(t, src, name, edit))
	}
	agree, disagree := 0, 0
	for _, dir := range dirs {
		b, fs, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		_ = b
		ours := catalog.HasErrors(fs)
		theirs, why := apiVerdict(dir)
		if ours == theirs {
			agree++
			continue
		}
		disagree++
		t.Errorf("%s: catalogbot invalid=%v, api validators invalid=%v\ncatalogbot: %v\napi: %s", dir, ours, theirs, errorsOf(fs), why)
	}
	t.Logf("%d bundle directories: %d verdicts agree, %d differ", len(dirs), agree, disagree)
}

func apiVerdict(dir string) (bool, string) {
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return true, err.Error()
	}
	var msgs []string
	invalid := false
	for _, r := range validation.DefaultBundleValidators.Validate(b.ObjectsToValidate()...) {
		if r.HasError() {
			invalid = true
			for _, e := range r.Errors {
				msgs = append(msgs, e.Error())
			}
		}
	}
	return invalid, strings.Join(msgs, "; ")
}

func errorsOf(fs []catalog.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			out = append(out, f.String())
		}
	}
	return out
}

// variant copies a bundle directory and edits its CSV.
func variant(t *testing.T, src, name string, edit func(string) string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".clusterserviceversion.yaml") {
			data = []byte(edit(string(data)))
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// dropBlock removes the YAML key key (at any indentation) and the lines indented below it.
func dropBlock(text, key string) string {
	lines := strings.Split(text, "\n")
	var out []string
	skipIndent := -1
	for _, l := range lines {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if skipIndent >= 0 {
			if strings.TrimSpace(l) == "" || indent > skipIndent || (indent == skipIndent && strings.HasPrefix(strings.TrimLeft(l, " "), "- ")) {
				continue
			}
			skipIndent = -1
		}
		if strings.HasPrefix(strings.TrimLeft(l, " "), key) {
			skipIndent = indent
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
