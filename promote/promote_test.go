package promote

import (
	"bytes"
	"context"
	"os"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/policy"
)

// TestComputeRealTemplates: promoting the 22 community packages of the shared test data from v4.22 to v4.23
// renders each mapped package's new catalog from its template, byte for byte the committed v4.22 catalog
// (same template, same migrate level), adds v4.23 to the mapping, and skips the packages without a v4.22
// catalog with that reason.
func TestComputeRealTemplates(t *testing.T) {
	if _, err := os.Stat(sharedTemplates); err != nil {
		t.Skipf("the shared test data is absent (%s)", sharedTemplates)
	}
	fsys := os.DirFS(sharedTemplates)
	plan, err := Compute(context.Background(), fsys, policy.Default(), Options{From: "v4.22", To: "v4.23"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range plan.Packages {
		t.Logf("%s: %s %s %s (%s) %v %v", pk.Name, pk.Outcome, pk.Method, pk.Strategy, pk.StrategyFrom, pk.Reason, pk.Notes)
		if pk.Outcome != Promoted {
			continue
		}
		for _, f := range pk.Files {
			if path.Base(f.Path) != "catalog.yaml" {
				continue
			}
			old, err := os.ReadFile(path.Join(sharedTemplates, "catalogs", "v4.22", pk.Name, "catalog.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(old, f.Data) && len(pk.Notes) == 0 {
				t.Errorf("%s: the v4.23 catalog differs from v4.22's and no note says so", pk.Name)
			}
		}
	}
}

// TestTargetState: the new root is a catalog when the policy lists it, or when a pattern matches it and the
// directory exists; otherwise the plan says what a maintainer does first.
func TestTargetState(t *testing.T) {
	withDir := fstest.MapFS{"catalogs/v4.23/.indexignore": {Data: []byte("#\n")}}
	without := fstest.MapFS{"catalogs/v4.22/a/catalog.yaml": {Data: []byte("{}")}}
	pol := func(paths ...string) *policy.Policy {
		p := policy.Default()
		for _, c := range paths {
			p.Catalogs = append(p.Catalogs, policy.Catalog{Path: c})
		}
		return p
	}
	for _, c := range []struct {
		name     string
		fsys     fstest.MapFS
		pol      *policy.Policy
		declared bool
		note     string
	}{
		{"listed, absent", without, pol("catalogs/v4.22", "catalogs/v4.23"), true, ""},
		{"pattern, present", withDir, pol("catalogs/v4.*"), true, ""},
		{"pattern, absent", without, pol("catalogs/v4.*"), false, "commits catalogs/v4.23/.indexignore"},
		{"not declared", without, pol("catalogs/v4.22"), false, "adds it to .catalogbot.yaml"},
	} {
		declared, note := targetState(c.fsys, c.pol, "catalogs/v4.23")
		if declared != c.declared || !strings.Contains(note, c.note) {
			t.Errorf("%s: %v %q", c.name, declared, note)
		}
	}
}

// TestRenderedClashFallsBack: a mapped package whose committed catalog is not catalog.yaml (here
// catalog.json) would get a rendered catalog.yaml beside the copied file, every blob twice, which opm
// refuses: the source's files are copied instead, with a note, and the mapping still gains the version.
func TestRenderedClashFallsBack(t *testing.T) {
	repo := sampleRepo(t)
	repo["catalogs/v4.22/acme-operator/catalog.json"] = repo["catalogs/v4.22/acme-operator/catalog.yaml"]
	delete(repo, "catalogs/v4.22/acme-operator/catalog.yaml")
	plan, err := Compute(context.Background(), repo, policy.Default(), Options{From: "v4.22", To: "v4.23", Packages: []string{"acme-operator"}})
	if err != nil {
		t.Fatal(err)
	}
	pk := plan.Packages[0]
	var paths []string
	for _, f := range pk.Files {
		paths = append(paths, f.Path)
	}
	if pk.Outcome != Promoted || pk.Method != Copied || strings.Join(paths, " ") != "catalogs/v4.23/acme-operator/catalog.json operators/acme-operator/ci.yaml" {
		t.Fatalf("%s %s %v %v", pk.Outcome, pk.Method, paths, pk.Notes)
	}
	if len(pk.Notes) == 0 || !strings.Contains(pk.Notes[0], "does not validate") {
		t.Errorf("notes %v", pk.Notes)
	}
}
