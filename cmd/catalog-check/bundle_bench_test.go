package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkBundleProcessVsOpm measures issue 29's speed claim in one run, process against process:
//
//   - one-bundle: `opm render DIR` against `catalog-check bundle render DIR --image …` and
//     `catalog-check bundle validate DIR` (a fresh process each: start-up included);
//   - all-bundles: `opm render DIR…` against `catalog-check bundle validate DIR…`, one process each for every
//     bundle directory of the shared test data (the community's 131).
//
// The two alternate within each iteration, so the machine's load falls on both alike; the metrics are the
// mean wall time of each (ms), opm's over ours (x-vs-opm: the claim is ≥ 3 for one bundle, ≥ 20 for all),
// the same for CPU time (user + system: on a loaded machine wall time mostly measures the wait for a CPU)
// and the load average when it ended. opm is $OPM, else $CATALOGBOT_TOOLS/bin/opm, else
// ~/.cache/catalogbot/tools/bin/opm (scripts/build-reference-tools.sh builds it); without it, or without the
// shared test data, the benchmark skips and says why. catalog-check is built from this tree.
//
//	go test ./cmd/catalog-check -run '^$' -bench BundleProcessVsOpm -benchtime 5x
func BenchmarkBundleProcessVsOpm(b *testing.B) {
	opm := referenceOpm()
	if opm == "" {
		b.Skip("no opm: set $OPM or $CATALOGBOT_TOOLS, or run scripts/build-reference-tools.sh (~/.cache/catalogbot/tools/bin/opm)")
	}
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		b.Skipf("the shared test data is absent (%s)", root)
	}
	sort.Strings(anns)
	var dirs []string
	for _, a := range anns {
		dirs = append(dirs, filepath.Dir(filepath.Dir(a)))
	}
	ours := filepath.Join(b.TempDir(), "catalog-check")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", ours, ".").CombinedOutput(); err != nil {
		b.Fatalf("building catalog-check: %v\n%s", err, out)
	}
	// The first bundle opm renders (and catalog-check finds valid), for the one-bundle case.
	one := ""
	for _, d := range dirs {
		if _, err := runQuiet(ctx, b, opm, "render", d); err != nil {
			continue
		}
		if _, err := runQuiet(ctx, b, ours, "bundle", "validate", d); err == nil {
			one = d
			break
		}
	}
	if one == "" {
		b.Fatal("no bundle of the shared test data renders with opm and validates with catalog-check")
	}
	b.Run("one-bundle", func(b *testing.B) {
		compareProcesses(ctx, b, []string{opm, "render", one},
			[][]string{{ours, "bundle", "render", one, "--image", "quay.io/example/bundle:v1"}, {ours, "bundle", "validate", one}})
	})
	b.Run(fmt.Sprintf("all-%d-bundles", len(dirs)), func(b *testing.B) {
		compareProcesses(ctx, b, append([]string{opm, "render"}, dirs...), [][]string{append([]string{ours, "bundle", "validate"}, dirs...)})
	})
}

// compareProcesses runs ref and each of ours in turn every iteration and reports their mean wall times, their
// mean CPU times (user + system, which the machine's load moves far less than wall time) and the ratios.
func compareProcesses(ctx context.Context, b *testing.B, ref []string, ours [][]string) {
	var refWall, refCPU time.Duration
	oursWall := make([]time.Duration, len(ours))
	oursCPU := make([]time.Duration, len(ours))
	n := 0
	for b.Loop() {
		t0 := time.Now()
		cpu, err := runQuiet(ctx, b, ref[0], ref[1:]...)
		if err != nil {
			b.Fatalf("%s: %v", strings.Join(ref[:2], " "), err)
		}
		refWall += time.Since(t0)
		refCPU += cpu
		for i, cmd := range ours {
			t0 := time.Now()
			cpu, err := runQuiet(ctx, b, cmd[0], cmd[1:]...)
			if err != nil && !isExit(err, 1) {
				b.Fatalf("catalog-check %s: %v", strings.Join(cmd[1:3], " "), err)
			}
			oursWall[i] += time.Since(t0)
			oursCPU[i] += cpu
		}
		n++
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	b.ReportMetric(ms(refWall), "opm-ms")
	b.ReportMetric(ms(refCPU), "opm-cpu-ms")
	names := []string{"render-", "validate-"}
	if len(ours) == 1 {
		names = []string{"validate-"}
	}
	for i := range ours {
		b.ReportMetric(ms(oursWall[i]), names[i]+"ours-ms")
		b.ReportMetric(float64(refWall)/float64(oursWall[i]), names[i]+"x-vs-opm")
		b.ReportMetric(ms(oursCPU[i]), names[i]+"ours-cpu-ms")
		b.ReportMetric(float64(refCPU)/float64(oursCPU[i]), names[i]+"cpu-x-vs-opm")
	}
	if l, ok := loadAverage(); ok {
		b.ReportMetric(l, "load1")
	}
}

// runQuiet runs a command with its output discarded and returns the CPU time it took (user + system); a
// non-zero exit is an *exec.ExitError.
func runQuiet(ctx context.Context, b *testing.B, name string, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		b.Fatalf("%s: %v", name, err)
	}
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return cpu, err
}

func isExit(err error, code int) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == code
}

// referenceOpm is $OPM, else $CATALOGBOT_TOOLS/bin/opm, else ~/.cache/catalogbot/tools/bin/opm, when it exists.
func referenceOpm() string {
	var candidates []string
	if p := os.Getenv("OPM"); p != "" {
		candidates = append(candidates, p)
	}
	if d := os.Getenv("CATALOGBOT_TOOLS"); d != "" {
		candidates = append(candidates, filepath.Join(d, "bin", "opm"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".cache", "catalogbot", "tools", "bin", "opm"))
	}
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// loadAverage is the one-minute load average (Linux's /proc/loadavg); false elsewhere.
func loadAverage() (float64, bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	var l float64
	if _, err := fmt.Sscanf(string(data), "%f", &l); err != nil {
		return 0, false
	}
	return l, true
}

// BenchmarkBundleValidateAll runs `bundle validate` over every bundle directory of the shared test data in
// process (no start-up): what the all-bundles case of BenchmarkBundleProcessVsOpm spends after main.
//
//	go test ./cmd/catalog-check -run '^$' -bench BundleValidateAll -benchtime 5x
func BenchmarkBundleValidateAll(b *testing.B) {
	anns, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "testdata", "bundles", "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		b.Skip("the shared test data is absent")
	}
	sort.Strings(anns)
	var dirs []string
	for _, a := range anns {
		dirs = append(dirs, filepath.Dir(filepath.Dir(a)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if code := runBundleValidate(context.Background(), dirs, "text", bundleChecks{}, io.Discard, io.Discard, os.Getenv); code > 1 {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N)/float64(len(dirs)), "ms/bundle")
}
