package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/registry"
)

// buildBundleReport is the JSON shape of `catalogbot build-bundle --output json`.
type buildBundleReport struct {
	Bundle  string            `json:"bundle"`
	Digest  string            `json:"digest"`
	Labels  map[string]string `json:"labels"`
	Pushed  string            `json:"pushed,omitempty"`
	Already bool              `json:"already_pushed,omitempty"`
}

type buildBundleOptions struct {
	push, authFile, output string
	insecure               []string
	timeout                time.Duration
}

// buildBundleCommand builds a bundle directory into its bundle image and
// pushes it: what the App does after a bundle pull request merges.
func buildBundleCommand() cli.Command {
	var o buildBundleOptions
	return cli.Command{
		Use:   "build-bundle DIR [--push REF]",
		Short: "build a registry+v1 bundle directory into its bundle image without Docker, and push it",
		Long: `Builds the bundle directory DIR (manifests/ and metadata/annotations.yaml) into a bundle
image as its generated bundle.Dockerfile would: FROM scratch, manifests/ and metadata/
at the root, the operators.operatorframework.io.bundle.* annotations as labels. The same
directory always gives the same digest. A tag that already names another digest is
never overwritten: a bundle version, once pushed, does not change.
Exit 0: built (and pushed, or already there); 1: refused (the tag holds other content,
or the directory is not a bundle); 2: could not run.`,
		Example: `  catalogbot build-bundle operators/etcd/0.9.4
  catalogbot build-bundle operators/etcd/0.9.4 --push quay.io/acme/etcd-bundle:v0.9.4`,
		Args: cli.ExactArgs(1),
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.push, "push", "", "where to push: registry/repository:tag; empty builds and prints the digest only")
			fs.StringVar(&o.authFile, "registry-config", "", "docker/podman auth file with the credentials to push (default: $REGISTRY_AUTH_FILE, else the standard locations that exist)")
			fs.StringArrayVar(&o.insecure, "insecure-registry", nil, "allow plain HTTP and a loopback/private address for this registry host[:port] (repeatable; for local registries)")
			fs.StringVar(&o.output, "output", "text", "output format: text or json")
			fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
		},
		Run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return runBuildBundle(ctx, args[0], o, stdout, stderr)
		},
	}
}

// maxAnnotationsBytes bounds metadata/annotations.yaml; real ones are a few hundred bytes.
const maxAnnotationsBytes = 1 << 20

// readAnnotations reads metadata/annotations.yaml of a bundle directory and
// checks what the image needs from it: the registry+v1 mediatype and a package.
func readAnnotations(fsys fs.FS) (map[string]string, error) {
	f, err := fsys.Open("metadata/annotations.yaml")
	if err != nil {
		return nil, fmt.Errorf("metadata/annotations.yaml: %w; a bundle directory holds manifests/ and metadata/annotations.yaml", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAnnotationsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("metadata/annotations.yaml: %w", err)
	}
	if len(data) > maxAnnotationsBytes {
		return nil, fmt.Errorf("metadata/annotations.yaml is larger than %d bytes", maxAnnotationsBytes)
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("metadata/annotations.yaml: %v; it must be a map 'annotations:' of string keys and values", err)
	}
	const mediatype = image.BundleLabelPrefix + "mediatype.v1"
	const pkg = image.BundleLabelPrefix + "package.v1"
	switch {
	case doc.Annotations[mediatype] != "registry+v1":
		return nil, fmt.Errorf("metadata/annotations.yaml: %s is %q; only registry+v1 bundles are built", mediatype, doc.Annotations[mediatype])
	case doc.Annotations[pkg] == "":
		return nil, fmt.Errorf("metadata/annotations.yaml: %s is not set; the image needs the package it belongs to", pkg)
	}
	return doc.Annotations, nil
}

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
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	fsys := os.DirFS(dir)
	ann, err := readAnnotations(fsys)
	if err != nil {
		return fail(exitFail, "%s: %v", dir, err)
	}
	img, err := image.BundleImage(ctx, fsys, ann, image.Limits{})
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
		pushed, err := reg.PushOnce(ctx, target.String(), img)
		var taken *registry.TagTakenError
		switch {
		case errors.As(err, &taken):
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
