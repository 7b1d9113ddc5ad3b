package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/registry"
	"github.com/catalogbot/catalogbot/sign"
)

// buildBundleReport is the JSON shape of `catalogbot build-bundle --output json`.
type buildBundleReport struct {
	Bundle  string            `json:"bundle"`
	Digest  string            `json:"digest"`
	Labels  map[string]string `json:"labels"`
	Pushed  string            `json:"pushed,omitempty"`
	Already bool              `json:"already_pushed,omitempty"`
	signSummary
}

type buildBundleOptions struct {
	push, authFile, output string
	insecure               []string
	timeout                time.Duration
	sign                   signOptions
}

// buildBundleCommand builds a bundle directory into its bundle image and
// pushes it: what the App does after a bundle pull request merges.
func buildBundleCommand() cli.Command {
	var o buildBundleOptions
	return cli.Command{
		Use:   "build-bundle DIR [--push REF]",
		Short: "build a registry+v1 bundle directory into its bundle image without Docker, and push it",
		Long: `Builds the bundle directory DIR (manifests/ and metadata/) into a bundle image as its
generated bundle.Dockerfile would: FROM scratch, manifests/ and metadata/ at the root, the
operators.operatorframework.io.bundle.* annotations (those opm reads) as labels. A directory
that catalog-check bundle validate refuses is not built (same reader, same bounds; links are
never followed nor built in). The same directory always gives the same digest. A tag that
already names another digest is never overwritten: a bundle version, once pushed, does not change.
With --sign-key, the image is pushed by digest, signed as cosign signs and given a SLSA
provenance attestation, and only then tagged; a signing failure fails the command and
writes no tag.
Exit 0: built (and pushed, or already there); 1: refused (the tag holds other content,
or the directory is not a valid bundle); 2: could not run.`,
		Example: `  catalogbot build-bundle operators/etcd/0.9.4
  catalogbot build-bundle operators/etcd/0.9.4 --push quay.io/acme/etcd-bundle:v0.9.4 --sign-key cosign.key`,
		Args:     cli.ExactArgs(1),
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json"}}},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.push, "push", "", "where to push: registry/repository:tag; empty builds and prints the digest only")
			fs.StringVar(&o.authFile, "registry-config", "", "docker/podman auth file with the credentials to push (default: $REGISTRY_AUTH_FILE, else the standard locations that exist)")
			fs.StringArrayVar(&o.insecure, "insecure-registry", nil, "allow plain HTTP and a loopback/private address for this registry host[:port] (repeatable; for local registries)")
			fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
			fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
			o.sign.flags(fs)
		},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return runBuildBundle(ctx, args[0], o, stdout, stderr)
		},
	}
}

// bundleFolders are the folders of a bundle directory its image holds; the image's bound counts them.
var bundleFolders = [...]string{"manifests", "metadata"}

func runBuildBundle(ctx context.Context, dir string, o buildBundleOptions, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "catalogbot build-bundle: "+format+"\n", a...)
		return code
	}
	if o.output != "text" && o.output != "json" {
		return fail(exitCannotRun, "--output must be text or json, not %q", o.output)
	}
	var target name.Tag
	if o.push != "" {
		t, err := name.NewTag(o.push, name.StrictValidation)
		if err != nil || !strings.Contains(o.push, ":") {
			return fail(exitCannotRun, "--push %q is not registry/repository:tag (e.g. quay.io/acme/etcd-bundle:v0.9.4)", o.push)
		}
		if host, _, _ := strings.Cut(o.push, "/"); !strings.ContainsAny(host, ".:") && host != "localhost" {
			return fail(exitCannotRun, "--push %q names no registry: write registry/repository:tag", o.push)
		}
		target = t
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fail(exitCannotRun, "%s is not a directory", dir)
	}
	if o.push == "" && o.sign.keyFile != "" {
		return fail(exitCannotRun, "--sign-key needs --push: what is signed is the pushed image")
	}
	started := time.Now().UTC()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	fsys := os.DirFS(dir)
	// What `catalog-check bundle validate` refuses is not built: the same reader, the same bounds, links
	// never followed. The labels are the annotations opm reads.
	b, findings, err := bundle.Load(ctx, fsys, bundle.Limits{})
	switch {
	case errors.Is(err, bundle.ErrNotABundle):
		return fail(exitFail, "%s: %v", dir, err)
	case err != nil:
		return fail(exitCannotRun, "%s: %v", dir, err)
	}
	if catalog.HasErrors(findings) {
		for _, f := range findings {
			if f.Severity == catalog.SeverityError {
				f.File = filepath.Join(dir, filepath.FromSlash(f.File))
				fmt.Fprintf(stderr, "%s: %s: %s\n", f.Position, f.Rule, f.Message)
			}
		}
		return fail(exitFail, "%s is not a valid bundle (catalog-check bundle validate %s says why); nothing was built", dir, dir)
	}
	ann := b.Annotations
	img, err := image.BundleImage(ctx, fsys, ann, image.Limits{MaxFiles: bundle.DefaultMaxFiles + len(bundleFolders), MaxTotalBytes: bundle.DefaultMaxTotalBytes})
	if err != nil {
		return fail(exitFail, "%s: %v", dir, err)
	}
	d, err := img.Digest()
	if err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	rep := buildBundleReport{Bundle: dir, Digest: d.String(), Labels: cf.Config.Labels}
	if o.output == "text" {
		fmt.Fprintf(stdout, "built %s (package %s)\n", rep.Digest, ann[image.BundleLabelPrefix+"package.v1"])
	}
	if o.push != "" {
		reg, err := buildRegistry(o.authFile, o.insecure)
		if err != nil {
			return fail(exitCannotRun, "%v", err)
		}
		defer reg.Close()
		signer, signKey, err := o.sign.openSigner(reg)
		if err != nil {
			return fail(exitCannotRun, "%v", err)
		}
		if signer == nil {
			rep.NotSigned = noKeyLine
			if o.output == "text" {
				fmt.Fprintln(stdout, noKeyLine)
			}
		}
		// With a key, a tag that names other content is refused before anything is written or signed; then
		// the content by digest, its signature, and only then the tag: the tag never names unsigned content.
		var pushed bool
		_, err = sign.Publish(ctx, signer, sign.Publication{
			Digest: rep.Digest, Tags: []string{target.String()}, WriteOnce: true,
			WriteContent: func(ctx context.Context, ref string) error {
				r, err := reg.Reference(ref)
				if err != nil {
					return err
				}
				if err := remote.Write(r, img, reg.RemoteOptions(ctx)...); err != nil {
					return fmt.Errorf("pushing %s: %w", ref, err)
				}
				return nil
			},
			Provenance: func(ctx context.Context) *sign.Provenance {
				prov, perr := o.sign.provenance(ctx, dir, sign.BuildTypeBundle, "", started, stderr, "build-bundle")
				if perr != nil {
					fmt.Fprintf(stderr, "catalogbot build-bundle: %v\n", perr)
				}
				return prov
			},
			Signed: func(_ context.Context, byDigest string, res *sign.Result) error {
				rep.signSummary = summarise(signKey, res)
				if o.output == "text" {
					fmt.Fprintf(stdout, "signed %s with key %s%s\n", byDigest, rep.Key, attestedWord(rep.Attested))
				}
				return nil
			},
			WriteTag: func(ctx context.Context, ref string) (err error) {
				pushed, err = reg.PushOnce(ctx, ref, img)
				return err
			},
		})
		var taken *registry.TagTakenError
		var signErr *sign.SigningError
		switch {
		case errors.As(err, &taken), errors.As(err, &signErr):
			return fail(exitFail, "%v", err)
		case err != nil:
			return fail(exitCannotRun, "%v", err)
		}
		already := !pushed
		rep.Pushed, rep.Already = target.Context().Name()+"@"+rep.Digest, already
		if o.output == "text" {
			if already {
				fmt.Fprintf(stdout, "%s already holds %s: nothing pushed\n", o.push, rep.Digest)
			} else {
				fmt.Fprintf(stdout, "pushed %s (%s)\n", o.push, rep.Pushed)
			}
		}
	}
	if o.output == "json" {
		writeJSON(stdout, rep)
	}
	return exitOK
}
