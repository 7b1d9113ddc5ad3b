// Command imagebuild builds catalogbot's container image without a Docker
// daemon: it appends one deterministic layer holding the static binary at
// /usr/local/bin/catalogbot to a base image pinned by digest, runs it as
// user 65532, stamps the version labels, and pushes it or writes a tarball.
// The same binary on the same base always gives the same image digest.
//
//	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=v1.2.3" -o catalogbot ./cmd/catalogbot
//	go run ./deploy/imagebuild --binary catalogbot --base gcr.io/distroless/static-debian12@sha256:... \
//	    --version v1.2.3 --revision $(git rev-parse HEAD) --push ghcr.io/acme/catalogbot:v1.2.3
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const (
	binaryPath = "/usr/local/bin/catalogbot"
	// nonRootUser is the numeric user and group the image runs as (distroless's "nonroot").
	nonRootUser = "65532:65532"
	// maxBinarySize bounds the file read into memory.
	maxBinarySize = 512 << 20

	labelVersion  = "org.opencontainers.image.version"
	labelRevision = "org.opencontainers.image.revision"
	labelSource   = "org.opencontainers.image.source"
	labelTitle    = "org.opencontainers.image.title"
)

// options are the command line, validated by parseOptions.
type options struct {
	binary, base, push, tarball string
	version, revision, source   string
	platform                    *v1.Platform
	timeout                     time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run builds the image; it prints the image digest (and the reference pushed).
// Exit codes: 0 built, 2 could not build.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	remoteOpts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithPlatform(*o.platform)}

	baseRef, err := name.NewDigest(o.base)
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: --base %q must be pinned by digest (REPO@sha256:...): %v\n", o.base, err)
		return 2
	}
	base, err := remote.Image(baseRef, remoteOpts...)
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: fetching the base %s: %v\n", baseRef, err)
		return 2
	}
	bin, err := readBinary(o.binary)
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: %v\n", err)
		return 2
	}
	img, err := build(base, bin, o)
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: %v\n", err)
		return 2
	}
	digest, err := img.Digest()
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: %v\n", err)
		return 2
	}
	if o.push != "" {
		ref, err := name.ParseReference(o.push)
		if err != nil {
			fmt.Fprintf(stderr, "imagebuild: --push %q: %v\n", o.push, err)
			return 2
		}
		if err := remote.Write(ref, img, remoteOpts...); err != nil {
			fmt.Fprintf(stderr, "imagebuild: pushing %s: %v\n", ref, err)
			return 2
		}
		fmt.Fprintf(stdout, "%s@%s\n", ref.Context().Name(), digest)
		return 0
	}
	tag, err := name.NewTag("catalogbot:" + tagFor(o.version))
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: %v\n", err)
		return 2
	}
	if err := tarball.WriteToFile(o.tarball, tag, img); err != nil {
		fmt.Fprintf(stderr, "imagebuild: writing %s: %v\n", o.tarball, err)
		return 2
	}
	fmt.Fprintf(stdout, "%s\n", digest)
	return 0
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.binary, "binary", "", "the static catalogbot binary (CGO_ENABLED=0)")
	fs.StringVar(&o.base, "base", "", "base image pinned by digest, e.g. gcr.io/distroless/static-debian12@sha256:...")
	fs.StringVar(&o.push, "push", "", "push the image to this reference")
	fs.StringVar(&o.tarball, "tarball", "", "write the image as a docker-loadable tarball instead of pushing")
	fs.StringVar(&o.version, "version", "dev", "version for the "+labelVersion+" label")
	fs.StringVar(&o.revision, "revision", "", "source revision (git commit) for the "+labelRevision+" label")
	fs.StringVar(&o.source, "source", "https://github.com/catalogbot/catalogbot", "source repository for the "+labelSource+" label")
	platform := fs.String("platform", "linux/amd64", "platform of the binary; picks that image from a multi-platform base")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "limit for the whole build, pull and push included")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: imagebuild --binary FILE --base REPO@sha256:... (--push REF | --tarball FILE) [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.binary == "":
		return o, errors.New("--binary is required")
	case o.base == "":
		return o, errors.New("--base is required")
	case (o.push == "") == (o.tarball == ""):
		return o, errors.New("give exactly one of --push and --tarball")
	case o.timeout <= 0:
		return o, errors.New("--timeout must be positive")
	}
	p, err := v1.ParsePlatform(*platform)
	if err != nil {
		return o, fmt.Errorf("--platform %q: %w", *platform, err)
	}
	o.platform = p
	return o, nil
}

func readBinary(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 || fi.Size() > maxBinarySize {
		return nil, fmt.Errorf("%s: want a regular file of 1 byte to %d MiB, got %s of %d bytes", path, maxBinarySize>>20, fi.Mode().Type(), fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxBinarySize+1))
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	return b, nil
}

// build appends the binary layer and sets user, entrypoint and labels. Every
// time in it is the base's creation time, so nothing of the build's moment
// reaches the digest.
func build(base v1.Image, bin []byte, o options) (v1.Image, error) {
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the base config: %w", err)
	}
	layer, err := binaryLayer(bin, cf.Created.Time)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: cf.Created, CreatedBy: "imagebuild: catalogbot " + o.version + " at " + binaryPath},
	})
	if err != nil {
		return nil, err
	}
	cfg := cf.Config.DeepCopy()
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	cfg.Labels[labelTitle] = "catalogbot"
	cfg.Labels[labelVersion] = o.version
	cfg.Labels[labelSource] = o.source
	if o.revision != "" {
		cfg.Labels[labelRevision] = o.revision
	}
	cfg.User = nonRootUser
	cfg.Entrypoint = []string{binaryPath}
	cfg.Cmd = []string{"serve"}
	// What the Dockerfile's final stage sets, so both images run the same way.
	cfg.WorkingDir = dataDir
	cfg.Env = append(withoutEnv(cfg.Env, "CATALOGBOT_DATA_DIR", "CATALOGBOT_GIT_CACHE_DIR"),
		"CATALOGBOT_DATA_DIR="+dataDir, "CATALOGBOT_GIT_CACHE_DIR="+gitCacheDir)
	cfg.ExposedPorts = map[string]struct{}{"8080/tcp": {}}
	return mutate.Config(img, *cfg)
}

// The directories the server writes to, as the Dockerfile makes them: the data and git cache directories
// owned by the runtime user, /tmp open to all with the sticky bit. In Kubernetes they are volumes.
const (
	dataDir     = "/var/lib/catalogbot"
	gitCacheDir = "/var/cache/catalogbot/git"
)

// withoutEnv drops the variables named from env (KEY=value entries).
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		keep := true
		for _, n := range names {
			keep = keep && k != n
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}

// binaryLayer is a tar of the writable directories, the directories down to
// the binary and the binary itself (owned by root, mode 0755), stamped with mtime.
func binaryLayer(bin []byte, mtime time.Time) (v1.Layer, error) {
	if mtime.IsZero() {
		mtime = time.Unix(0, 0)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	uid, gid := 65532, 65532
	for _, d := range []struct {
		name     string
		mode     int64
		uid, gid int
	}{
		{"tmp/", 0o1777, 0, 0},
		{"var/", 0o755, 0, 0},
		{"var/cache/", 0o755, 0, 0},
		{"var/cache/catalogbot/", 0o755, uid, gid},
		{"var/lib/", 0o755, 0, 0},
		{"var/lib/catalogbot/", 0o755, uid, gid},
	} {
		h := &tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, Uid: d.uid, Gid: d.gid, ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	dirs := strings.Split(strings.TrimPrefix(binaryPath, "/"), "/")
	for i := 1; i < len(dirs); i++ {
		h := &tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(dirs[:i], "/") + "/", Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: binaryPath[1:], Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
}

// tagFor makes a docker tag from a version ("v1.2.3+meta" -> "v1.2.3_meta").
func tagFor(version string) string {
	var b strings.Builder
	for _, r := range version {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || s[0] == '.' || s[0] == '-' {
		s = "v" + s
	}
	if len(s) > 128 {
		s = s[:128]
	}
	return s
}
