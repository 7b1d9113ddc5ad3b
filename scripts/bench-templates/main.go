// Command bench-templates measures catalogbot's template rendering against `opm alpha render-template` in one
// run, on the same inputs: the generated templates of catalog/template/testdata/opm (basic and semver
// templates over the community bundles of ../shared/testdata/bundles), whose bundle images are built from the
// bundle directories and served by a registry on loopback to both tools.
//
// For each template it times, each tool writing YAML:
//   - opm: one `opm alpha render-template TYPE FILE --use-http` process (opm pulls every image, every run);
//   - catalog-check: one `catalog-check template render FILE --insecure-registry HOST` process (pulls too);
//   - in process, pulling: catalog/template.Render with images pulled through the registry client;
//   - in process, offline: images resolved from the bundle directories (what the App does for a repository
//     that holds its bundle directories) — and the drift check of the result against opm's output.
//
// It prints total wall time, the sum of the processes' peak RSS, ratios, and the load average.
//
//	go run ./scripts/bench-templates [-opm PATH] [-catalog-check PATH]
//
// opm is -opm, else $OPM, else $CATALOGBOT_TOOLS/bin/opm; with none of them, or without the bundles of
// -bundles (the shared community test data), it says what it skips and exits 0.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/opmrun"
	"github.com/catalogbot/catalogbot/registry"
)

const placeholder = "127.0.0.1:5000"

var opmVersion string

func main() {
	opm := flag.String("opm", "", "the opm binary (default $OPM, else $CATALOGBOT_TOOLS/bin/opm)")
	cc := flag.String("catalog-check", "", "the catalog-check binary (built from this tree if empty)")
	root := flag.String("bundles", "../shared/testdata/bundles", "tree of <package>/<version>/ bundle directories")
	cases := flag.String("templates", "catalog/template/testdata/opm", "directory of <case>/template.yaml")
	limit := flag.Int("n", 0, "only the first n templates (0: all)")
	flag.StringVar(&opmVersion, "opm-version", "v1.60.0", "the release of -opm (catalog-check renders as it does)")
	flag.Parse()
	opmrun.NeedDir("bench-templates", *root, "the community bundles of the shared test data, which live beside the repository; give another tree with -bundles")
	*opm = opmrun.NeedTool("bench-templates", *opm, "OPM", "opm")
	if err := run(*opm, *cc, *root, *cases, *limit); err != nil {
		log.Fatal(err)
	}
}

type timing struct {
	wall   time.Duration
	maxRSS int64 // KiB, sum over processes
}

func run(opm, cc, root, casesDir string, limit int) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "bench-templates-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if cc == "" {
		cc = filepath.Join(tmp, "catalog-check")
		build := exec.Command("go", "build", "-o", cc, "./cmd/catalog-check")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building catalog-check: %w", err)
		}
	}
	env, err := opmrun.Start("bench-templates-")
	if err != nil {
		return err
	}
	defer env.Close()
	host, home := env.Host, env.Home

	// Build and push every bundle image (by digest, as the templates name them).
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	sort.Strings(anns)
	var dirs []string
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		rel, _ := filepath.Rel(root, dir)
		dirs = append(dirs, filepath.ToSlash(rel))
		b, _, err := bundle.Load(ctx, os.DirFS(dir), bundle.Limits{})
		if err != nil || b == nil || b.CSV == nil {
			continue
		}
		img, err := image.BundleImage(ctx, os.DirFS(dir), b.Annotations, image.Limits{})
		if err != nil {
			continue
		}
		ref, err := name.ParseReference(host+"/bundles/"+b.Package+":latest", name.Insecure)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
			return err
		}
	}
	files, _ := filepath.Glob(filepath.Join(casesDir, "*", "template.yaml"))
	sort.Strings(files)
	if limit > 0 && len(files) > limit {
		files = files[:limit]
	}
	type tc struct{ path, typ, body string }
	var tcs []tc
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		body := strings.ReplaceAll(string(data), placeholder, host)
		p := filepath.Join(tmp, filepath.Base(filepath.Dir(f))+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
		typ := "basic"
		if strings.Contains(f, "semver") {
			typ = "semver"
		}
		tcs = append(tcs, tc{p, typ, body})
	}

	var opmT, ccT, inPull, inOffline, drift timing
	opmOut := map[string][]byte{}
	for _, c := range tcs {
		out, t, err := proc(ctx, home, opm, "alpha", "render-template", c.typ, c.path, "-o", "yaml", "--use-http")
		if err != nil {
			return fmt.Errorf("opm %s: %w", c.path, err)
		}
		opmT.add(t)
		opmOut[c.path] = out
		out2, t, err := proc(ctx, home, cc, "template", "render", c.path, "-o", "yaml", "--opm", opmVersion, "--insecure-registry", host)
		if err != nil {
			return fmt.Errorf("catalog-check %s: %w", c.path, err)
		}
		ccT.add(t)
		if !bytes.Equal(out, out2) {
			return fmt.Errorf("%s: catalog-check's output differs from opm's", c.path)
		}
	}
	client, err := registry.New(registry.WithAllowedHosts(host), registry.WithInsecureHosts(host))
	if err != nil {
		return err
	}
	defer client.Close()
	pull := template.FetchResolver(checks.RegistryBundles{Client: client}.BundleFS, "none")
	beh, _ := template.BehaviourOf(opmVersion)
	start := time.Now()
	for _, c := range tcs {
		tmpl, _ := template.Parse(c.path, []byte(c.body), catalog.Limits{})
		out, fs := template.Render(ctx, tmpl, template.Options{Resolver: pull, Behaviour: beh})
		if out == nil {
			return fmt.Errorf("%s: %v", c.path, fs)
		}
		var buf bytes.Buffer
		_ = out.WriteYAML(&buf)
	}
	inPull.wall = time.Since(start)
	dirRes := template.NewDirResolver(os.DirFS(root), dirs, "", "none").AnyRepository()
	// The digests of the bundle directories are learned once (the App keeps them); not timed.
	if tmpl, _ := template.Parse(tcs[0].path, []byte(tcs[0].body), catalog.Limits{}); tmpl != nil {
		template.Render(ctx, tmpl, template.Options{Resolver: dirRes, Behaviour: beh})
	}
	start = time.Now()
	for _, c := range tcs {
		tmpl, _ := template.Parse(c.path, []byte(c.body), catalog.Limits{})
		out, fs := template.Render(ctx, tmpl, template.Options{Resolver: dirRes, Behaviour: beh})
		if out == nil {
			return fmt.Errorf("%s: %v", c.path, fs)
		}
		var buf bytes.Buffer
		_ = out.WriteYAML(&buf)
		inOffline.wall += 0
		d0 := time.Now()
		if f := template.Drift(out, "catalog.yaml", opmOut[c.path], catalog.Limits{}, "fix"); len(f) != 0 {
			return fmt.Errorf("%s: drift against opm's own output: %v", c.path, f)
		}
		drift.wall += time.Since(d0)
	}
	inOffline.wall = time.Since(start) - drift.wall
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("%d templates over %d bundle images on a loopback registry; load average %s", len(tcs), len(dirs), load)
	fmt.Printf("%-44s %10s %12s %8s\n", "", "wall", "peak RSS", "vs opm")
	row := func(label string, t timing) {
		rss := "-"
		if t.maxRSS > 0 {
			rss = fmt.Sprintf("%d MiB", t.maxRSS/1024)
		}
		fmt.Printf("%-44s %10s %12s %7.1fx\n", label, t.wall.Round(time.Millisecond), rss, float64(opmT.wall)/float64(t.wall))
	}
	row("opm alpha render-template (process each)", opmT)
	row("catalog-check template render (process each)", ccT)
	row("in process, pulling each image", inPull)
	row("in process, from bundle directories", inOffline)
	row("drift check of each render vs opm's output", drift)
	fmt.Printf("per template: opm %s, catalog-check %s, in process offline %s (render + drift %s)\n",
		(opmT.wall / time.Duration(len(tcs))).Round(time.Millisecond), (ccT.wall / time.Duration(len(tcs))).Round(time.Millisecond),
		(inOffline.wall / time.Duration(len(tcs))).Round(time.Microsecond), ((inOffline.wall + drift.wall) / time.Duration(len(tcs))).Round(time.Microsecond))
	fmt.Printf("every catalog-check output identical to opm's: yes (%d of %d)\n", len(tcs), len(tcs))
	return nil
}

func (t *timing) add(o timing) {
	t.wall += o.wall
	t.maxRSS += o.maxRSS
}

func proc(ctx context.Context, home, bin string, args ...string) ([]byte, timing, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t := timing{wall: time.Since(start)}
	if cmd.ProcessState != nil { // nil when the process could not start
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			t.maxRSS = ru.Maxrss
		}
	}
	if err != nil {
		return nil, t, fmt.Errorf("%v: %s", err, stderr.String())
	}
	return out, t, nil
}
