// Command bench-warm-check times what the App spends on one pull request once
// it has seen the repository: a full check (ownership, validation,
// immutability, crd-safety; no registry) repeated N times with the App's
// caches shared between runs (file summary index, parse cache, decoded
// trees, parsed policy), each run opening the repository afresh as the App
// does. It prints the median, the fastest and the slowest run.
//
//	go run ./scripts/bench-warm-check -n 30 REPO BASE HEAD
//
// -lines=false leaves out the changed-lines cache, to measure what it saves.
//
// scripts/bench-growth.sh keeps BenchmarkCheckPR's repositories under
// $WORK/pr-MB; BASE and HEAD are its last two commits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/load"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
)

func main() {
	n := flag.Int("n", 30, "runs after the first")
	keepLines := flag.Bool("lines", true, "share the changed-lines cache between runs, as the App does (false: compare the changed files' blobs on every run, as before issue 33.4)")
	flag.Parse()
	if flag.NArg() != 3 {
		fmt.Fprintln(os.Stderr, "usage: bench-warm-check [-n 30] [-lines=false] REPO BASE HEAD")
		os.Exit(2)
	}
	dir, base, head := flag.Arg(0), flag.Arg(1), flag.Arg(2)
	ctx := context.Background()
	lim := catalog.Limits{Cache: load.NewParseCache(256 << 20), Index: load.NewSummaryIndex(0)}
	objects, policies := gitfs.NewObjectCache(), gitpr.NewPolicyCache()
	var lines *checks.LineDiffCache
	if *keepLines {
		lines = checks.NewLineDiffCache(0)
	}
	run := func() (time.Duration, error) {
		start := time.Now()
		repo, err := gitfs.OpenShared(dir, objects)
		if err != nil {
			return 0, err
		}
		defer repo.Close()
		pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: base, Head: head, Author: "bob", DiffFromMergeBase: true, Limits: lim, Policies: policies, Lines: lines})
		if err != nil {
			return 0, err
		}
		if err := checks.Prepare(ctx, pr); err != nil {
			return 0, err
		}
		runner := checks.NewRunner([]checks.Check{checks.Ownership{}, checks.Validation{}, checks.Immutability{}, checks.CRDSafety{}})
		for _, r := range runner.Run(ctx, pr) {
			if r.Err != "" {
				return 0, fmt.Errorf("%s: %v", r.Check, r.Err)
			}
		}
		return time.Since(start), nil
	}
	first, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-warm-check:", err)
		os.Exit(1)
	}
	var ds []time.Duration
	for range *n {
		d, err := run()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-warm-check:", err)
			os.Exit(1)
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("first %.1f ms, then median %.1f ms (min %.1f, max %.1f) over %d runs\n", ms(first), ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]), len(ds))
}
