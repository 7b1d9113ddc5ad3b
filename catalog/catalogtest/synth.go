package catalogtest

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing/fstest"
)

// Options shapes a synthetic catalog.
type Options struct {
	// Bundles is the total number of bundles (at least 1).
	Bundles int
	// PerPackage is the number of bundles of each package (default 20).
	PerPackage int
	// Seed makes the catalog reproducible; the same options give the same bytes.
	Seed uint64
	// ObjectsEvery gives every n-th package olm.bundle.object properties (a
	// small CRD and CSV per bundle) instead of olm.csv.metadata; 0 means never.
	ObjectsEvery int
	// Defects, when positive, plants about that many rule violations
	// (stranded entries, bad versions, unknown packages...) at random places.
	Defects int
}

// Generate returns a catalog of one file per package, <package>/catalog.yaml,
// shaped like community catalogs: an olm.package, a stable channel with a
// replaces chain plus skips and skipRange, a fast channel with the newest
// bundles, bundles with olm.package, olm.gvk, olm.csv.metadata (or
// olm.bundle.object) and related images, and a deprecation now and then.
func Generate(opt Options) fstest.MapFS {
	if opt.Bundles < 1 {
		opt.Bundles = 1
	}
	if opt.PerPackage < 1 {
		opt.PerPackage = 20
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x5eed))
	fsys := fstest.MapFS{}
	npkg := (opt.Bundles + opt.PerPackage - 1) / opt.PerPackage
	defects := map[int]bool{}
	for i := 0; i < opt.Defects; i++ {
		defects[rng.IntN(npkg)] = true
	}
	left := opt.Bundles
	for p := 0; p < npkg; p++ {
		n := min(opt.PerPackage, left)
		left -= n
		name := fmt.Sprintf("operator-%05d", p)
		objects := opt.ObjectsEvery > 0 && p%opt.ObjectsEvery == 0
		var b strings.Builder
		writePackage(&b, rng, name, n, objects, defects[p])
		fsys[name+"/catalog.yaml"] = &fstest.MapFile{Data: []byte(b.String()), Mode: 0o644}
	}
	return fsys
}

func version(i int) string { return fmt.Sprintf("%d.%d.%d", 1+i/100, (i/10)%10, i%10) }

func writePackage(b *strings.Builder, rng *rand.Rand, name string, n int, objects, defect bool) {
	fmt.Fprintf(b, "schema: olm.package\nname: %s\ndefaultChannel: stable\n", name)
	fmt.Fprintf(b, "description: |\n  %s manages example workloads.\n  Generated for benchmarks.\n", name)
	b.WriteString("icon:\n  base64data: PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4=\n  mediatype: image/svg+xml\n")

	defectKind := -1
	if defect {
		defectKind = rng.IntN(5)
	}
	// stable: a replaces chain; every 7th entry also skips a withdrawn release
	// (no longer in the catalog), every 5th carries a skipRange.
	b.WriteString("---\nschema: olm.channel\npackage: " + name + "\nname: stable\nentries:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(b, "  - name: %s.v%s\n", name, version(i))
		if i > 0 && !(defectKind == 0 && i == n/2) {
			fmt.Fprintf(b, "    replaces: %s.v%s\n", name, version(i-1))
		}
		if i > 1 && i%7 == 0 {
			fmt.Fprintf(b, "    skips:\n      - %s.v%s-withdrawn\n", name, version(i-1))
		}
		if i > 0 && i%5 == 0 {
			fmt.Fprintf(b, "    skipRange: '>=%s <%s'\n", version(max(0, i-3)), version(i))
		}
	}
	if n >= 3 {
		b.WriteString("---\nschema: olm.channel\npackage: " + name + "\nname: fast\nentries:\n")
		for i := n - 3; i < n; i++ {
			fmt.Fprintf(b, "  - name: %s.v%s\n", name, version(i))
			if i > n-3 {
				fmt.Fprintf(b, "    replaces: %s.v%s\n", name, version(i-1))
			}
		}
	}
	for i := 0; i < n; i++ {
		writeBundle(b, rng, name, i, objects, defectKind)
	}
	if n > 2 && rng.IntN(4) == 0 {
		fmt.Fprintf(b, "---\nschema: olm.deprecations\npackage: %s\nentries:\n  - reference:\n      schema: olm.bundle\n      name: %s.v%s\n    message: %s 0 is broken; upgrade.\n",
			name, name, version(0), name)
	}
}

func writeBundle(b *strings.Builder, rng *rand.Rand, name string, i int, objects bool, defectKind int) {
	ver := version(i)
	bname := fmt.Sprintf("%s.v%s", name, ver)
	digest := fmt.Sprintf("%064x", rng.Uint64())
	pkg := name
	if defectKind == 1 && i == 0 {
		ver = "v" + ver
	}
	if defectKind == 2 && i == 1 {
		pkg = name + "-typo"
	}
	fmt.Fprintf(b, "---\nschema: olm.bundle\npackage: %s\nname: %s\n", pkg, bname)
	if defectKind == 3 && i == 0 {
		b.WriteString("image: quay.io/example/Bad Image:1\n")
	} else {
		fmt.Fprintf(b, "image: quay.io/example/%s-bundle@sha256:%s\n", name, digest)
	}
	b.WriteString("properties:\n")
	fmt.Fprintf(b, "  - type: olm.package\n    value:\n      packageName: %s\n      version: %s\n", name, ver)
	group := strings.ReplaceAll(name, "-", "") + ".example.com"
	fmt.Fprintf(b, "  - type: olm.gvk\n    value:\n      group: %s\n      kind: Widget\n      version: v1\n", group)
	if i > 0 && i%4 == 0 {
		b.WriteString("  - type: olm.package.required\n    value:\n      packageName: operator-00000\n      versionRange: '>=1.0.0'\n")
	}
	if defectKind == 4 && i == 0 {
		b.WriteString("  - type: olm.gvk\n    value:\n      group: 5\n")
	}
	if objects {
		crd := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.%s"},"spec":{"group":"%s","names":{"kind":"Widget","plural":"widgets"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","minimum":%d}}}}}}}]}}`, group, group, i%3)
		csv := fmt.Sprintf(`{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"%s"},"spec":{"version":"%s","displayName":"%s","install":{"strategy":"deployment"}}}`, bname, ver, name)
		fmt.Fprintf(b, "  - type: olm.bundle.object\n    value:\n      data: %s\n", base64.StdEncoding.EncodeToString([]byte(crd)))
		fmt.Fprintf(b, "  - type: olm.bundle.object\n    value:\n      data: %s\n", base64.StdEncoding.EncodeToString([]byte(csv)))
	} else {
		fmt.Fprintf(b, "  - type: olm.csv.metadata\n    value:\n      annotations:\n        capabilities: Basic Install\n        categories: Developer Tools\n        containerImage: quay.io/example/%s@sha256:%s\n", name, digest)
		fmt.Fprintf(b, "      crdDescriptions:\n        owned:\n          - name: widgets.%s\n            version: v1\n            kind: Widget\n            displayName: Widget\n            specDescriptors:\n              - path: size\n                displayName: Size\n                x-descriptors:\n                  - 'urn:alm:descriptor:com.tectonic.ui:podCount'\n", group)
		fmt.Fprintf(b, "      description: Manages widgets.\n      displayName: %s\n      installModes:\n        - type: OwnNamespace\n          supported: true\n        - type: AllNamespaces\n          supported: true\n", name)
		b.WriteString("      keywords:\n        - widgets\n        - example\n      maturity: stable\n      minKubeVersion: 1.27.0\n      provider:\n        name: Example Inc.\n")
	}
	fmt.Fprintf(b, "relatedImages:\n  - name: operator\n    image: quay.io/example/%s@sha256:%s\n  - name: bundle\n    image: quay.io/example/%s-bundle@sha256:%s\n", name, digest, name, digest)
}
