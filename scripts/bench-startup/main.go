// Command bench-startup measures what every catalogbot process pays before it does anything (issue 33.1):
// `catalog-check version` run -runs times, each run once directly for its wall time and CPU time (user +
// system, the kernel's accounting of that process) and once under GNU time for its peak RSS; beside it, in
// the same run and taking turns run by run, the floor (a Go program that only prints a line, built here) and, with -before, another catalog-check
// build (the tree before a change). Then the idle RSS of `catalogbot serve` (SQLite in a temporary directory,
// a GitHub API address that answers nothing, no webhook delivered): once /readyz answers and 2 s later.
//
//	go run ./scripts/bench-startup [-runs 200] [-before OLD_CATALOG_CHECK] [-serve=false] [-items=false]
//
// With -items (the default) it then measures the per-item commands of issue 33.3 against opm, one process
// each, on every bundle directory of -bundles that opm renders (see perItem); opm is -opm, else $OPM, else
// $CATALOGBOT_TOOLS/bin/opm, else ~/.cache/catalogbot/tools/bin/opm, and without it that part is skipped
// with a message.
//
// It prints medians (wall, CPU) and the peak RSS's median and largest, and the load average before and after.
// Needs GNU time at /usr/bin/time (Debian package "time"). Record figures in docs/benchmarks.md.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	runs := flag.Int("runs", 200, "runs of each binary")
	before := flag.String("before", "", "another catalog-check binary to run in turn with this tree's")
	serve := flag.Bool("serve", true, "also measure catalogbot serve's idle RSS")
	items := flag.Bool("items", true, "also measure the per-item commands against opm render (issue 33.3)")
	bundles := flag.String("bundles", filepath.Join("..", "shared", "testdata", "bundles"), "bundle directories for -items")
	opm := flag.String("opm", "", "opm binary for -items")
	itemRounds := flag.Int("item-rounds", 3, "rounds of -items")
	flag.Parse()
	it := itemsConfig{on: *items, bundles: *bundles, opm: referenceOpm(*opm), rounds: *itemRounds}
	if err := run(*runs, *before, *serve, it); err != nil {
		fmt.Fprintln(os.Stderr, "bench-startup:", err)
		os.Exit(2)
	}
}

type itemsConfig struct {
	on           bool
	bundles, opm string
	rounds       int
}

func run(runs int, before string, serve bool, items itemsConfig) error {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		return fmt.Errorf("/usr/bin/time missing (apt-get install time): %w", err)
	}
	if runs < 1 || runs > 100000 {
		return fmt.Errorf("-runs %d: give 1 to 100000", runs)
	}
	work, err := os.MkdirTemp("", "bench-startup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	// The floor: a Go program that prints one line, as `version` does.
	floorDir := filepath.Join(work, "floor")
	if err := os.MkdirAll(floorDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(floorDir, "main.go"), []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"catalog-check dev\\n\") }\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(floorDir, "go.mod"), []byte("module floor\n"), 0o644); err != nil {
		return err
	}
	bins := []side{{name: "floor (Go, prints a line)", path: filepath.Join(work, "floor-bin")}}
	if err := gobuild(floorDir, bins[0].path, "."); err != nil {
		return err
	}
	// CGO_ENABLED=0, as the Dockerfile builds it: a static binary, no dynamic loader at start.
	cc := side{name: "catalog-check version", path: filepath.Join(work, "catalog-check")}
	if err := gobuild(".", cc.path, "./cmd/catalog-check"); err != nil {
		return err
	}
	bins = append(bins, cc)
	if before != "" {
		if _, err := os.Stat(before); err != nil {
			return fmt.Errorf("-before: %w", err)
		}
		bins = append(bins, side{name: "before: " + before, path: before})
	}

	fmt.Printf("load average before: %s", loadavg())
	rss := filepath.Join(work, "rss")
	for range runs {
		for i := range bins {
			if err := bins[i].once(rss); err != nil {
				return err
			}
		}
	}
	fmt.Printf("%d runs each, taking turns run by run; medians (peak RSS: median and largest)\n", runs)
	for _, b := range bins {
		fmt.Printf("  %-40s wall %6.2f ms  CPU %6.2f ms  peak RSS %5.1f MiB (max %5.1f)\n", b.name,
			median(b.wall), median(b.cpu), median(b.rss)/1024, slices.Max(b.rss)/1024)
	}
	fmt.Printf("load average after: %s", loadavg())
	switch {
	case !items.on:
	case items.opm == "":
		fmt.Println("per item: skipped, no opm (set -opm or $OPM, or run scripts/build-reference-tools.sh)")
	default:
		if err := perItem(work, bins[0].path, cc.path, before, items.opm, items.bundles, items.rounds); err != nil {
			return err
		}
	}
	if serve {
		return idle(work)
	}
	return nil
}

func gobuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

type side struct {
	name, path     string
	wall, cpu, rss []float64
}

// once runs the binary's version directly, for its wall and CPU time (wait4's accounting of that process
// alone), then under GNU time for its peak RSS (a child of this Go process would count this process's own
// pages, as exec keeps the parent's high-water mark).
func (s *side) once(rssFile string) error {
	var args []string
	if !strings.HasPrefix(s.name, "floor") {
		args = append(args, "version")
	}
	cmd := exec.Command(s.path, args...)
	cmd.Stdout = io.Discard
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	wall := time.Since(start)
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	tcmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", rssFile, s.path}, args...)...)
	tcmd.Stdout = io.Discard
	if err := tcmd.Run(); err != nil {
		return fmt.Errorf("time %s: %w", s.path, err)
	}
	b, err := os.ReadFile(rssFile)
	if err != nil {
		return err
	}
	kib, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		return fmt.Errorf("GNU time wrote %q: %w", b, err)
	}
	s.wall = append(s.wall, float64(wall.Microseconds())/1000)
	if ru != nil {
		s.cpu = append(s.cpu, float64(ru.Utime.Nano()+ru.Stime.Nano())/1e6)
	}
	s.rss = append(s.rss, kib)
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

// idle starts catalogbot serve with the least configuration it accepts and reads its RSS once it is ready.
func idle(work string) error {
	bin := filepath.Join(work, "catalogbot")
	if err := gobuild(".", bin, "./cmd/catalogbot"); err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyFile := filepath.Join(work, "app.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	data := filepath.Join(work, "data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(), "CATALOGBOT_APP_ID=1", "CATALOGBOT_PRIVATE_KEY_FILE="+keyFile,
		"CATALOGBOT_WEBHOOK_SECRETS=bench-startup", "CATALOGBOT_LISTEN="+addr, "CATALOGBOT_DATA_DIR="+data,
		"CATALOGBOT_GITHUB_API_URL=http://127.0.0.1:1/")
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	client := &http.Client{Timeout: time.Second}
	ready := time.Now()
	for {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("catalogbot serve was not ready within a minute:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("catalogbot serve ready after %.0f ms: %s\n", float64(time.Since(ready).Milliseconds()), status(cmd.Process.Pid))
	time.Sleep(2 * time.Second)
	fmt.Printf("catalogbot serve idle 2 s later: %s\n", status(cmd.Process.Pid))
	return nil
}

// status reads VmRSS (resident now) and VmHWM (its peak) from /proc.
func status(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "VmRSS" || k == "VmHWM") {
			out = append(out, k+" "+strings.Join(strings.Fields(v), " "))
		}
	}
	return strings.Join(out, ", ")
}
