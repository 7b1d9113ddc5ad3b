// Command bench-image measures the catalog image build and push of
// scripts/bench-image.sh against a registry in another process, so that the
// registry's memory is not counted:
//
//	bench-image registry -dir BLOBS          serve a registry on loopback, print its host
//	bench-image base -registry HOST          push the base, print its reference by digest
//	bench-image run -registry HOST -catalog DIR
//
// run pushes a two-platform base (two 4 MiB layers per platform), then builds
// and pushes DIR's catalog image twice with one image.LayerCache: the first
// build, and the unchanged one. The catalog's file system names contents as
// a git tree does (by hashes computed before the clock starts, as git stores
// them), which is what lets the second build reuse its layer. It prints
// "first SECONDS" and "unchanged SECONDS".
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench-image registry -dir BLOBS | run -registry HOST -catalog DIR")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "registry":
		fl := flag.NewFlagSet("registry", flag.ExitOnError)
		dir := fl.String("dir", "", "directory for the blobs")
		fl.Parse(os.Args[2:])
		serve(*dir)
	case "base":
		fl := flag.NewFlagSet("base", flag.ExitOnError)
		host := fl.String("registry", "", "registry host:port")
		fl.Parse(os.Args[2:])
		ref, err := pushBase(context.Background(), *host)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ref)
	case "run":
		fl := flag.NewFlagSet("run", flag.ExitOnError)
		host := fl.String("registry", "", "registry host:port")
		dir := fl.String("catalog", "", "catalog directory")
		fl.Parse(os.Args[2:])
		if err := run(*host, *dir); err != nil {
			log.Fatal(err)
		}
	default:
		log.Fatalf("unknown mode %q", os.Args[1])
	}
}

func serve(dir string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(registry.NewDiskBlobHandler(dir)))
	log.Fatal((&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln))
}

// keyedDir is a directory whose files are named by content hashes taken
// beforehand, as a git tree names them by blob id.
type keyedDir struct {
	fs.FS
	keys map[string]string
}

func (d keyedDir) ContentKey(name string) (string, bool) {
	k, ok := d.keys[name]
	return k, ok
}

func contentKeys(fsys fs.FS) (map[string]string, error) {
	keys := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		keys[p] = fmt.Sprintf("%x", sha256.Sum256(data))
		return nil
	})
	return keys, err
}

func run(host, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	baseRef, err := pushBase(ctx, host)
	if err != nil {
		return err
	}
	keys, err := contentKeys(os.DirFS(dir))
	if err != nil {
		return err
	}
	catalogFS := keyedDir{FS: os.DirFS(dir), keys: keys}
	lim := image.Limits{Cache: image.NewLayerCache(0)}
	for _, step := range []string{"first", "unchanged"} {
		start := time.Now()
		built, err := image.Build(ctx, baseRef, catalogFS, lim, remote.WithContext(ctx))
		if err != nil {
			return err
		}
		for _, tag := range []string{"latest", "0123456789abcdef0123456789abcdef01234567"} {
			if _, err := built.Push(ctx, host+"/acme/catalog:"+tag); err != nil {
				return err
			}
		}
		fmt.Printf("%s %.3f\n", step, time.Since(start).Seconds())
	}
	return nil
}

func pushBase(ctx context.Context, host string) (string, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(4<<20, 2)
		if err != nil {
			return "", err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	ref, err := name.ParseReference(host + "/opm/base:v1")
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx)); err != nil {
		return "", err
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return host + "/opm/base@" + d.String(), nil
}
