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
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/registry"
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
	var olmv1, strict bool
	var suites []string
	var k8sVersion string
	return cli.Command{
		Use:   "validate DIR...",
		Short: "validate bundle directories as opm reads them",
		Long: `Reads each bundle directory (manifests/ with one ClusterServiceVersion and its CRDs,
metadata/ with its annotations and optional dependencies and properties) as opm loads a
bundle, and prints every finding as path:line:col: severity: rule: message.
A bundle is invalid exactly where opm render fails or operator-sdk's default validators
report an error; operator-registry's own format checks are warnings unless --strict.
Exit 0: every directory is valid; 1: a directory is invalid; 2: could not run.`,
		Example: `  catalog-check bundle validate operators/etcd/0.9.4
  catalog-check bundle validate operators/etcd/* --output json`,
		Args:     cli.MinArgs(1),
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json", "github"}}},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&output, "output", "o", "text", "output format: text, json or github")
			fs.BoolVar(&olmv1, "olm-v1", false, "the bundles must be installable by OLM v1 (AllNamespaces, no webhooks, no dependencies): that report's warnings become errors")
			fs.BoolVar(&strict, "strict", false, "operator-registry's bundle format and content checks (opm alpha bundle validate) are errors, as a bundle root's strict: true asks")
			fs.StringArrayVar(&suites, "optional-suite", nil, "also run operator-sdk's optional suite: operatorhub, deprecated-apis, good-practices or operatorframework (all three) (repeatable), as a bundle root's optionalSuites asks")
			fs.StringVar(&k8sVersion, "k8s-version", "", "the Kubernetes version the bundles are meant for (e.g. 1.25, as operator-sdk's --optional-values=k8s-version=): the optional suites' removed APIs are errors from it on; by default the bundle's com.redhat.openshift.versions, olm.maxOpenShiftVersion and minKubeVersion say")
		},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			for _, s := range suites {
				if !slices.Contains(bundle.OptionalSuites, s) {
					fmt.Fprintf(stderr, "catalog-check bundle validate: unknown optional suite %q (known: %s)\n", s, strings.Join(bundle.OptionalSuites, ", "))
					return exitCannotRun
				}
			}
			if k8sVersion != "" {
				if _, err := bundle.ParseK8sVersion(k8sVersion); err != nil {
					fmt.Fprintf(stderr, "catalog-check bundle validate: --k8s-version: %v\n", err)
					return exitCannotRun
				}
			}
			return runBundleValidate(ctx, args, output, bundleChecks{olmv1: olmv1, strict: strict, suites: suites, suiteOptions: bundle.SuiteOptions{K8sVersion: k8sVersion}}, stdout, stderr, e.getenv)
		},
	}
}

// bundleChecks are what bundle validate adds to the reference verdict: OLM v1 installability as errors,
// operator-registry's format checks as errors, operator-sdk's optional suites.
type bundleChecks struct {
	olmv1, strict bool
	suites        []string
	suiteOptions  bundle.SuiteOptions
	// workers bounds the directories judged at once (0: as many as the process may run, GOMAXPROCS).
	workers int
}

func runBundleValidate(ctx context.Context, dirs []string, output string, opts bundleChecks, stdout, stderr io.Writer, getenv func(string) string) int {
	switch output {
	case "text", "json", "github":
	default:
		fmt.Fprintf(stderr, "catalog-check bundle validate: unknown output %q (want text, json or github)\n", output)
		return exitCannotRun
	}
	defer withBundleGC(getenv)()
	reports := validateBundleDirs(ctx, dirs, opts)
	code := exitPass
	for _, rep := range reports {
		switch {
		case rep.Error != "":
			code = exitCannotRun
		case !rep.Valid && code == exitPass:
			code = exitFail
		}
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
		if err := writeGitHub(stdout, repoRelative(results, getenv), getenv); err != nil {
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
				if f.Severity == catalog.SeverityError {
					errs++
				} else {
					warns++
				}
				writeFinding(stdout, f, true)
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

// bundleGCPercent is bundle validate's garbage-collection pace. Each bundle is read, judged and dropped, so
// the live heap is about one bundle a goroutine, and most of what is allocated (the parsed manifests) dies
// young: letting the heap grow to five times the live heap between collections (Go's default is twice)
// spends 15-20% less CPU on the 131 community bundles, for about 40 MiB more peak RSS. The soft limit
// (check's, 256 MiB) brings collections forward near it, so a very large bundle does not hold five times
// its size.
const bundleGCPercent = 400

// withBundleGC sets that pace and the soft limit unless $GOGC or $GOMEMLIMIT says otherwise, and returns what
// puts the previous ones back.
func withBundleGC(getenv func(string) string) (restore func()) {
	restoreLimit := withMemoryLimit(defaultMemoryLimitMiB, getenv)
	if getenv("GOGC") != "" {
		return restoreLimit
	}
	previous := debug.SetGCPercent(bundleGCPercent)
	return func() {
		debug.SetGCPercent(previous)
		restoreLimit()
	}
}

// validateBundleDirs judges each directory, on opts.workers goroutines (a bundle is read, judged and dropped by
// one of them, so at most that many bundles are held at a time); the reports are
// in the order of dirs, whatever order they finish in.
func validateBundleDirs(ctx context.Context, dirs []string, opts bundleChecks) []bundleReport {
	reports := make([]bundleReport, len(dirs))
	workers := opts.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(dirs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(dirs) {
					return
				}
				reports[i] = validateBundleDir(ctx, dirs[i], opts)
			}
		})
	}
	wg.Wait()
	return reports
}

// validateBundleDir is one directory's report: its findings with paths below dir, or the error that kept it
// from being read.
func validateBundleDir(ctx context.Context, dir string, opts bundleChecks) bundleReport {
	rep := bundleReport{Dir: dir, Findings: []catalog.Finding{}}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		rep.Error = fmt.Sprintf("%s is not a directory", dir)
		return rep
	}
	b, fs, err := bundle.Load(ctx, os.DirFS(dir), bundle.Limits{})
	if err != nil {
		rep.Error = err.Error()
		if errors.Is(err, bundle.ErrNotABundle) {
			rep.Error = dir + ": " + err.Error()
		}
		return rep
	}
	if opts.strict {
		bundle.Strict(fs)
	}
	fs = append(fs, bundle.RunSuites(opts.suites, b, opts.suiteOptions)...)
	for _, f := range bundle.OLMv1(b) {
		if opts.olmv1 {
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
	return rep
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func bundleRenderCommand() cli.Command {
	var image, migrateLevel, output string
	var rf registryFlags
	var maxBytes int64
	var timeout time.Duration
	return cli.Command{
		Use:   "render DIR --image REF | render IMAGE",
		Short: "print the olm.bundle blob opm render makes of a bundle directory or a bundle image",
		Long: `Prints, as JSON, the olm.bundle blob opm render makes of a bundle: the package and gvk
properties, required APIs and packages, the properties of metadata/properties.yaml and the
CSV's olm.properties, one olm.bundle.object per manifest, and the related images.

The argument is either a bundle directory (manifests/ and metadata/) or a bundle image:
  - an existing directory is read from disk; --image REF (required) is the reference the
    catalog will pull it by (catalogbot build-bundle builds and pushes it), written into the blob;
  - anything else must be an image reference written in full (registry/repository:tag or
    registry/repository@sha256:…): the image is pulled through the guarded registry client
    (public addresses only unless --insecure-registry allows a host; bounded sizes and time),
    its config must carry the bundle labels, and the blob names the image as you wrote it,
    as opm render does. A name that is both a directory here and an image reference is refused
    as ambiguous: write ./NAME for the directory.
--migrate-level bundle-object-to-csv-metadata replaces the olm.bundle.object properties by one
olm.csv.metadata, as opm render --migrate-level does.
Findings go to stderr and never stop the blob: whatever opm renders is rendered.
Exit 0: rendered; 1: not rendered (opm would not render it either, or it holds a link,
passes a bound or has ambiguous metadata); 2: could not run.`,
		Example: `  catalog-check bundle render operators/etcd/0.9.4 --image quay.io/acme/etcd-bundle:v0.9.4
  catalog-check bundle render quay.io/acme/etcd-bundle:v0.9.4
  catalog-check bundle render localhost:5000/acme/etcd-bundle:v0.9.4 --insecure-registry localhost:5000`,
		Args: cli.ExactArgs(1),
		Complete: map[string]cli.Completion{
			"output":        {Values: []string{"json", "yaml"}},
			"migrate-level": {Values: migrateLevels},
		},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVarP(&output, "output", "o", "json", "output format: json or yaml, as opm render -o prints them")
			fs.StringVar(&image, "image", "", "for a directory: the bundle image reference written into the blob (required)")
			fs.StringVar(&migrateLevel, "migrate-level", "none", "opm's migrations to apply: none or bundle-object-to-csv-metadata")
			fs.Int64Var(&maxBytes, "image-max-bytes", registry.DefaultManifestsMaxBytes, "for an image: at most this many layer bytes are read, compressed and uncompressed each")
			fs.DurationVar(&timeout, "image-timeout", registry.DefaultManifestsTimeout, "for an image: the deadline of the whole pull")
			rf.addFlags(fs)
		},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			if maxBytes <= 0 || timeout <= 0 {
				fmt.Fprintln(stderr, "catalog-check bundle render: --image-max-bytes and --image-timeout must be positive")
				return exitCannotRun
			}
			lim := registry.Limits{MaxBytes: maxBytes, Timeout: timeout}
			return runBundleRender(ctx, args[0], image, migrateLevel, output, &rf, lim, stdout, stderr)
		},
	}
}

// bundleSource says whether arg names a bundle directory (true) or a bundle image (false).
func bundleSource(arg string) (bool, error) {
	info, statErr := os.Stat(arg)
	_, refErr := registry.ParseRef(arg)
	if filepath.IsAbs(arg) || arg == "." || arg == ".." || strings.HasPrefix(arg, "./") || strings.HasPrefix(arg, "../") {
		refErr = errors.New("it is written as a path")
	}
	switch {
	case statErr == nil && info.IsDir() && refErr == nil:
		return false, fmt.Errorf("%s is both a directory here and an image reference; write ./%s for the directory, or run from another directory for the image", arg, arg)
	case statErr == nil && info.IsDir():
		return true, nil
	case statErr == nil:
		return false, fmt.Errorf("%s is a file; give a bundle directory (manifests/ and metadata/) or a bundle image reference", arg)
	case refErr == nil:
		return false, nil
	case errors.Is(statErr, fs.ErrNotExist):
		return false, fmt.Errorf("%s is neither a directory nor an image reference (%v)", arg, refErr)
	}
	return false, fmt.Errorf("%s: %v", arg, statErr)
}

func runBundleRender(ctx context.Context, arg, image, migrateLevel, output string, rf *registryFlags, lim registry.Limits, stdout, stderr io.Writer) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "catalog-check bundle render: "+format+"\n", args...)
		return code
	}
	if output != "json" && output != "yaml" {
		return fail(exitCannotRun, "unknown --output %q (want json or yaml)", output)
	}
	if err := bundle.Migrate(nil, nil, migrateLevel); err != nil {
		return fail(exitCannotRun, "--migrate-level: %v", err)
	}
	isDir, err := bundleSource(arg)
	if err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	var fsys fs.FS
	var where func(catalog.Finding) catalog.Finding
	if isDir {
		if image == "" {
			return fail(exitCannotRun, "--image is required with a directory (the reference the catalog will pull the bundle by)")
		}
		fsys = os.DirFS(arg)
		where = func(f catalog.Finding) catalog.Finding {
			f.File = filepath.Join(arg, filepath.FromSlash(f.File))
			return f
		}
	} else {
		if image != "" {
			return fail(exitCannotRun, "--image is for a directory; the image %s is rendered under the reference given, as opm render does", arg)
		}
		client, err := rf.client()
		if err != nil {
			return fail(exitCannotRun, "%v", err)
		}
		defer client.Close()
		img, err := client.Bundle(ctx, arg, lim)
		if err != nil {
			return fail(exitCannotRun, "%v", err)
		}
		fsys, image = img.FS, arg
		fmt.Fprintf(stderr, "catalog-check bundle render: %s is %s\n", arg, img.Digest)
		where = func(f catalog.Finding) catalog.Finding {
			f.File = "[" + arg + "] " + f.File
			return f
		}
	}
	b, findings, err := bundle.Load(ctx, fsys, bundle.Limits{})
	if err != nil {
		return fail(exitCannotRun, "%s: %v", arg, err)
	}
	// Findings go to stderr and never stop the blob, unless opm itself would not render the bundle (or it
	// holds a link, passes a bound or has ambiguous metadata).
	for _, f := range findings {
		writeFinding(stderr, where(f), true)
	}
	if stop := bundle.NotRenderable(b, findings); stop != nil {
		return fail(exitFail, "%s: not rendered: %s", arg, where(*stop).Message)
	}
	r, err := bundle.Render(b, image)
	if err == nil {
		err = bundle.Migrate(r, b, migrateLevel)
	}
	if err != nil {
		return fail(exitFail, "%s: %v", arg, err)
	}
	if output == "yaml" {
		// One YAML document, as opm render -o yaml writes each blob.
		blob, err := json.Marshal(r)
		if err == nil {
			out := template.Output{Blobs: []template.Blob{{Schema: "olm.bundle", JSON: blob}}}
			err = out.WriteYAML(stdout)
		}
		if err != nil {
			return fail(exitCannotRun, "%v", err)
		}
		return exitPass
	}
	// As encoding/json's indenting encoder writes it (without HTML escapes), byte for byte.
	blob, err := r.AppendJSON(nil, "    ")
	if err == nil {
		_, err = stdout.Write(blob)
	}
	if err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	return exitPass
}
