package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/internal/summarycache"
	"github.com/catalogbot/catalogbot/registry"
	"github.com/catalogbot/catalogbot/sign"
)

// buildReport is the JSON shape of `catalogbot build --output json`.
type buildReport struct {
	Catalog   string            `json:"catalog"`
	Valid     bool              `json:"valid"`
	Findings  []catalog.Finding `json:"findings"`
	Base      string            `json:"base_image"`
	Digest    string            `json:"digest,omitempty"`
	Platforms []string          `json:"platforms,omitempty"`
	Pushed    []string          `json:"pushed,omitempty"`
	signSummary
	// Cache says where the layer came from: "hit" (an unchanged catalog, not read again), "miss" or "off".
	Cache string `json:"cache"`
}

// buildOptions are the flags of the build command.
type buildOptions struct {
	dir, base, push, authFile, output string
	cacheDir                          string
	tags, insecure                    []string
	timeout                           time.Duration
	sign                              signOptions
}

// buildCommand validates a catalog directory, builds its image on a base
// pinned by digest and pushes it: the App's rebuild, by hand.
func buildCommand() cli.Command {
	var o buildOptions
	return cli.Command{
		Use:   "build --catalog DIR --base-image REF [--push REF] [--tag T]...",
		Short: "validate a catalog directory, build its image on a base pinned by digest and push it",
		Long: `Validates the catalog in DIR as opm validate would (a catalog with errors is never
pushed), builds its image without Docker on the base image pinned by digest (every
platform of a multi-arch base; the base's layers kept, one /configs layer added) and
pushes it. The same catalog on the same base always gives the same digest.
With --sign-key, the image (the index and each platform) is pushed by digest, signed
as cosign signs and given a SLSA provenance attestation, and only then tagged; a
signing failure fails the command and moves no tag.
Exit 0: built (and pushed); 1: the catalog does not validate; 2: could not run.`,
		Example: `  catalogbot build --catalog catalog --base-image quay.io/operator-framework/opm@sha256:<digest>
  catalogbot build --catalog catalog --base-image quay.io/operator-framework/opm@sha256:<digest> \
      --push registry.example.com/acme/catalog:latest --tag v4.16 --sign-key cosign.key`,
		Args:     cli.NoArgs,
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json"}}},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.dir, "catalog", "", "the file-based catalog directory (required)")
			fs.StringVar(&o.base, "base-image", "", "the opm base image, pinned by digest: registry/repository@sha256:<64 hex> (required)")
			fs.StringVar(&o.push, "push", "", "where to push: registry/repository:tag, or registry/repository with --tag; empty builds and prints the digest only")
			fs.StringArrayVar(&o.tags, "tag", nil, "another tag to push the image with, in the --push repository (repeatable)")
			fs.StringVar(&o.authFile, "registry-config", "", "docker/podman auth file with the credentials to read the base and push (default: $REGISTRY_AUTH_FILE, else the standard locations that exist)")
			fs.StringArrayVar(&o.insecure, "insecure-registry", nil, "allow plain HTTP and a loopback/private address for this registry host[:port] (repeatable; for local registries)")
			fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
			fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
			o.sign.flags(fs)
			fs.StringVar(&o.cacheDir, "cache-dir", "", `where to keep built layers and their validation, so that building an unchanged catalog again reads none of its files (default: $CATALOGBOT_CACHE_DIR, else $XDG_CACHE_HOME/catalogbot, else ~/.cache/catalogbot; "off": keep nothing)`)
		},
		Run: func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			return runBuild(ctx, o, stdout, stderr)
		},
	}
}

// runBuild is the build command once its flags are parsed.
func runBuild(ctx context.Context, o buildOptions, stdout, stderr io.Writer) int {
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "catalogbot build: "+format+"\n", a...)
		return exitCannotRun
	}
	switch {
	case o.dir == "":
		return usageErr("--catalog DIR is required")
	case o.base == "":
		return usageErr("--base-image is required (registry/repository@sha256:<digest>; crane digest IMAGE prints it)")
	case o.output != "text" && o.output != "json":
		return usageErr("--output must be text or json, not %q", o.output)
	case o.push == "" && len(o.tags) > 0:
		return usageErr("--tag needs --push")
	case o.push == "" && o.sign.keyFile != "":
		return usageErr("--sign-key needs --push: what is signed is the pushed image")
	}
	if _, err := name.NewDigest(o.base, name.StrictValidation); err != nil {
		return usageErr("--base-image %q is not pinned by digest (registry/repository@sha256:<64 hex>): %v", o.base, err)
	}
	targets, err := pushTargets(o.push, o.tags)
	if err != nil {
		return usageErr("%v", err)
	}
	reg, err := buildRegistry(o.authFile, o.insecure)
	if err != nil {
		return usageErr("%v", err)
	}
	defer reg.Close()
	signer, signKey, err := o.sign.openSigner(reg)
	if err != nil {
		return usageErr("%v", err)
	}
	started := time.Now().UTC()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	rep := buildReport{Catalog: o.dir, Base: o.base, Findings: []catalog.Finding{}, Cache: "off"}
	cache := openLayerCache(o.cacheDir, os.Getenv, stderr)
	// An unchanged catalog (same files, same metadata) built on this machine before is not read again: its
	// layer and its validation's findings come from the cache.
	var key string
	var layer v1.Layer
	var findings []catalog.Finding
	if cache != nil {
		rep.Cache = "miss"
		if k, ok, err := cache.DirKey(ctx, o.dir, image.Limits{}); err == nil && ok {
			key = k
			if l, fs, hit := cache.Load(key); hit {
				layer, findings, rep.Cache = l, fs, "hit"
			}
		}
	}
	if layer == nil {
		// Validated package by package, as catalog-check validate does: the whole parsed catalog is never
		// held, so the build's memory is the validation's plus the layer's few MiB.
		res, err := catalog.ValidateDir(ctx, o.dir, catalog.DefaultLimits())
		if err != nil {
			fmt.Fprintf(stderr, "catalogbot build: reading the catalog %s: %v\n", o.dir, err)
			return exitCannotRun
		}
		findings = res.Findings
	}
	for _, f := range findings {
		if f.File != "" {
			f.File = filepath.Join(o.dir, filepath.FromSlash(f.File))
		}
		rep.Findings = append(rep.Findings, f)
	}
	rep.Valid = !catalog.HasErrors(rep.Findings)
	if o.output == "text" {
		for _, f := range rep.Findings {
			// path:line:col: rule-id: message, as catalog-check validate prints them.
			sev := ""
			if f.Severity != catalog.SeverityError {
				sev = string(f.Severity) + ": "
			}
			fmt.Fprintf(stdout, "%s: %s: %s%s\n", f.Position, f.Rule, sev, f.Message)
		}
	}
	if !rep.Valid {
		if o.output == "json" {
			writeJSON(stdout, rep)
		} else {
			fmt.Fprintf(stdout, "%s does not validate: nothing built, nothing pushed\n", o.dir)
		}
		return exitFail
	}

	if layer == nil {
		// The validation's garbage is collected before the layer's buffers are taken, so that they reuse its
		// memory rather than grow the heap past it.
		runtime.GC()
		l, err := image.ConfigsLayer(ctx, os.DirFS(o.dir), image.Limits{})
		if err != nil {
			fmt.Fprintf(stderr, "catalogbot build: %v\n", err)
			return exitCannotRun
		}
		layer = l
		// Kept only when no file changed while it was read: the key is taken again and must not have moved.
		if key != "" {
			if again, ok, err := cache.DirKey(ctx, o.dir, image.Limits{}); err == nil && ok && again == key {
				if err := cache.Save(key, layer, findings); err != nil {
					fmt.Fprintf(stderr, "catalogbot build: not keeping the layer: %v\n", err)
				}
			}
		}
	}
	opts := reg.RemoteOptions(ctx)
	built, err := image.BuildOn(ctx, o.base, layer, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "catalogbot build: %v\n", err)
		return exitCannotRun
	}
	d, err := built.Digest()
	if err != nil {
		fmt.Fprintf(stderr, "catalogbot build: %v\n", err)
		return exitCannotRun
	}
	rep.Digest, rep.Platforms = d.String(), built.Platforms
	if o.output == "text" {
		from := ""
		if rep.Cache == "hit" {
			from = " (catalog unchanged since an earlier build: its layer and validation from the cache)"
		}
		fmt.Fprintf(stdout, "built %s for %s%s\n", rep.Digest, strings.Join(rep.Platforms, ", "), from)
	}
	if len(targets) > 0 {
		if signer == nil {
			rep.NotSigned = noKeyLine
			if o.output == "text" {
				fmt.Fprintln(stdout, noKeyLine)
			}
		}
		// With a key: by digest, signed, then tagged; a tag never points at unsigned content.
		_, err := sign.Publish(ctx, signer, sign.Publication{
			Digest: rep.Digest, Tags: targets,
			WriteContent: func(ctx context.Context, ref string) error {
				_, err := built.Push(ctx, ref, opts...)
				return err
			},
			Provenance: func(ctx context.Context) *sign.Provenance {
				prov, perr := o.sign.provenance(ctx, o.dir, sign.BuildTypeCatalog, o.base, started, stderr, "build")
				if perr != nil {
					fmt.Fprintf(stderr, "catalogbot build: %v\n", perr)
				}
				return prov
			},
			Signed: func(_ context.Context, byDigest string, res *sign.Result) error {
				rep.signSummary = summarise(signKey, res)
				if o.output == "text" {
					fmt.Fprintf(stdout, "signed %s with key %s (%d manifests%s)\n", byDigest, rep.Key, len(rep.Signed), attestedWord(rep.Attested))
				}
				return nil
			},
			WriteTag: func(ctx context.Context, ref string) error {
				pushed, err := built.Push(ctx, ref, opts...)
				if err != nil {
					return err
				}
				rep.Pushed = append(rep.Pushed, ref)
				if o.output == "text" {
					fmt.Fprintf(stdout, "pushed %s (%s)\n", ref, pushed)
				}
				return nil
			},
		})
		var signErr *sign.SigningError
		switch {
		case errors.As(err, &signErr):
			fmt.Fprintf(stderr, "catalogbot build: %v\n", err)
			return exitFail
		case err != nil:
			fmt.Fprintf(stderr, "catalogbot build: %v\n", err)
			return exitCannotRun
		}
	}
	if o.output == "json" {
		writeJSON(stdout, rep)
	}
	return exitOK
}

// openLayerCache opens the build's layer cache; nil when it is off or cannot be opened.
func openLayerCache(dir string, getenv func(string) string, stderr io.Writer) *image.DiskCache {
	if dir == "" {
		dir = summarycache.DirFrom(getenv)
	}
	if dir == "" || dir == "off" {
		return nil
	}
	c, err := image.OpenDiskCache(dir, 0)
	if err != nil {
		fmt.Fprintf(stderr, "catalogbot build: not keeping layers: %v\n", err)
		return nil
	}
	return c
}

// pushTargets turns --push and --tag into the tag references to push.
func pushTargets(push string, tags []string) ([]string, error) {
	if push == "" {
		return nil, nil
	}
	host, _, _ := strings.Cut(push, "/")
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return nil, fmt.Errorf("--push %q names no registry: write registry/repository[:tag], e.g. quay.io/acme/catalog:v4.16", push)
	}
	var repo name.Repository
	var out []string
	if t, err := name.NewTag(push, name.StrictValidation); err == nil {
		repo = t.Context()
		out = append(out, t.String())
	} else if r, rerr := name.NewRepository(push, name.StrictValidation); rerr == nil {
		if len(tags) == 0 {
			return nil, fmt.Errorf("--push %q has no tag: add one (:tag) or give --tag", push)
		}
		repo = r
	} else {
		return nil, fmt.Errorf("--push %q is not registry/repository[:tag]: %v", push, err)
	}
	for _, tag := range tags {
		t, err := name.NewTag(repo.Name()+":"+tag, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("--tag %q: %v", tag, err)
		}
		out = append(out, t.String())
	}
	return out, nil
}

// buildRegistry is the guarded registry client reading the base and pushing.
func buildRegistry(authFile string, insecure []string) (*registry.Client, error) {
	opts := []registry.Option{registry.WithUserAgent("catalogbot-build")}
	files := registry.DefaultAuthFiles()
	if authFile != "" {
		files = []string{authFile}
	}
	for _, f := range files {
		opts = append(opts, registry.WithAuthFile(f))
	}
	if len(insecure) > 0 {
		opts = append(opts, registry.WithAllowedHosts(insecure...), registry.WithInsecureHosts(insecure...))
	}
	c, err := registry.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return c, nil
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
