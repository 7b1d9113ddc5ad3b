package rebuild

import (
	"log/slog"
	"time"

	"github.com/catalogbot/catalogbot/registry"
)

// Config is what the rebuild reads of the App's configuration; app's
// configuration code builds it (app.Config.Rebuild).
type Config struct {
	// BaseImage is the default base image of catalog images (rebuild.base_image).
	BaseImage string
	// AllowedImages are the registries images may be pushed to (rebuild.allowed_images).
	AllowedImages []string
	// AppID is the App's own id, to know its own check runs.
	AppID int64
	// PushAuthFile holds the push credentials (rebuild.push_auth_file).
	PushAuthFile string
	// SignKeyFile is the PEM private key the pushed images are signed with
	// (rebuild.sign_key_file); empty: nothing is signed.
	SignKeyFile string
	// Registry is the registry client's configuration.
	Registry RegistryConfig
}

// RegistryConfig is the registry client's part of the App's configuration.
type RegistryConfig struct {
	AuthFile      string   // registry.auth_file
	InternalHosts []string // registry.internal_hosts
	InsecureHosts []string // registry.insecure_hosts
}

// JobObserver records how a job ended (the server's metrics).
type JobObserver interface {
	ObserveJob(kind, outcome string, d time.Duration)
}

// NewRegistryClient is a registry client with the configuration's
// credentials (authFiles first, then registry.auth_file) behind its address
// guard (registry.internal_hosts, registry.insecure_hosts).
func NewRegistryClient(cfg RegistryConfig, log *slog.Logger, authFiles ...string) (*registry.Client, error) {
	ro := []registry.Option{registry.WithLogger(log)}
	for _, f := range authFiles {
		if f != "" {
			ro = append(ro, registry.WithAuthFile(f))
		}
	}
	if cfg.AuthFile != "" {
		ro = append(ro, registry.WithAuthFile(cfg.AuthFile))
	}
	if len(cfg.InternalHosts) > 0 {
		ro = append(ro, registry.WithAllowedHosts(cfg.InternalHosts...))
	}
	if len(cfg.InsecureHosts) > 0 {
		ro = append(ro, registry.WithInsecureHosts(cfg.InsecureHosts...))
	}
	return registry.New(ro...)
}
