package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/internal/markdown"
	"github.com/catalogbot/catalogbot/policy"
)

// imagesCommand checks the images of catalog directories, or with --repo
// those of the bundles a pull request adds or changes (check --checks images).
func imagesCommand(e env) cli.Command {
	var (
		o          checkOptions
		policyFile string
		flags      *pflag.FlagSet
	)
	return cli.Command{
		Use:   "images DIR... | images --repo PATH --base REV --head REV --author LOGIN",
		Short: "check that bundle and related images exist, are allowed and pinned",
		Long: `Checks that every bundle and related image exists (HEAD requests only), is in an allowed
registry (others are never contacted) and is pinned by digest when the policy requires it.
With DIR, every bundle of the catalog; with --repo, the bundles a pull request adds or changes.`,
		Example: `  catalog-check images catalog/ --policy .catalogbot.yaml
  catalog-check images catalog/ --output json
  catalog-check images --repo . --base origin/main --head HEAD --author alice`,
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json", "github"}}},
		Flags: func(fs *pflag.FlagSet) {
			flags = fs
			fs.StringVar(&policyFile, "policy", "", "policy file whose images section applies (allowedRegistries, requireDigest); default: no restriction")
			fs.StringVarP(&o.output, "output", "o", "text", "output format: text, json or github")
			o.addFlags(fs)
			o.registry.addFlags(fs)
		},
		Run: func(ctx context.Context, dirs []string, stdout, stderr io.Writer) int {
			if flags.Changed("repo") {
				// With --repo this is `check --checks images`: only the bundles the pull request adds or changes.
				switch {
				case len(dirs) > 0:
					fmt.Fprintf(stderr, "catalog-check images: give DIR or --repo, not both (got %q)\n", dirs[0])
					return exitCannotRun
				case policyFile != "":
					fmt.Fprintln(stderr, "catalog-check images: --policy applies to DIR; with --repo the base revision's .catalogbot.yaml does")
					return exitCannotRun
				}
				o.only = "images"
				return runCheck(ctx, o, stdout, stderr, e.getenv)
			}
			for _, name := range []string{"base", "head", "author", "team-members", "direct", "catalog", "cache-dir"} {
				if flags.Changed(name) {
					fmt.Fprintf(stderr, "catalog-check images: --%s needs --repo\n", name)
					return exitCannotRun
				}
			}
			if len(dirs) == 0 {
				fmt.Fprintln(stderr, "catalog-check images: give at least one catalog DIR, or --repo\nRun 'catalog-check images --help' for usage.")
				return exitCannotRun
			}
			return runImages(ctx, dirs, policyFile, o, stdout, stderr, e.getenv)
		},
	}
}

// runImages checks every bundle image of the catalogs in dirs.
func runImages(ctx context.Context, dirs []string, policyFile string, o checkOptions, stdout, stderr io.Writer, getenv func(string) string) int {
	rules := policy.Images{}
	if policyFile != "" {
		data, err := readBoundedFile(policyFile, 1<<20)
		if err != nil {
			fmt.Fprintf(stderr, "catalog-check images: %v\n", err)
			return exitCannotRun
		}
		pol, err := policy.Parse(policyFile, data)
		if err != nil {
			fmt.Fprintf(stderr, "catalog-check images: %v\n", err)
			return exitCannotRun
		}
		rules = pol.Images
	}
	reg, err := o.registry.client()
	if err != nil {
		fmt.Fprintf(stderr, "catalog-check images: %v\n", err)
		return exitCannotRun
	}
	defer reg.Close()

	var refs []checks.ImageRef
	for _, dir := range dirs {
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
		Summary: fmt.Sprintf("%s, %s looked up.", markdown.Count(len(refs), "image reference", "image references"), markdown.Count(asked, "distinct reference", "distinct references"))}
	results := []checks.Result{res}
	if o.output == "github" {
		results = repoRelative(results, getenv)
	}
	return render(stdout, stderr, o.output, results, true, getenv)
}

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
func render(stdout, stderr io.Writer, output string, results []checks.Result, hints bool, getenv func(string) string, graphs ...string) int {
	switch output {
	case "json":
		if err := writeJSON(stdout, results); err != nil {
			fmt.Fprintln(stderr, err)
			return exitCannotRun
		}
	case "github":
		if err := writeGitHub(stdout, results, getenv, graphs...); err != nil {
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
