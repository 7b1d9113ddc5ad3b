// Command derive-catalog writes a catalog of a given size from real ones, for
// benchmarks: every package of each source renamed "<pkg>-<tag>" so that
// catalogs of several OpenShift versions merge (catalogtest.Derive).
//
//	go run ./scripts/derive-catalog -size 150MB -o /tmp/cat-150 DIR[=TAG]...
//
// TAG defaults to DIR's base name (v4.16 for catalogs/v4.16).
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
	flag.Parse()
	want, err := parseSize(*size)
	if err != nil || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: derive-catalog -size 150MB -o DIR SOURCE[=TAG]...")
		os.Exit(2)
	}
	var sources []catalogtest.Source
	for _, a := range flag.Args() {
		dir, tag, ok := strings.Cut(a, "=")
		if !ok {
			tag = filepath.Base(dir)
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
