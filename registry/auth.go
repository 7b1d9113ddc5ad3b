package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

const maxAuthFileBytes = 1 << 20

// DefaultAuthFiles lists the auth files a CLI user most likely has, in the order podman and docker consult
// them: $REGISTRY_AUTH_FILE alone when it is set (an explicit choice: it is returned even if absent, so New
// reports it), otherwise those of $XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json and
// ~/.config/containers/auth.json that exist.
func DefaultAuthFiles() []string {
	home, _ := os.UserHomeDir()
	return defaultAuthFiles(os.Getenv, home, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	})
}

func defaultAuthFiles(getenv func(string) string, home string, exists func(string) bool) []string {
	if f := getenv("REGISTRY_AUTH_FILE"); f != "" {
		return []string{f}
	}
	var candidates []string
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		candidates = append(candidates, filepath.Join(d, "containers", "auth.json"))
	}
	if home != "" {
		candidates = append(candidates, filepath.Join(home, ".docker", "config.json"),
			filepath.Join(home, ".config", "containers", "auth.json"))
	}
	var found []string
	for _, c := range candidates {
		if exists(c) {
			found = append(found, c)
		}
	}
	return found
}

// authFile is the part of a docker config.json / podman auth.json the client reads.
type authFile struct {
	Auths       map[string]authEntry `json:"auths"`
	CredHelpers map[string]string    `json:"credHelpers"`
	CredsStore  string               `json:"credsStore"`
}

type authEntry struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// keychain answers with explicit credentials only: WithCredentials entries first, then auth files in order.
// Within a source, the longest matching key wins ("quay.io/org/repo" before "quay.io").
type keychain struct {
	sources []map[string]authn.AuthConfig
}

func (k *keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	reg := registryKey(r.RegistryStr())
	target := reg
	if repo, ok := r.(name.Repository); ok {
		target = reg + "/" + repo.RepositoryStr()
	}
	for _, src := range k.sources {
		best, found := "", false
		for key := range src {
			if (key == target || strings.HasPrefix(target, key+"/")) && len(key) > len(best) {
				best, found = key, true
			}
		}
		if found {
			return authn.FromConfig(src[best]), nil
		}
	}
	return authn.Anonymous, nil
}

// registryKey normalises how people name a registry in auth files: no scheme, no trailing path for the old
// Docker Hub URL, lower case, and one name for Docker Hub.
func registryKey(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	k = strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
	host, path, _ := strings.Cut(k, "/")
	switch host {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		host = name.DefaultRegistry
		if path == "v1" || path == "v1/" || path == "v2" || path == "v2/" {
			path = ""
		}
	}
	path = strings.TrimSuffix(path, "/")
	if path == "" {
		return host
	}
	return host + "/" + path
}

func newKeychain(creds []credential, files []string) (*keychain, error) {
	k := &keychain{}
	if len(creds) > 0 {
		m := map[string]authn.AuthConfig{}
		for _, c := range creds {
			m[registryKey(c.host)] = authn.AuthConfig{Username: c.user, Password: c.pass}
		}
		k.sources = append(k.sources, m)
	}
	var errs []error
	for _, f := range files {
		m, err := readAuthFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		k.sources = append(k.sources, m)
	}
	return k, errors.Join(errs...)
}

func readAuthFile(path string) (map[string]authn.AuthConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("registry: auth file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAuthFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("registry: auth file %s: %w", path, err)
	}
	if len(data) > maxAuthFileBytes {
		return nil, fmt.Errorf("registry: auth file %s is larger than %d bytes", path, maxAuthFileBytes)
	}
	return parseAuthFile(path, data)
}

func parseAuthFile(path string, data []byte) (map[string]authn.AuthConfig, error) {
	var af authFile
	if err := json.Unmarshal(data, &af); err != nil {
		return nil, fmt.Errorf("registry: auth file %s is not valid JSON: %v", path, err)
	}
	if af.CredsStore != "" || len(af.CredHelpers) > 0 {
		var named []string
		if af.CredsStore != "" {
			named = append(named, fmt.Sprintf("credsStore %q", af.CredsStore))
		}
		hosts := make([]string, 0, len(af.CredHelpers))
		for h := range af.CredHelpers {
			hosts = append(hosts, h)
		}
		sort.Strings(hosts)
		for _, h := range hosts {
			named = append(named, fmt.Sprintf("credHelpers[%q]", h))
		}
		return nil, fmt.Errorf("registry: auth file %s names credential helpers (%s); catalogbot never runs helper programs: "+
			"write the credentials under \"auths\" in a file of their own (podman login --authfile FILE, or a base64 user:password \"auth\" entry) and pass that file",
			path, strings.Join(named, ", "))
	}
	out := make(map[string]authn.AuthConfig, len(af.Auths))
	keys := make([]string, 0, len(af.Auths))
	for key := range af.Auths {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		e := af.Auths[key]
		cfg := authn.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(e.Auth))
			if err != nil {
				return nil, fmt.Errorf("registry: auth file %s: auths[%q].auth is not valid base64; it must encode \"user:password\"", path, key)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok || user == "" {
				return nil, fmt.Errorf("registry: auth file %s: auths[%q].auth must encode \"user:password\"", path, key)
			}
			cfg.Username, cfg.Password = user, pass
		}
		if cfg == (authn.AuthConfig{}) {
			continue // an empty entry, as docker leaves after a helper login
		}
		nk := registryKey(key)
		if err := checkHostPattern(strings.SplitN(nk, "/", 2)[0]); err != nil {
			return nil, fmt.Errorf("registry: auth file %s: auths key %q: %v", path, key, err)
		}
		out[nk] = cfg
	}
	return out, nil
}
