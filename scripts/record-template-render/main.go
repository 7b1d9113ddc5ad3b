// Command record-template-render records what opm renders of generated catalog templates, for the
// differential test of catalog/template.Render.
//
// Every bundle directory of a tree (<package>/<version>/) is built into its bundle image
// (catalog/image.BundleImage, deterministic) and pushed to an in-process registry on loopback. For each
// package the program writes templates — a basic one (package, channels with replaces, skips and
// skipRange, a deprecation, a blob of another schema) and olm.semver ones (minor channels; major and minor
// channels over candidate, fast and stable; major channels preferred) — naming the images by digest, and
// renders each with every opm given (`opm alpha render-template TYPE FILE --use-http`: YAML, JSON, and JSON
// with --migrate-level bundle-object-to-csv-metadata). It keeps, per template and opm, the sha256 of each
// output and a skeleton (the non-bundle blobs and the bundle names) for readable differences. The
// registry's address is written as 127.0.0.1:5000 in templates and outputs, so the goldens do not
// depend on the port.
//
//	go run ./scripts/record-template-render -opm v1.60.0=$CATALOGBOT_TOOLS/bin/opm,v1.69.0=$CATALOGBOT_TOOLS/bin/opm-v1.69.0 \
//	    -bundles ../shared/testdata/bundles -o catalog/template/testdata/opm
//
// Without -opm it records the releases scripts/build-reference-tools.sh builds into $CATALOGBOT_TOOLS/bin;
// with neither, or without the bundle tree, it says what it skips and exits 0.
//
// opm reads ~/.config/containers/policy.json; the program writes an accept-anything policy to a temporary
// HOME for its runs, so nothing of yours is changed.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	mmsemver "github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/opmrun"
)

// Placeholder is the registry host the goldens name: a loopback address, so that it sorts among other
// image references (opm sorts relatedImages) as the real 127.0.0.1:PORT does.
const Placeholder = "127.0.0.1:5000"

func main() {
	opms := flag.String("opm", "", "comma-separated VERSION=BINARY of the opm releases to record (default v1.60.0 and v1.69.0 from $CATALOGBOT_TOOLS/bin)")
	root := flag.String("bundles", "../shared/testdata/bundles", "tree of <package>/<version>/ bundle directories")
	out := flag.String("o", "catalog/template/testdata/opm", "where the templates and goldens go")
	flag.StringVar(&only, "only", "", "record only this package")
	flag.StringVar(&dump, "dump", "", "also write opm's raw outputs under this directory")
	flag.Parse()
	opmrun.NeedDir("record-template-render", *root, "the community bundles of the shared test data, which live beside the repository; give another tree with -bundles")
	if *opms == "" {
		older := opmrun.NeedTool("record-template-render", "", "OPM", "opm")
		newer := opmrun.NeedTool("record-template-render", "", "OPM_NEWER", "opm-v1.69.0")
		*opms = "v1.60.0=" + older + ",v1.69.0=" + newer
	}
	if err := run(*opms, *root, *out); err != nil {
		log.Fatal(err)
	}
}

var only, dump string

type built struct {
	version *mmsemver.Version
	dir     string
	csv     string
	ref     string // with the placeholder host, by digest
}

func run(opms, root, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	env, err := opmrun.Start("record-template-render-")
	if err != nil {
		return err
	}
	defer env.Close()
	host, home := env.Host, env.Home

	pkgs := map[string][]built{}
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	sort.Strings(anns)
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		b, findings, err := bundle.Load(ctx, os.DirFS(dir), bundle.Limits{})
		if err != nil || b == nil || b.CSV == nil {
			log.Printf("skipping %s: %v %v", dir, err, findings)
			continue
		}
		r, err := bundle.Render(b, "x")
		if err != nil {
			continue
		}
		var version string
		for _, p := range r.Properties {
			if p.Type == "olm.package" {
				var v struct{ Version string }
				_ = json.Unmarshal(p.Value, &v)
				version = v.Version
			}
		}
		v, err := mmsemver.StrictNewVersion(version)
		if err != nil {
			log.Printf("skipping %s: version %q: %v", dir, version, err)
			continue
		}
		img, err := image.BundleImage(ctx, os.DirFS(dir), b.Annotations, image.Limits{})
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		repo := "bundles/" + b.Package
		tagRef, err := name.ParseReference(host+"/"+repo+":v"+strings.ReplaceAll(version, "+", "_"), name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(tagRef, img, remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("pushing %s: %w", tagRef, err)
		}
		pkgs[b.Package] = append(pkgs[b.Package], built{version: v, dir: dir, csv: r.Name, ref: Placeholder + "/" + repo + "@" + digest.String()})
	}
	var names []string
	for p := range pkgs {
		names = append(names, p)
		sort.Slice(pkgs[p], func(i, j int) bool { return pkgs[p][i].version.LessThan(pkgs[p][j].version) })
	}
	sort.Strings(names)

	type opmBin struct{ version, path string }
	var bins []opmBin
	for _, kv := range strings.Split(opms, ",") {
		v, p, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("-opm: %q is not VERSION=BINARY", kv)
		}
		bins = append(bins, opmBin{v, p})
	}
	n := 0
	for i, pkg := range names {
		bs := pkgs[pkg]
		if only != "" && pkg != only {
			continue
		}
		cases := map[string]string{"basic": basicTemplate(pkg, bs), "semver-mixed": semverMixed(bs)}
		if i%3 == 0 {
			cases["semver-minor"] = semverMinor(bs)
			cases["semver-major"] = semverMajor(bs)
		}
		for cname, tmpl := range cases {
			dir := filepath.Join(out, pkg+"-"+cname)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, "template.yaml"), []byte(tmpl), 0o644); err != nil {
				return err
			}
			real := filepath.Join(home, "template.yaml")
			if err := os.WriteFile(real, []byte(strings.ReplaceAll(tmpl, Placeholder, host)), 0o644); err != nil {
				return err
			}
			typ := "basic"
			if strings.HasPrefix(cname, "semver") {
				typ = "semver"
			}
			for _, bin := range bins {
				g := golden{Outputs: map[string]string{}}
				for _, o := range []struct{ key, format, level string }{{"yaml", "yaml", ""}, {"json", "json", ""}, {"json-csv-metadata", "json", "bundle-object-to-csv-metadata"}} {
					args := []string{"alpha", "render-template", typ, real, "-o", o.format, "--use-http"}
					if o.level != "" {
						args = append(args, "--migrate-level", o.level)
					}
					cmd := exec.CommandContext(ctx, bin.path, args...)
					cmd.Env = append(os.Environ(), "HOME="+home)
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					raw, err := cmd.Output()
					if err != nil {
						g.Error = strings.TrimSpace(strings.ReplaceAll(stderr.String(), host, Placeholder))
						break
					}
					raw = bytes.ReplaceAll(raw, []byte(host), []byte(Placeholder))
					if dump != "" {
						f := filepath.Join(dump, pkg+"-"+cname, bin.version+"."+o.key)
						_ = os.MkdirAll(filepath.Dir(f), 0o755)
						_ = os.WriteFile(f, raw, 0o644)
					}
					sum := sha256.Sum256(raw)
					g.Outputs[o.key] = hex.EncodeToString(sum[:])
					if o.key == "json" {
						g.Skeleton = skeleton(raw)
					}
				}
				data, _ := json.MarshalIndent(g, "", "  ")
				if err := os.WriteFile(filepath.Join(dir, "opm-"+bin.version+".json"), append(data, '\n'), 0o644); err != nil {
					return err
				}
				n++
			}
		}
	}
	fmt.Printf("record-template-render: %d template renderings recorded into %s\n", n, out)
	return nil
}

type golden struct {
	Outputs  map[string]string `json:"outputs"`
	Skeleton []json.RawMessage `json:"skeleton,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// skeleton keeps every blob but bundles whole, and of bundles their names.
func skeleton(raw []byte) []json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out []json.RawMessage
	for {
		var blob json.RawMessage
		if err := dec.Decode(&blob); err != nil {
			break
		}
		var head struct{ Schema, Name string }
		_ = json.Unmarshal(blob, &head)
		if head.Schema == "olm.bundle" {
			b, _ := json.Marshal(map[string]string{"schema": head.Schema, "name": head.Name})
			out = append(out, b)
			continue
		}
		out = append(out, hashIcon(blob))
	}
	return out
}

// hashIcon compacts a blob and replaces its icon's base64data by its sha256: icons are large and say
// nothing about rendering that the output's hash does not.
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
	var buf bytes.Buffer
	_ = json.Compact(&buf, blob)
	return buf.Bytes()
}

func basicTemplate(pkg string, bs []built) string {
	var w strings.Builder
	fmt.Fprintf(&w, "schema: olm.template.basic\nentries:\n")
	fmt.Fprintf(&w, "  - schema: olm.package\n    name: %s\n    defaultChannel: stable\n    description: \"Rendered for catalogbot's differential test <&>\"\n", pkg)
	fmt.Fprintf(&w, "  - schema: olm.channel\n    package: %s\n    name: stable\n    entries:\n", pkg)
	for i, b := range bs {
		fmt.Fprintf(&w, "      - name: %s\n", b.csv)
		if i > 0 {
			fmt.Fprintf(&w, "        replaces: %s\n", bs[i-1].csv)
		}
		if i > 1 {
			fmt.Fprintf(&w, "        skips:\n          - %s\n", bs[0].csv)
		}
		if i == len(bs)-1 {
			fmt.Fprintf(&w, "        skipRange: '>=0.0.1 <%s'\n", b.version)
		}
	}
	last := bs[len(bs)-1]
	fmt.Fprintf(&w, "  - schema: olm.channel\n    package: %s\n    name: fast\n    entries:\n      - name: %s\n", pkg, last.csv)
	for i := len(bs) - 1; i >= 0; i-- {
		fmt.Fprintf(&w, "  - schema: olm.bundle\n    image: %s\n", bs[i].ref)
	}
	fmt.Fprintf(&w, "  - schema: olm.deprecations\n    package: %s\n    entries:\n      - reference:\n          schema: olm.bundle\n          name: %s\n        message: \"%s is deprecated\"\n", pkg, bs[0].csv, bs[0].csv)
	fmt.Fprintf(&w, "  - schema: example.other\n    package: %s\n    zeta: 1.0\n    alpha: [3, 2e3, \"x\"]\n    nested: {b: true, a: null}\n", pkg)
	return w.String()
}

func semverList(bs []built) string {
	var w strings.Builder
	w.WriteString("  bundles:\n")
	for _, b := range bs {
		fmt.Fprintf(&w, "    - image: %s\n", b.ref)
	}
	return w.String()
}

func semverMinor(bs []built) string {
	return "schema: olm.semver\nstable:\n" + semverList(bs)
}

func semverMixed(bs []built) string {
	n := len(bs)
	fast := bs
	if n > 1 {
		fast = bs[1:]
	}
	stable := bs
	if n > 2 {
		stable = bs[:2]
	}
	return "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\ncandidate:\n" + semverList(bs) + "fast:\n" + semverList(fast) + "stable:\n" + semverList(stable)
}

func semverMajor(bs []built) string {
	return "Schema: olm.semver\nGenerateMajorChannels: true\nGenerateMinorChannels: false\nDefaultChannelTypePreference: major\nCandidate:\n" + semverList(bs[len(bs)-1:]) + "Stable:\n" + semverList(bs)
}
