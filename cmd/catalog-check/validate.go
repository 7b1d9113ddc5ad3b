package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
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
	Dir      string `json:"dir"`
	Valid    bool   `json:"valid"`
	Error    string `json:"error,omitempty"` // set when the directory could not be read
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
		Args: cli.MinArgs(1),
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&output, "output", "text", "output format: text or json")
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
			cannotRun = true
			fmt.Fprintf(stderr, "catalog-check validate: %s: %s\n", dir, sum.Error)
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
// working directory by joining them to dir.
func validateDir(ctx context.Context, dir string, timeout time.Duration) (catalogSummary, []catalog.Finding) {
	sum := catalogSummary{Dir: dir}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := catalog.ValidateDir(ctx, dir, catalog.DefaultLimits())
	if err != nil {
		sum.Error = err.Error()
		return sum, nil
	}
	findings := res.Findings
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
	return sum, findings
}

func writeValidateText(w io.Writer, sum catalogSummary, findings []catalog.Finding, quiet, hints bool) {
	if sum.Error != "" {
		fmt.Fprintf(w, "%s: could not validate: %s\n", sum.Dir, sum.Error)
		return
	}
	if !quiet {
		for _, f := range findings {
			// path:line:col: rule-id: message; warnings say so before the message.
			sev := ""
			if f.Severity != catalog.SeverityError {
				sev = string(f.Severity) + ": "
			}
			fmt.Fprintf(w, "%s: %s: %s%s\n", f.Position, f.Rule, sev, f.Message)
			if hints && f.Hint != "" {
				fmt.Fprintf(w, "    hint: %s\n", f.Hint)
			}
		}
	}
	verdict := "valid"
	if !sum.Valid {
		verdict = "INVALID"
	}
	fmt.Fprintf(w, "%s: %s: %s, %s; %s, %s\n", sum.Dir, verdict,
		plural(sum.Packages, "package"), plural(sum.Bundles, "bundle"), plural(sum.Errors, "error"), plural(sum.Warnings, "warning"))
}
