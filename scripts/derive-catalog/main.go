// Command derive-catalog writes a catalog of a given size from real ones, for
// benchmarks: every package of each source renamed "<pkg>-<tag>" so that
// catalogs of several OpenShift versions merge (catalogtest.Derive).
//
//	go run ./scripts/derive-catalog -size 150MB -o /tmp/cat-150 DIR[=TAG]...
//
// TAG defaults to DIR's base name from its last "-v" on (v4.16 for catalogs/v4.16 and for
// community-operators-prod-v4.16): package names are DNS labels of at most 63 characters, and a long tag
// would push renamed packages past it (the catalog would not validate, nor be built). With -synth N
// it writes catalogtest.Generate's bundle-dense synthetic catalog of N
// bundles instead (seed 1, every 4th package with olm.bundle.object).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/catalogbot/catalogbot/catalog/catalogtest"
)

func main() {
	size := flag.String("size", "20MB", "bytes to write at least (suffix KB, MB or GB: powers of 1000)")
	out := flag.String("o", "", "directory to create (must not exist)")
	synth := flag.Int("synth", 0, "write a synthetic catalog of this many bundles instead")
	flag.Parse()
	if *synth > 0 && *out != "" {
		if err := writeSynthetic(*out, *synth); err != nil {
			fmt.Fprintln(os.Stderr, "derive-catalog:", err)
			os.Exit(1)
		}
		return
	}
	want, err := parseSize(*size)
	if err != nil || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: derive-catalog -size 150MB -o DIR SOURCE[=TAG]...")
		os.Exit(2)
	}
	var sources []catalogtest.Source
	for _, a := range flag.Args() {
		dir, tag, ok := strings.Cut(a, "=")
		if !ok {
			tag = defaultTag(dir)
		}
		sources = append(sources, catalogtest.Source{Dir: dir, Tag: tag})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	n, err := catalogtest.Derive(ctx, *out, sources, want)
	if err != nil {
		fmt.Fprintln(os.Stderr, "derive-catalog:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d bytes\n", *out, n)
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KB": 1e3, "MB": 1e6, "GB": 1e9} {
		if v, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = v, m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

func writeSynthetic(dir string, bundles int) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("%s exists; give a new directory", dir)
	}
	for name, f := range catalogtest.Generate(catalogtest.Options{Bundles: bundles, Seed: 1, ObjectsEvery: 4}) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// defaultTag is dir's base name, from its last "-v" on when it has one.
func defaultTag(dir string) string {
	tag := filepath.Base(dir)
	if i := strings.LastIndex(tag, "-v"); i >= 0 && i+1 < len(tag) {
		return tag[i+1:]
	}
	return tag
}
