package catalog

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// realCatalogs returns the directories of the real community catalogs kept
// next to the repository (../shared/testdata/catalogs), skipping when absent.
func realCatalogs(tb testing.TB) map[string]string {
	tb.Helper()
	root := filepath.Join("..", "..", "shared", "testdata", "catalogs")
	out := map[string]string{}
	for _, name := range []string{"community-operators-prod-v4.16", "community-operators-prod-v4.21"} {
		dir := filepath.Join(root, name)
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			out[name] = dir
		}
	}
	if len(out) == 0 {
		tb.Skipf("real catalogs not found under %s (they live outside the repository, in ../shared)", root)
	}
	return out
}

// TestRealCatalogsValid: both real catalogs pass opm v1.60.0 validate, so
// they must have no error finding here either.
func TestRealCatalogsValid(t *testing.T) {
	for name, dir := range realCatalogs(t) {
		t.Run(name, func(t *testing.T) {
			c, err := LoadDir(context.Background(), dir, Limits{})
			if err != nil {
				t.Fatalf("LoadDir(%s): %v", dir, err)
			}
			fs := Validate(c, ValidateOptions{})
			for _, f := range fs {
				if f.Severity == SeverityError {
					t.Errorf("got error finding %s, want none (opm accepts this catalog)", f)
				} else {
					t.Logf("warning: %s", f)
				}
			}
			if len(c.Packages) == 0 {
				t.Errorf("got 0 packages, want some")
			}
		})
	}
}
