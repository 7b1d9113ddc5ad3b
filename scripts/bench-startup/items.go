package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// perItem measures issue 33.3's per-item commands, one process each, on every bundle directory under
// bundles that opm renders: `opm render DIR` (the reference: it reads the same directory and writes the
// rendered bundle), `catalog-check bundle validate DIR`, `catalog-check bundle render DIR`, and beside them
// in the same rounds the floor program and `catalog-check version` (what every process pays before it
// reads anything) and `opm version` (the reference's own start-up). The sides take turns directory by
// directory. Wall and CPU time come from running each process directly (wait4's accounting of that process
// alone); the peak RSS from a second run of each under GNU time, in the first round only.
func perItem(work, floor, cc, before, opm, bundles string, rounds int) error {
	anns, _ := filepath.Glob(filepath.Join(bundles, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		return fmt.Errorf("-bundles %s: no <package>/<version>/metadata/annotations.yaml under it", bundles)
	}
	sort.Strings(anns)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var dirs []string
	for _, a := range anns {
		d := filepath.Dir(filepath.Dir(a))
		if exec.CommandContext(ctx, opm, "render", d).Run() == nil {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return fmt.Errorf("opm renders none of the %d bundle directories under %s", len(anns), bundles)
	}
	const image = "quay.io/example/bundle:v1"
	sides := []*itemSide{
		{name: "floor (Go, prints a line)", argv: func(string) []string { return []string{floor} }},
		{name: "opm version", argv: func(string) []string { return []string{opm, "version"} }},
		{name: "opm render DIR (reference)", argv: func(d string) []string { return []string{opm, "render", d} }},
		{name: "catalog-check version", argv: func(string) []string { return []string{cc, "version"} }},
		{name: "catalog-check bundle validate DIR", argv: func(d string) []string { return []string{cc, "bundle", "validate", d} }},
		{name: "catalog-check bundle render DIR", argv: func(d string) []string { return []string{cc, "bundle", "render", d, "--image", image} }},
	}
	if before != "" {
		sides = append(sides,
			&itemSide{name: "before: version", argv: func(string) []string { return []string{before, "version"} }},
			&itemSide{name: "before: bundle validate DIR", argv: func(d string) []string { return []string{before, "bundle", "validate", d} }},
			&itemSide{name: "before: bundle render DIR", argv: func(d string) []string { return []string{before, "bundle", "render", d, "--image", image} }},
		)
	}
	fmt.Printf("\nper item (issue 33.3): %d of %d bundle directories (those opm renders), %d rounds; load average before: %s",
		len(dirs), len(anns), rounds, loadavg())
	rss := filepath.Join(work, "rss-item")
	for r := range rounds {
		for _, d := range dirs {
			for _, s := range sides {
				if err := s.run(ctx, s.argv(d), r == 0, rss); err != nil {
					return err
				}
			}
		}
	}
	ref := sides[2]
	fmt.Printf("medians a process; a pass is the %d processes of one round (median over rounds); ratios: opm render / side\n", len(dirs))
	fmt.Printf("  %-36s %9s %9s %11s %11s %9s %8s %8s\n", "", "wall", "CPU", "wall/pass", "CPU/pass", "peak RSS", "x wall", "x CPU")
	for _, s := range sides {
		fmt.Printf("  %-36s %6.2f ms %6.2f ms %8.0f ms %8.0f ms %5.1f MiB %7.1fx %7.1fx\n", s.name,
			median(s.wall), median(s.cpu), median(s.passes(s.wall, len(dirs))), median(s.passes(s.cpu, len(dirs))),
			median(s.rss)/1024, median(ref.wall)/median(s.wall), median(ref.cpu)/median(s.cpu))
	}
	fmt.Printf("load average after: %s", loadavg())
	return nil
}

type itemSide struct {
	name           string
	argv           func(dir string) []string
	wall, cpu, rss []float64
}

// passes sums each round's values: n per round, in order.
func (s *itemSide) passes(xs []float64, n int) []float64 {
	var out []float64
	for i := 0; i+n <= len(xs); i += n {
		var t float64
		for _, x := range xs[i : i+n] {
			t += x
		}
		out = append(out, t)
	}
	return out
}

// run runs argv once directly (wall, CPU) and, when withRSS, once more under GNU time (peak RSS: a child of
// this Go process would inherit its high-water mark through exec). Exit codes 0 and 1 (a bundle that fails
// a check) are results; anything else is an error.
func (s *itemSide) run(ctx context.Context, argv []string, withRSS bool, rssFile string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil && (cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1) {
		return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	s.wall = append(s.wall, float64(wall.Microseconds())/1000)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.cpu = append(s.cpu, float64(ru.Utime.Nano()+ru.Stime.Nano())/1e6)
	}
	if !withRSS {
		return nil
	}
	tcmd := exec.CommandContext(ctx, "/usr/bin/time", append([]string{"-f", "%M", "-o", rssFile}, argv...)...)
	if err := tcmd.Run(); err != nil && tcmd.ProcessState.ExitCode() != 1 {
		return fmt.Errorf("time %s: %w", strings.Join(argv, " "), err)
	}
	b, err := os.ReadFile(rssFile)
	if err != nil {
		return err
	}
	var kib float64
	lines := strings.Split(strings.TrimSpace(string(b)), "\n") // "Command exited with non-zero status 1" first
	if _, err := fmt.Sscan(lines[len(lines)-1], &kib); err != nil {
		return fmt.Errorf("GNU time wrote %q: %w", b, err)
	}
	s.rss = append(s.rss, kib)
	return nil
}

// referenceOpm is -opm, else $OPM, else $CATALOGBOT_TOOLS/bin/opm, else ~/.cache/catalogbot/tools/bin/opm.
func referenceOpm(flagValue string) string {
	for _, p := range []string{flagValue, os.Getenv("OPM")} {
		if p != "" {
			return p
		}
	}
	dir := os.Getenv("CATALOGBOT_TOOLS")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(cache, "catalogbot", "tools")
	}
	p := filepath.Join(dir, "bin", "opm")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
