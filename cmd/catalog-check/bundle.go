package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/cli"
)

// bundleCommand groups the commands on bundle directories.
func bundleCommand(e env) cli.Command {
	return cli.Command{
		Use:   "bundle",
		Short: "commands on registry+v1 bundle directories (manifests/ and metadata/)",
		Commands: []cli.Command{
			bundleValidateCommand(e),
			bundleRenderCommand(),
		},
	}
}

// bundleReport is one directory's verdict in --output json.
type bundleReport struct {
	Dir      string            `json:"dir"`
	Valid    bool              `json:"valid"`
	Package  string            `json:"package,omitempty"`
	CSV      string            `json:"csv,omitempty"`
	Findings []catalog.Finding `json:"findings"`
	Error    string            `json:"error,omitempty"`
}

func bundleValidateCommand(e env) cli.Command {
	var output string
	var olmv1 bool
	return cli.Command{
		Use:   "validate DIR...",
		Short: "validate bundle directories as opm reads them",
		Long: `Reads each bundle directory (manifests/ with one ClusterServiceVersion and its CRDs,
metadata/annotations.yaml, optional dependencies.yaml and properties.yaml) as opm loads a
bundle, and prints every finding as path:line:col: rule-id: message.
Exit 0: every directory is valid; 1: a directory is invalid; 2: could not run.`,
		Example: `  catalog-check bundle validate operators/etcd/0.9.4
  catalog-check bundle validate operators/etcd/* --output json`,
		Args: cli.MinArgs(1),
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&output, "output", "text", "output format: text, json or github")
			fs.BoolVar(&olmv1, "olm-v1", false, "the bundles must be installable by OLM v1 (AllNamespaces, no webhooks, no dependencies): that report's warnings become errors")
		},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return runBundleValidate(ctx, args, output, olmv1, stdout, stderr, e.getenv)
		},
	}
}

func runBundleValidate(ctx context.Context, dirs []string, output string, olmv1 bool, stdout, stderr io.Writer, getenv func(string) string) int {
	switch output {
	case "text", "json", "github":
	default:
		fmt.Fprintf(stderr, "catalog-check bundle validate: unknown output %q (want text, json or github)\n", output)
		return exitCannotRun
	}
	var reports []bundleReport
	code := exitPass
	for _, dir := range dirs {
		rep := bundleReport{Dir: dir, Findings: []catalog.Finding{}}
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			rep.Error = fmt.Sprintf("%s is not a directory", dir)
			code = exitCannotRun
			reports = append(reports, rep)
			continue
		}
		b, fs, err := bundle.Load(ctx, os.DirFS(dir), bundle.Limits{})
		if err != nil {
			rep.Error = err.Error()
			if errors.Is(err, bundle.ErrNotABundle) {
				rep.Error = dir + ": " + err.Error()
			}
			code = exitCannotRun
			reports = append(reports, rep)
			continue
		}
		for _, f := range bundle.OLMv1(b) {
			if olmv1 {
				f.Severity = catalog.SeverityError
			}
			fs = append(fs, f)
		}
		catalog.SortFindings(fs)
		for _, f := range fs {
			f.File = filepath.Join(dir, filepath.FromSlash(f.File))
			rep.Findings = append(rep.Findings, f)
		}
		rep.Valid = !catalog.HasErrors(rep.Findings)
		rep.Package = b.Package
		if b.CSV != nil {
			rep.CSV = b.CSV.Name
		}
		if !rep.Valid && code == exitPass {
			code = exitFail
		}
		reports = append(reports, rep)
	}
	switch output {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			fmt.Fprintln(stderr, err)
			return exitCannotRun
		}
	case "github":
		var results []checks.Result
		for _, r := range reports {
			res := checks.Result{Check: "bundle " + r.Dir, Conclusion: checks.Success, Findings: r.Findings, Err: r.Error}
			if !r.Valid {
				res.Conclusion = checks.Failure
			}
			results = append(results, res)
		}
		if err := writeGitHub(stdout, results, getenv); err != nil {
			fmt.Fprintln(stderr, err)
			return exitCannotRun
		}
	default:
		for _, r := range reports {
			if r.Error != "" {
				fmt.Fprintf(stderr, "catalog-check bundle validate: %s\n", r.Error)
				continue
			}
			errs, warns := 0, 0
			for _, f := range r.Findings {
				sev := ""
				if f.Severity == catalog.SeverityError {
					errs++
				} else {
					warns++
					sev = string(f.Severity) + ": "
				}
				fmt.Fprintf(stdout, "%s: %s: %s%s\n", f.Position, f.Rule, sev, f.Message)
				if f.Hint != "" {
					fmt.Fprintf(stdout, "    hint: %s\n", f.Hint)
				}
			}
			verdict := "valid"
			if !r.Valid {
				verdict = "INVALID"
			}
			fmt.Fprintf(stdout, "%s: %s: package %s, %s; %s, %s\n", r.Dir, verdict, orNone(r.Package), orNone(r.CSV), plural(errs, "error"), plural(warns, "warning"))
		}
	}
	return code
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func bundleRenderCommand() cli.Command {
	var image, migrateLevel string
	return cli.Command{
		Use:   "render DIR --image REF",
		Short: "print the olm.bundle blob opm render makes of a bundle directory",
		Long: `Prints, as JSON, the olm.bundle blob opm render makes of the bundle directory DIR once it
is built into the image REF (catalogbot build-bundle builds and pushes it): the package and
gvk properties, required APIs and packages, the properties of metadata/properties.yaml and
the CSV's olm.properties, one olm.bundle.object per manifest, and the related images.
--migrate-level bundle-object-to-csv-metadata replaces the olm.bundle.object properties by one
olm.csv.metadata, as opm render --migrate-level does.
Exit 0: rendered; 1: the bundle is invalid (the findings go to stderr); 2: could not run.`,
		Example: `  catalog-check bundle render operators/etcd/0.9.4 --image quay.io/acme/etcd-bundle:v0.9.4`,
		Args:    cli.ExactArgs(1),
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&image, "image", "", "the bundle image reference written into the blob (required)")
			fs.StringVar(&migrateLevel, "migrate-level", "none", "opm's migrations to apply: none or bundle-object-to-csv-metadata")
		},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			if image == "" {
				fmt.Fprintln(stderr, "catalog-check bundle render: --image is required (the reference the catalog will pull the bundle by)")
				return exitCannotRun
			}
			if err := bundle.Migrate(nil, nil, migrateLevel); err != nil {
				fmt.Fprintf(stderr, "catalog-check bundle render: --migrate-level: %v\n", err)
				return exitCannotRun
			}
			dir := args[0]
			if info, err := os.Stat(dir); err != nil || !info.IsDir() {
				fmt.Fprintf(stderr, "catalog-check bundle render: %s is not a directory\n", dir)
				return exitCannotRun
			}
			b, fs, err := bundle.Load(ctx, os.DirFS(dir), bundle.Limits{})
			if err != nil {
				fmt.Fprintf(stderr, "catalog-check bundle render: %s: %v\n", dir, err)
				return exitCannotRun
			}
			if catalog.HasErrors(fs) {
				for _, f := range fs {
					f.File = filepath.Join(dir, filepath.FromSlash(f.File))
					fmt.Fprintf(stderr, "%s: %s: %s\n", f.Position, f.Rule, f.Message)
				}
				return exitFail
			}
			r, err := bundle.Render(b, image)
			if err == nil {
				err = bundle.Migrate(r, b, migrateLevel)
			}
			if err != nil {
				fmt.Fprintf(stderr, "catalog-check bundle render: %s: %v\n", dir, err)
				return exitFail
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "    ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(r); err != nil {
				fmt.Fprintln(stderr, err)
				return exitCannotRun
			}
			return exitPass
		},
	}
}
