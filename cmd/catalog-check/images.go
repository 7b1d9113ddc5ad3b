package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/policy"
)

func runImages(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// With --repo this is `check --checks images`: only the bundles the pull request adds or changes.
	for _, a := range args {
		if a == "--repo" || a == "-repo" || hasFlagPrefix(a, "--repo=") || hasFlagPrefix(a, "-repo=") {
			return runCheckEnv(ctx, append([]string{"--checks", "images"}, args...), stdout, stderr, os.Getenv)
		}
	}
	fl := flag.NewFlagSet("images", flag.ContinueOnError)
	fl.SetOutput(stderr)
	policyFile := fl.String("policy", "", "policy file whose images section applies (allowedRegistries, requireDigest); default: no restriction")
	output := fl.String("output", "text", "output format: text, json or github")
	rf := addRegistryFlags(fl)
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: catalog-check images [flags] DIR...\n       catalog-check images --repo PATH --base REV --head REV --author LOGIN [flags]\n\nChecks that every bundle and related image exists (HEAD requests only), is in an allowed\nregistry (others are never contacted) and is pinned by digest when the policy requires it.\nWith DIR, every bundle of the catalog; with --repo, the bundles a pull request adds or changes.\n\nflags:")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPass
		}
		return exitCannotRun
	}
	if fl.NArg() == 0 {
		fl.Usage()
		return exitCannotRun
	}
	rules := policy.Images{}
	if *policyFile != "" {
		data, err := readBoundedFile(*policyFile, 1<<20)
		if err != nil {
			fmt.Fprintf(stderr, "catalog-check images: %v\n", err)
			return exitCannotRun
		}
		pol, err := policy.Parse(*policyFile, data)
		if err != nil {
			fmt.Fprintf(stderr, "catalog-check images: %v\n", err)
			return exitCannotRun
		}
		rules = pol.Images
	}
	reg, err := rf.client()
	if err != nil {
		fmt.Fprintf(stderr, "catalog-check images: %v\n", err)
		return exitCannotRun
	}
	defer reg.Close()

	var refs []checks.ImageRef
	for _, dir := range fl.Args() {
		cat, err := catalog.LoadDir(ctx, dir, catalog.Limits{})
		if err != nil {
			fmt.Fprintf(stderr, "catalog-check images: %v\n", err)
			return exitCannotRun
		}
		for _, p := range cat.Packages {
			for _, b := range p.Bundles {
				for _, r := range checks.BundleImageRefs(b) {
					r.Pos.File = joinDisplay(dir, r.Pos.File)
					refs = append(refs, r)
				}
			}
		}
	}
	found, unverified, asked := checks.CheckImageRefs(ctx, reg, rules, refs)
	catalog.SortFindings(found)
	res := checks.Result{Check: "images", Findings: found, Conclusion: checks.Conclude(found, unverified),
		Summary: fmt.Sprintf("%d image reference(s), %d distinct reference(s) looked up.", len(refs), asked)}
	return render(stdout, stderr, *output, []checks.Result{res}, true, os.Getenv)
}

func hasFlagPrefix(a, p string) bool { return len(a) >= len(p) && a[:len(p)] == p }

// joinDisplay joins a directory given on the command line and a slash path inside it.
func joinDisplay(dir, p string) string {
	if dir == "." || dir == "" {
		return p
	}
	if dir[len(dir)-1] == '/' {
		return dir + p
	}
	return dir + "/" + p
}

func readBoundedFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}

// render writes results in the chosen format and returns the exit code.
func render(stdout, stderr io.Writer, output string, results []checks.Result, hints bool, getenv func(string) string) int {
	switch output {
	case "json":
		if err := writeJSON(stdout, results); err != nil {
			fmt.Fprintln(stderr, err)
			return exitCannotRun
		}
	case "github":
		if err := writeGitHub(stdout, results, getenv); err != nil {
			fmt.Fprintln(stderr, err)
			return exitCannotRun
		}
		writeText(stderr, results, false)
	case "text":
		writeText(stdout, results, hints)
	default:
		fmt.Fprintf(stderr, "unknown output %q (want text, json or github)\n", output)
		return exitCannotRun
	}
	return exitCode(checks.Overall(results))
}
