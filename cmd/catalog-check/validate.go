package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/internal/cli"
)

// validateReport is the JSON shape of `catalog-check validate --output json`.
type validateReport struct {
	Valid    bool              `json:"valid"`
	Findings []catalog.Finding `json:"findings"`
	Catalogs []catalogSummary  `json:"catalogs"`
}

// catalogSummary is the outcome for one DIR argument.
type catalogSummary struct {
	Dir   string `json:"dir"`
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"` // set when the directory could not be validated as asked
	// Warning says why a catalog that passed may not be what was meant (an empty directory).
	Warning  string `json:"warning,omitempty"`
	Packages int    `json:"packages"`
	Bundles  int    `json:"bundles"`
	Errors   int    `json:"errors"`
	Warnings int    `json:"warnings"`
}

// validateCommand validates each DIR as its own catalog root, as opm validate would.
func validateCommand() cli.Command {
	var (
		output  string
		quiet   bool
		noHints bool
		timeout time.Duration
	)
	return cli.Command{
		Use:   "validate DIR...",
		Short: "validate file-based catalogs as opm validate does, with file:line for every finding",
		Long: `Validates each DIR as a file-based catalog root, with the verdict of opm validate
(v1.60.0, plus the image and skipRange checks of newer opm) and file:line:col for
every finding. Exit 0: valid (warnings allowed); 1: invalid; 2: could not run.`,
		Example: `  catalog-check validate catalog/
  catalog-check validate catalog/ --output json
  catalog-check validate -q catalogs/a catalogs/b`,
		Args:     cli.MinArgs(1),
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json"}}},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&output, "output", "o", "text", "output format: text or json")
			fs.BoolVarP(&quiet, "quiet", "q", false, "print only the summary line of each catalog (text output)")
			fs.BoolVar(&noHints, "no-hints", false, "do not print a hint under each finding (text output)")
			fs.DurationVar(&timeout, "timeout", 5*time.Minute, "give up reading a catalog after this long")
		},
		Run: func(ctx context.Context, dirs []string, stdout, stderr io.Writer) int {
			if output != "text" && output != "json" {
				fmt.Fprintf(stderr, "catalog-check validate: --output must be text or json, not %q\n", output)
				return exitCannotRun
			}
			return runValidate(ctx, dirs, output, quiet, !noHints, timeout, stdout, stderr)
		},
	}
}

// runValidate validates each of dirs and writes the report.
func runValidate(ctx context.Context, dirs []string, output string, quiet, hints bool, timeout time.Duration, stdout, stderr io.Writer) int {
	report := validateReport{Valid: true, Findings: []catalog.Finding{}}
	cannotRun := false
	for _, dir := range dirs {
		sum, findings := validateDir(ctx, dir, timeout)
		if sum.Error != "" {
			// Said once, on stderr; the JSON report carries it in the catalog's entry.
			cannotRun = true
			fmt.Fprintf(stderr, "catalog-check validate: %s\n", sum.Error)
		}
		report.Valid = report.Valid && sum.Valid
		report.Catalogs = append(report.Catalogs, sum)
		report.Findings = append(report.Findings, findings...)
		if output == "text" {
			writeValidateText(stdout, sum, findings, quiet, hints)
		}
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			fmt.Fprintf(stderr, "catalog-check validate: %v\n", err)
			return exitCannotRun
		}
	}
	switch {
	case cannotRun:
		return exitCannotRun
	case !report.Valid:
		return exitFail
	}
	return exitPass
}

// validateDir validates one catalog root, package by package (it never
// holds the whole parsed catalog). Finding paths are made relative to the
// working directory by joining them to dir. A directory that is not a
// catalog root — a tree of bundle directories, or the parent of several
// catalogs — is said to be so (with the command to run instead) in place of
// the findings its files would give.
func validateDir(ctx context.Context, dir string, timeout time.Duration) (catalogSummary, []catalog.Finding) {
	sum := catalogSummary{Dir: dir}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		sum.Error = fmt.Sprintf("%s: no such directory", dir)
		return sum, nil
	case err != nil:
		sum.Error = err.Error()
		return sum, nil
	case !st.IsDir():
		sum.Error = fmt.Sprintf("%s is a file; give the catalog's root directory (the one opm validate is given)", dir)
		return sum, nil
	}
	res, err := catalog.ValidateDir(ctx, dir, catalog.DefaultLimits())
	if err != nil {
		sum.Error = fmt.Sprintf("%s: %v", dir, err)
		return sum, nil
	}
	findings := res.Findings
	if res.Packages == 0 {
		if n, example, pattern := bundleTree(dir); n > 0 {
			sum.Error = fmt.Sprintf("%s is a bundle directory tree, not a file-based catalog: it holds %d bundle directories (manifests/ and metadata/), such as %s. "+
				"Validate bundles with: catalog-check bundle validate %s", dir, n, example, pattern)
			if n == 1 {
				sum.Error = fmt.Sprintf("%s is a bundle directory (manifests/ and metadata/), not a file-based catalog. "+
					"Validate it with: catalog-check bundle validate %s", dir, pattern)
			}
			return sum, nil
		}
	}
	if res.Packages == 0 && res.Bundles == 0 {
		if n, example := templateTree(dir); n > 0 {
			what := fmt.Sprintf("a tree of package directories with ci.yaml files or catalog templates (%d of them)", n)
			if strings.HasPrefix(example, filepath.Join(dir, "catalog-templates")+string(filepath.Separator)) {
				what = "a package directory with a ci.yaml file or catalog templates"
			}
			sum.Error = fmt.Sprintf("%s is %s, not a file-based catalog; "+
				"render a template into the catalog it stands for with: catalog-check template render %s (ci.yaml's fbc.catalog_mapping names the catalogs it renders to), "+
				"then validate that catalog's root", dir, what, example)
			return sum, nil
		}
	}
	if roots := severalCatalogs(findings); len(roots) > 1 {
		args := make([]string, len(roots))
		for i, r := range roots {
			args[i] = filepath.Join(dir, filepath.FromSlash(r))
		}
		sum.Error = fmt.Sprintf("%s holds several catalogs (%d directories declare the same packages): validate each as its own root: catalog-check validate %s",
			dir, len(args), strings.Join(args, " "))
		return sum, nil
	}
	for i := range findings {
		f := &findings[i]
		f.File = filepath.Join(dir, filepath.FromSlash(f.File))
		if f.Severity == catalog.SeverityError {
			sum.Errors++
		} else {
			sum.Warnings++
		}
	}
	sum.Packages, sum.Bundles = res.Packages, res.Bundles
	sum.Valid = sum.Errors == 0
	if res.Packages == 0 && res.Bundles == 0 && sum.Errors == 0 {
		sum.Warning = fmt.Sprintf("%s holds no catalog content: no olm.package, olm.channel or olm.bundle was found in it; is it the catalog's root?", dir)
	}
	return sum, findings
}

// bundleTree looks for registry+v1 bundle directories at dir, in its subdirectories and in theirs
// (operators/<package>/<version>, as catalog repositories keep them), and returns how many it found, the
// first, and the shell pattern naming them for `catalog-check bundle validate`. It reads at most a few
// thousand directory entries.
func bundleTree(dir string) (n int, example, pattern string) {
	isBundle := func(d string) bool {
		if st, err := os.Stat(filepath.Join(d, "metadata", "annotations.yaml")); err == nil && !st.IsDir() {
			return true
		}
		m, err1 := os.Stat(filepath.Join(d, "manifests"))
		md, err2 := os.Stat(filepath.Join(d, "metadata"))
		return err1 == nil && err2 == nil && m.IsDir() && md.IsDir()
	}
	if isBundle(dir) {
		return 1, dir, dir
	}
	budget := 4096
	subdirs := func(d string) []string {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil
		}
		var out []string
		for _, e := range entries {
			if budget--; budget < 0 {
				break
			}
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
		return out
	}
	level1 := subdirs(dir)
	for _, d := range level1 {
		if isBundle(d) {
			n++
			if example == "" {
				example = d
			}
		}
	}
	if n > 0 {
		return n, example, filepath.Join(dir, "*")
	}
	for _, d1 := range level1 {
		for _, d := range subdirs(d1) {
			if isBundle(d) {
				n++
				if example == "" {
					example = d
				}
			}
		}
	}
	return n, example, filepath.Join(dir, "*", "*")
}

// templateTree looks for the package directories of a catalog repository that keep no bundle directories,
// only a ci.yaml and catalog templates (operators/<package>/ci.yaml, operators/<package>/catalog-templates/),
// at dir and one level below, and returns how many it found and a template (or a placeholder) to render. It
// reads at most a few thousand directory entries.
func templateTree(dir string) (n int, example string) {
	budget := 4096
	isPackage := func(d string) bool {
		if st, err := os.Stat(filepath.Join(d, "ci.yaml")); err == nil && !st.IsDir() {
			return true
		}
		st, err := os.Stat(filepath.Join(d, "catalog-templates"))
		return err == nil && st.IsDir()
	}
	consider := func(d string) {
		if !isPackage(d) {
			return
		}
		n++
		if example != "" {
			return
		}
		entries, _ := os.ReadDir(filepath.Join(d, "catalog-templates"))
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".json")) {
				example = filepath.Join(d, "catalog-templates", e.Name())
				return
			}
		}
	}
	consider(dir)
	if n > 0 {
		if example == "" {
			example = filepath.Join(dir, "catalog-templates", "TEMPLATE.yaml")
		}
		return n, example
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, ""
	}
	for _, e := range entries {
		if budget--; budget < 0 {
			break
		}
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			consider(filepath.Join(dir, e.Name()))
		}
	}
	if n > 0 && example == "" {
		example = filepath.Join(dir, "PACKAGE", "catalog-templates", "TEMPLATE.yaml")
	}
	return n, example
}

// severalCatalogs tells a directory holding several catalogs (catalogs/v4.16, catalogs/v4.17…, which
// declare the same packages) from one catalog: every package.duplicate finding (at least two of them)
// pairs two package folders under two different directories, the catalogs' roots. It returns those roots,
// sorted (slash-separated, relative to the directory validated), or nil.
//
// The files declaring one package (the first declaration and every later one) lie in pairwise different
// catalogs, so every two of them part at two roots. A directory that is the parting point of some pair but
// holds another such point below it (catalogs/ beside templates/catalogs/v4.12, each holding catalogs of
// their own) is a parent of catalogs, not a catalog: only the innermost roots are returned, so the command
// printed with them validates each catalog once.
func severalCatalogs(findings []catalog.Finding) []string {
	const marker = "first declared at "
	groups := map[string][]string{} // first declaration's file -> the files declaring the package again
	dups := 0
	for _, f := range findings {
		if f.Rule != "package.duplicate" {
			continue
		}
		dups++
		i := strings.LastIndex(f.Message, marker)
		if i < 0 {
			return nil
		}
		first := f.Message[i+len(marker):]
		if j := strings.IndexByte(first, ':'); j >= 0 {
			first = first[:j]
		}
		groups[first] = append(groups[first], f.File)
	}
	if dups < 2 {
		return nil
	}
	const maxGroup = 64 // files of one package compared pairwise; more are not needed to find the roots
	roots := map[string]bool{}
	for first, files := range groups {
		files = append([]string{first}, files...)
		if len(files) > maxGroup {
			files = files[:maxGroup]
		}
		for x := 0; x < len(files); x++ {
			for y := x + 1; y < len(files); y++ {
				a, b := strings.Split(files[x], "/"), strings.Split(files[y], "/")
				k := 0
				for k < len(a) && k < len(b) && a[k] == b[k] {
					k++
				}
				// Each side is <catalog root>/<package folder>/<file> at least below where they part.
				if len(a)-k < 3 || len(b)-k < 3 {
					return nil
				}
				roots[strings.Join(a[:k+1], "/")], roots[strings.Join(b[:k+1], "/")] = true, true
			}
		}
	}
	out := make([]string, 0, len(roots))
	for r := range roots {
		inner := false
		for o := range roots {
			if strings.HasPrefix(o, r+"/") {
				inner = true
				break
			}
		}
		if !inner {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

func writeValidateText(w io.Writer, sum catalogSummary, findings []catalog.Finding, quiet, hints bool) {
	if sum.Error != "" {
		return // said on stderr
	}
	if !quiet {
		for _, f := range findings {
			writeFinding(w, f, hints)
		}
	}
	if sum.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", sum.Warning)
	}
	verdict := "valid"
	if !sum.Valid {
		verdict = "INVALID"
	}
	fmt.Fprintf(w, "%s: %s: %s, %s; %s, %s\n", sum.Dir, verdict,
		plural(sum.Packages, "package"), plural(sum.Bundles, "bundle"), plural(sum.Errors, "error"), plural(sum.Warnings, "warning"))
}
