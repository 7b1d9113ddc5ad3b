package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/registry"
)

// registryFlags are the flags that configure the registry client, shared by
// the check and images commands.
type registryFlags struct {
	authFile    string
	insecure    []string
	concurrency int
	budget      int
}

func (rf *registryFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&rf.authFile, "registry-config", "", "docker/podman auth file with registry credentials (default: $REGISTRY_AUTH_FILE, else the standard locations that exist)")
	fs.IntVar(&rf.concurrency, "registry-concurrency", 8, "image lookups in flight at once")
	fs.IntVar(&rf.budget, "registry-budget", 2000, "at most this many registry requests per run; past it images are \"could not verify\"")
	fs.StringArrayVar(&rf.insecure, "insecure-registry", nil, "allow plain HTTP and a loopback/private address for this registry host[:port] (repeatable; for local registries and tests)")
}

func (rf *registryFlags) client() (*registry.Client, error) {
	opts := []registry.Option{registry.WithConcurrency(rf.concurrency), registry.WithUserAgent("catalog-check")}
	files := registry.DefaultAuthFiles()
	if rf.authFile != "" {
		files = []string{rf.authFile}
	}
	for _, f := range files {
		opts = append(opts, registry.WithAuthFile(f))
	}
	if len(rf.insecure) > 0 {
		opts = append(opts, registry.WithAllowedHosts(rf.insecure...), registry.WithInsecureHosts(rf.insecure...))
	}
	c, err := registry.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return c.WithBudget(rf.budget), nil
}
