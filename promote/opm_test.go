package promote

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/opmrun"
	"github.com/catalogbot/catalogbot/policy"
)

const sharedBundles = "../../shared/testdata/bundles"

// TestPromoteMatchesOpm: community bundle directories are built into images on a registry on loopback and
// named by digest in a semver and a basic template; opm renders the v4.16 catalogs (olm.bundle.object).
// Promoting v4.16 to v4.17 — where the community's migrate level changes to olm.csv.metadata — renders each
// new catalog offline from the v4.16 blobs, byte for byte what `opm alpha render-template --migrate-level
// bundle-object-to-csv-metadata` prints after pulling every image.
func TestPromoteMatchesOpm(t *testing.T) {
	if _, err := os.Stat(sharedBundles); err != nil {
		t.Skipf("the shared test data is absent (%s)", sharedBundles)
	}
	opm, why := opmrun.Tool("", "OPM", "opm")
	if why != "" {
		t.Skipf("%s: nothing to compare the promoted catalogs with", why)
	}
	env, err := opmrun.Start("promote-opm-")
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	repo := fstest.MapFS{}
	put := func(name, data string) { repo[name] = &fstest.MapFile{Data: []byte(data), Mode: 0o644} }
	// push builds each bundle directory of a package into its image and returns the references by digest
	// and the CSV names, in version order.
	push := func(pkg string, versions []string) (refs, names []string) {
		for _, v := range versions {
			dir := filepath.Join(sharedBundles, pkg, v)
			b, _, err := bundle.Load(ctx, os.DirFS(dir), bundle.Limits{})
			if err != nil || b == nil {
				t.Fatalf("%s: %v", dir, err)
			}
			img, err := image.BundleImage(ctx, os.DirFS(dir), b.Annotations, image.Limits{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			digest, err := img.Digest()
			if err != nil {
				t.Fatal(err)
			}
			tag, err := name.ParseReference(fmt.Sprintf("%s/bundles/%s:%s", env.Host, pkg, v), name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
				t.Fatal(err)
			}
			refs = append(refs, fmt.Sprintf("%s/bundles/%s@%s", env.Host, pkg, digest))
			names = append(names, b.CSV.Name)
		}
		return refs, names
	}
	renderOpm := func(typ, file string, level string) []byte {
		dir := t.TempDir()
		tf := filepath.Join(dir, "template.yaml")
		if err := os.WriteFile(tf, repo[file].Data, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"alpha", "render-template", typ, tf, "-o", "yaml", "--use-http"}
		if level != "none" {
			args = append(args, "--migrate-level", level)
		}
		cmd := exec.CommandContext(ctx, opm, args...)
		cmd.Env = append(os.Environ(), "HOME="+env.Home)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("opm %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}

	kedaRefs, _ := push("keda", []string{"2.5.0", "2.6.0", "2.6.1", "2.7.1"})
	semver := "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\nstable:\n  bundles:\n"
	for _, r := range kedaRefs {
		semver += "  - image: " + r + "\n"
	}
	put("operators/keda/catalog-templates/semver.yaml", semver)
	put("operators/keda/ci.yaml", "fbc:\n  enabled: true\n  version_promotion_strategy: always\n  catalog_mapping:\n    - template_name: semver.yaml\n      type: olm.semver\n      catalog_names: [v4.15, v4.16]\n")

	jaegerRefs, jaegerNames := push("jaeger", []string{"1.60.0", "1.61.0", "1.62.0", "1.65.0"})
	basic := "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: jaeger\n  defaultChannel: stable\n- schema: olm.channel\n  package: jaeger\n  name: stable\n  entries:\n"
	for i, n := range jaegerNames {
		basic += "  - name: " + n + "\n"
		if i > 0 {
			basic += "    replaces: " + jaegerNames[i-1] + "\n"
		}
	}
	for _, r := range jaegerRefs {
		basic += "- schema: olm.bundle\n  image: " + r + "\n"
	}
	put("operators/jaeger/catalog-templates/basic.yaml", basic)
	put("operators/jaeger/ci.yaml", "reviewers:\n  - alice\nfbc:\n  enabled: true\n  catalog_mapping:\n    - template_name: basic.yaml\n      type: olm.template.basic\n      catalog_names:\n        - v4.16\n")

	for _, p := range []struct{ pkg, typ, tmpl string }{{"keda", "semver", "semver.yaml"}, {"jaeger", "basic", "basic.yaml"}} {
		put("operators/"+p.pkg+"/Makefile", "OPM_VERSION ?= v1.60.0\n")
		put("catalogs/v4.16/"+p.pkg+"/catalog.yaml", string(renderOpm(p.typ, "operators/"+p.pkg+"/catalog-templates/"+p.tmpl, "none")))
	}

	plan, err := Compute(ctx, repo, policy.Default(), Options{From: "v4.16", To: "v4.17"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Packages) != 2 {
		t.Fatalf("%d packages, want 2", len(plan.Packages))
	}
	for _, pk := range plan.Packages {
		if pk.Outcome != Promoted || pk.Method != Rendered {
			t.Errorf("%s: %s %s (%s) %v", pk.Name, pk.Outcome, pk.Method, pk.Reason, pk.Notes)
			continue
		}
		for _, n := range pk.Notes {
			t.Errorf("%s: note %s (the v4.16 catalog is opm's own rendering: no drift, nothing by tag)", pk.Name, n)
		}
		typ, tmpl := "basic", "basic.yaml"
		if pk.Name == "keda" {
			typ, tmpl = "semver", "semver.yaml"
		}
		want := renderOpm(typ, path.Join("operators", pk.Name, "catalog-templates", tmpl), "bundle-object-to-csv-metadata")
		var got []byte
		for _, f := range pk.Files {
			if f.Path == "catalogs/v4.17/"+pk.Name+"/catalog.yaml" {
				got = f.Data
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the promoted v4.17 catalog differs from opm's rendering at line %d", pk.Name, firstDiff(got, want))
		}
		if !strings.Contains(string(got), "olm.csv.metadata") || strings.Contains(string(got), "olm.bundle.object") {
			t.Errorf("%s: the v4.17 catalog is not at the csv-metadata level", pk.Name)
		}
		if res, err := catalog.ValidateFS(ctx, fstest.MapFS{"c.yaml": {Data: got}}, catalog.DefaultLimits()); err != nil || hasError(res.Findings) {
			t.Errorf("%s: the v4.17 catalog does not validate: %v %v", pk.Name, err, res.Findings)
		}
	}
}

func hasError(fs []catalog.Finding) bool {
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return true
		}
	}
	return false
}

func firstDiff(a, b []byte) int {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(al), len(bl)) {
		if !bytes.Equal(al[i], bl[i]) {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
