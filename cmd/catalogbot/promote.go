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
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/catalogbot/catalogbot/promote"
	"github.com/catalogbot/catalogbot/registry"
)

// promoteOptions are the flags of the promote command.
type promoteOptions struct {
	from, to, repo, rev, output string
	packages                    []string
	dryRun, pull                bool
	timeout                     time.Duration
	registryConfig              string
	insecureRegistries          []string
}

// promoteCommand promotes a catalog repository's packages to a new OpenShift catalog version, in a checkout.
func promoteCommand() cli.Command {
	var o promoteOptions
	return cli.Command{
		Use:   "promote",
		Short: "promote every package's catalog to a new OpenShift version, in a local checkout",
		Long: `Promotes the packages of a catalog repository in the community layout (catalogs/<version>/<package>/,
operators/<package>/ci.yaml) from one OpenShift catalog version to the next, as the App's promotion does:
a package whose ci.yaml maps its catalogs to a template (fbc.catalog_mapping) gains the new catalog name in
the entry that names the old one (one line added, the rest of ci.yaml kept) and its new catalog is rendered
from the template as opm alpha render-template renders it, offline (bundle images from the package's
committed catalogs, by digest, and its bundle directories; with --pull also from the registry, only
inside the policy's images.allowedRegistries); any other package's catalog files are copied.

fbc.version_promotion_strategy is honoured: never skips the package; review-needed (the default, as the
community's promotion script has it) and always are promoted — the App opens a pull request per package,
merging the always ones by itself and asking the package's owners to /approve the others; here each package
says which it would be. A package without a catalog of the old version, or whose catalog of the new version
exists already, is left alone with the reason. A malformed ci.yaml is an error on its line, and the package
is skipped; the others are still promoted.

The files are read from the working tree of --repo (or from the commit --rev names) and written into the
working tree; --dry-run only prints the plan. The policy is the repository's .catalogbot.yaml: the command
says whether it declares the new catalog root (add it, or use a pattern such as catalogs/v4.*, so the new
catalog is checked and its image built).`,
		Example: `  catalogbot promote --from v4.22 --to v4.23 --dry-run
  catalogbot promote --from v4.22 --to v4.23 --repo ../community-operators-prod --package etcd --package kepler-operator
  catalogbot promote --from v4.22 --to v4.23 --rev origin/main --output json`,
		Args:     cli.NoArgs,
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json"}}},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.from, "from", "", "the catalog version to promote from: a directory of catalogs/ (v4.22)")
			fs.StringVar(&o.to, "to", "", "the catalog version to promote to (v4.23)")
			fs.StringVar(&o.repo, "repo", ".", "the repository's checkout")
			fs.StringVar(&o.rev, "rev", "", "read the repository at this git revision instead of its working tree (the changes still go to the working tree)")
			fs.StringArrayVar(&o.packages, "package", nil, "only this package (repeatable)")
			fs.BoolVar(&o.dryRun, "dry-run", false, "print what would change, write nothing")
			fs.BoolVar(&o.pull, "pull", false, "pull bundle images that neither the package's catalogs nor its bundle directories render (only from the policy's images.allowedRegistries); without it rendering is offline")
			fs.StringVar(&o.registryConfig, "registry-config", "", "with --pull: docker/podman auth file with registry credentials (default: $REGISTRY_AUTH_FILE, else the standard locations that exist)")
			fs.StringArrayVar(&o.insecureRegistries, "insecure-registry", nil, "with --pull: allow plain HTTP and a loopback/private address for this registry host[:port] (repeatable; for local registries and tests)")
			fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
			fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
		},
		Run: func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			return runPromote(ctx, o, stdout, stderr)
		},
	}
}

func runPromote(ctx context.Context, o promoteOptions, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "catalogbot promote: "+format+"\n", a...)
		return exitCannotRun
	}
	switch {
	case o.from == "" || o.to == "":
		return fail("--from and --to are required: catalogbot promote --from v4.22 --to v4.23")
	case o.output != "text" && o.output != "json":
		return fail("--output must be text or json, not %q", o.output)
	case o.timeout <= 0:
		return fail("--timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	info, err := os.Stat(o.repo)
	if err != nil || !info.IsDir() {
		return fail("--repo %s is not a directory", o.repo)
	}
	var fsys fs.FS = os.DirFS(o.repo)
	if o.rev != "" {
		repo, err := gitfs.Open(o.repo)
		if err != nil {
			return fail("--rev needs a git repository: %v", err)
		}
		defer repo.Close()
		commit, err := repo.Resolve(o.rev)
		if err != nil {
			return fail("--rev %s: %v", o.rev, err)
		}
		tree, err := repo.TreeFS(ctx, commit, gitfs.Limits{})
		if err != nil {
			return fail("--rev %s: %v", o.rev, err)
		}
		fsys = tree
	}
	pol, err := readPolicy(fsys)
	if err != nil {
		return fail("%v", err)
	}
	opt := promote.Options{From: o.from, To: o.to, Packages: o.packages}
	if o.pull {
		client, err := promoteRegistryClient(o)
		if err != nil {
			return fail("%v", err)
		}
		fetch := checks.RegistryBundles{Client: client}.BundleFS
		opt.Pull = func(level string) template.Resolver { return template.FetchResolver(fetch, level) }
	} else if o.registryConfig != "" || len(o.insecureRegistries) > 0 {
		return fail("--registry-config and --insecure-registry need --pull")
	}
	plan, err := promote.Compute(ctx, fsys, pol, opt)
	if err != nil {
		return fail("%v", err)
	}
	written := 0
	if !o.dryRun {
		for _, pk := range plan.Packages {
			if pk.Outcome != promote.Promoted {
				continue
			}
			for _, f := range pk.Files {
				if err := writeRepoFile(o.repo, f.Path, f.Data); err != nil {
					return fail("writing %s: %v (files written so far stay)", f.Path, err)
				}
				written++
			}
		}
	}
	if o.output == "json" {
		if err := writePlanJSON(stdout, plan, o.dryRun); err != nil {
			return fail("%v", err)
		}
	} else {
		writePlanText(stdout, plan, o.dryRun, written)
	}
	for _, pk := range plan.Packages {
		if pk.Err != nil {
			return exitFail
		}
	}
	return exitOK
}

// promoteRegistryClient is the guarded registry client --pull uses.
func promoteRegistryClient(o promoteOptions) (*registry.Client, error) {
	opts := []registry.Option{registry.WithUserAgent("catalogbot-promote")}
	files := registry.DefaultAuthFiles()
	if o.registryConfig != "" {
		files = []string{o.registryConfig}
	}
	for _, f := range files {
		opts = append(opts, registry.WithAuthFile(f))
	}
	if len(o.insecureRegistries) > 0 {
		opts = append(opts, registry.WithAllowedHosts(o.insecureRegistries...), registry.WithInsecureHosts(o.insecureRegistries...))
	}
	c, err := registry.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return c.WithBudget(2000), nil
}

// readPolicy reads .catalogbot.yaml from the tree; absent, the default policy.
func readPolicy(fsys fs.FS) (*policy.Policy, error) {
	data, err := fs.ReadFile(fsys, policy.FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return policy.Default(), nil
	}
	if err != nil {
		return nil, err
	}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("%s is more than 1 MiB", policy.FileName)
	}
	return policy.Parse(policy.FileName, data)
}

// writeRepoFile writes data at the slash-separated repository path name under dir, through a temporary file
// renamed into place.
func writeRepoFile(dir, name string, data []byte) error {
	if !fs.ValidPath(name) || name == "." {
		return fmt.Errorf("not a repository path")
	}
	full := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(full), ".promote-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), full)
}

func writePlanText(w io.Writer, plan *promote.Plan, dryRun bool, written int) {
	verb := "promoted"
	if dryRun {
		verb = "would promote"
	}
	fmt.Fprintf(w, "promotion %s → %s (%s → %s)\n", plan.From, plan.To, plan.SourceRoot, plan.TargetRoot)
	if plan.TargetNote != "" {
		fmt.Fprintf(w, "note: %s\n", plan.TargetNote)
	}
	width := 0
	for _, pk := range plan.Packages {
		width = max(width, len(pk.Name))
	}
	for _, pk := range plan.Packages {
		var what string
		switch pk.Outcome {
		case promote.Promoted:
			paths := make([]string, len(pk.Files))
			for i, f := range pk.Files {
				paths[i] = f.Path
			}
			what = fmt.Sprintf("%s (%s): %s", verb, pk.Method, strings.Join(paths, ", "))
		default:
			what = fmt.Sprintf("%s: %s", pk.Outcome, pk.Reason)
		}
		fmt.Fprintf(w, "%-*s  %-13s  %s\n", width, pk.Name, pk.Strategy, what)
		for _, n := range pk.Notes {
			fmt.Fprintf(w, "%-*s    note: %s\n", width, "", n)
		}
	}
	fmt.Fprintf(w, "%d packages: %d %s (%d always, %d review-needed), %d skipped, %d unchanged",
		len(plan.Packages), plan.Count(promote.Promoted, ""), verb, plan.Count(promote.Promoted, promote.Always), plan.Count(promote.Promoted, promote.ReviewNeeded),
		plan.Count(promote.Skipped, ""), plan.Count(promote.Unchanged, ""))
	if dryRun {
		fmt.Fprintln(w, "; nothing written (--dry-run)")
	} else {
		fmt.Fprintf(w, "; %d files written\n", written)
	}
}

func writePlanJSON(w io.Writer, plan *promote.Plan, dryRun bool) error {
	type pkgJSON struct {
		Name         string   `json:"name"`
		Strategy     string   `json:"strategy"`
		StrategyFrom string   `json:"strategyFrom"`
		Outcome      string   `json:"outcome"`
		Method       string   `json:"method,omitempty"`
		Reason       string   `json:"reason,omitempty"`
		Error        string   `json:"error,omitempty"`
		Files        []string `json:"files,omitempty"`
		Notes        []string `json:"notes,omitempty"`
	}
	out := struct {
		From           string    `json:"from"`
		To             string    `json:"to"`
		TargetRoot     string    `json:"targetRoot"`
		TargetDeclared bool      `json:"targetDeclared"`
		TargetNote     string    `json:"targetNote,omitempty"`
		DryRun         bool      `json:"dryRun"`
		Packages       []pkgJSON `json:"packages"`
	}{From: plan.From, To: plan.To, TargetRoot: plan.TargetRoot, TargetDeclared: plan.TargetDeclared, TargetNote: plan.TargetNote, DryRun: dryRun, Packages: []pkgJSON{}}
	for _, pk := range plan.Packages {
		j := pkgJSON{Name: pk.Name, Strategy: string(pk.Strategy), StrategyFrom: pk.StrategyFrom, Outcome: string(pk.Outcome), Method: string(pk.Method), Reason: pk.Reason, Notes: pk.Notes}
		if pk.Err != nil {
			j.Error = pk.Err.Error()
		}
		for _, f := range pk.Files {
			j.Files = append(j.Files, f.Path)
		}
		out.Packages = append(out.Packages, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
