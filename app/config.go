package app

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/yaml"
)

// maxConfigSize bounds the configuration file and the private key file.
const maxConfigSize = 1 << 20

// Secret holds a credential. It never shows its value when printed, logged
// or marshalled; only Reveal gives it out.
type Secret struct{ b []byte }

// NewSecret wraps a credential.
func NewSecret(b []byte) Secret { return Secret{b: append([]byte(nil), b...)} }

// Reveal returns the credential itself, for the code that must use it.
func (s Secret) Reveal() []byte { return s.b }

// Empty reports whether the secret has no value.
func (s Secret) Empty() bool { return len(s.b) == 0 }

const redacted = "[redacted]"

func (s Secret) String() string               { return redacted }
func (s Secret) GoString() string             { return redacted }
func (s Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// Duration is a time.Duration written as "90s", "5m" in the config file.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or \"5m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// fileConfig is the YAML file, strictly parsed: an unknown key is an error.
// Secrets are not accepted in the file except as paths; give the webhook
// secrets through CATALOGBOT_WEBHOOK_SECRETS or webhook_secrets_file.
type fileConfig struct {
	AppID              int64    `json:"app_id"`
	PrivateKeyFile     string   `json:"private_key_file"`
	WebhookSecretsFile string   `json:"webhook_secrets_file"`
	DatabaseURL        string   `json:"database_url"`
	DatabaseSchema     string   `json:"database_schema"`
	DataDir            string   `json:"data_dir"`
	GitCacheDir        string   `json:"git_cache_dir"`
	Listen             string   `json:"listen"`
	Workers            int      `json:"workers"`
	GitHubAPIURL       string   `json:"github_api_url"`
	JobTimeout         Duration `json:"job_timeout"`
	RescueAfter        Duration `json:"rescue_stuck_jobs_after"`
	CheckTimeout       Duration `json:"check_timeout"`
	FetchTimeout       Duration `json:"fetch_timeout"`
	ResyncInterval     Duration `json:"resync_interval"`
	RedeliverInterval  Duration `json:"redeliver_interval"`
	RedeliverWindow    Duration `json:"redeliver_window"`
	ShutdownTimeout    Duration `json:"shutdown_timeout"`
	Catalogs           []string `json:"catalogs"`
	LogLevel           string   `json:"log_level"`
	Registry           struct {
		AuthFile      string   `json:"auth_file"`
		InternalHosts []string `json:"internal_hosts"`
		InsecureHosts []string `json:"insecure_hosts"`
		Offline       bool     `json:"offline"`
	} `json:"registry"`
	Rebuild struct {
		BaseImage     string   `json:"base_image"`
		PushAuthFile  string   `json:"push_auth_file"`
		AllowedImages []string `json:"allowed_images"`
		SignKeyFile   string   `json:"sign_key_file"`
	} `json:"rebuild"`
}

// Config is the server's validated configuration.
type Config struct {
	AppID int64
	// PrivateKey is the App's PEM private key, checked to parse as RSA.
	PrivateKey     Secret
	PrivateKeyFile string
	// WebhookSecrets: a delivery signed with any of them is accepted, so a
	// secret can be rotated without losing deliveries.
	WebhookSecrets []Secret
	// DatabaseURL selects PostgreSQL; empty means a SQLite file in DataDir.
	DatabaseURL Secret
	// DatabaseSchema is the PostgreSQL schema for River's and our tables
	// (default: the connection's search_path).
	DatabaseSchema string
	DataDir        string
	GitCacheDir    string
	Listen         string
	Workers        int
	// GitHubAPIURL is GitHub Enterprise Server's API root; empty means api.github.com.
	GitHubAPIURL      string
	JobTimeout        time.Duration
	RescueAfter       time.Duration
	CheckTimeout      time.Duration
	FetchTimeout      time.Duration
	ResyncInterval    time.Duration
	RedeliverInterval time.Duration
	RedeliverWindow   time.Duration
	ShutdownTimeout   time.Duration
	// Catalogs are catalog roots for repositories whose base has no policy file.
	Catalogs []string
	LogLevel slog.Level
	// RegistryAuthFile is a docker/podman auth file for the images and
	// crd-safety checks; RegistryInternalHosts may resolve to internal
	// addresses (refused otherwise); RegistryInsecureHosts get plain HTTP.
	RegistryAuthFile      string
	RegistryInternalHosts []string
	RegistryInsecureHosts []string
	// RegistryOffline: the pull request checks contact no registry. The
	// images check does not run; crd-safety compares only the CRDs a
	// bundle embeds (olm.bundle.object) or a bundle directory holds ("CRDs
	// not embedded, not compared", neutral, otherwise); templates render
	// only from the base's catalogs and the bundle directories. The
	// rebuild (catalog and bundle images) is not a check and still pushes.
	RegistryOffline bool
	// RebuildBaseImage is the opm image, pinned by digest, that catalog
	// images are built on when the policy's catalogs[].baseImage is not set.
	RebuildBaseImage string
	// RebuildPushAuthFile is a docker/podman auth file with the credentials
	// used to push catalog images (read by the registry client; its content
	// is never logged). Base images are read with it and RegistryAuthFile.
	RebuildPushAuthFile string
	// RebuildAllowedImages are the prefixes a pushed catalog image must start
	// with (as policy images.allowedRegistries); empty allows any.
	RebuildAllowedImages []string
	// RebuildSignKeyFile is a PEM ECDSA P-256 private key (PKCS#8 or EC
	// PRIVATE KEY, unencrypted) the catalog and bundle images are signed
	// with, their provenance attested; empty: nothing is signed. Loaded once
	// at start; its content is never logged.
	RebuildSignKeyFile string
}

// SQLitePath is the SQLite database file used when no database URL is given.
func (c *Config) SQLitePath() string { return filepath.Join(c.DataDir, "catalogbot.db") }

// Environment variables that override the file.
const (
	EnvAppID          = "CATALOGBOT_APP_ID"
	EnvPrivateKeyFile = "CATALOGBOT_PRIVATE_KEY_FILE"
	EnvWebhookSecrets = "CATALOGBOT_WEBHOOK_SECRETS"
	EnvDatabaseURL    = "CATALOGBOT_DATABASE_URL"
	EnvGitCacheDir    = "CATALOGBOT_GIT_CACHE_DIR"
	EnvListen         = "CATALOGBOT_LISTEN"
	EnvWorkers        = "CATALOGBOT_WORKERS"
	EnvGitHubAPIURL   = "CATALOGBOT_GITHUB_API_URL"
	EnvDataDir        = "CATALOGBOT_DATA_DIR"
)

// LoadConfig reads the YAML file at path (none when path is ""), applies the
// environment through getenv, fills defaults and validates. It reads the
// private key so that a server never starts with a key it cannot use.
func LoadConfig(path string, getenv func(string) string) (*Config, error) {
	return loadConfig(path, getenv, true)
}

// LoadDatabaseConfig reads the same file and environment as LoadConfig but
// checks only what opening the database needs (database_url,
// database_schema, data_dir): for commands that read the database and never
// talk to GitHub, such as catalogbot audit.
func LoadDatabaseConfig(path string, getenv func(string) string) (*Config, error) {
	return loadConfig(path, getenv, false)
}

func loadConfig(path string, getenv func(string) string, server bool) (*Config, error) {
	var fc fileConfig
	if path != "" {
		data, err := readBounded(path, maxConfigSize)
		if err != nil {
			return nil, fmt.Errorf("reading the config file: %w", err)
		}
		if err := yaml.UnmarshalStrict(data, &fc); err != nil {
			return nil, fmt.Errorf("config file %s: %w (see the commented example cmd/catalogbot/catalogbot.example.yaml)", path, err)
		}
	}
	c := &Config{
		AppID: fc.AppID, PrivateKeyFile: fc.PrivateKeyFile, DatabaseSchema: fc.DatabaseSchema,
		DataDir: fc.DataDir, GitCacheDir: fc.GitCacheDir, Listen: fc.Listen, Workers: fc.Workers,
		GitHubAPIURL: fc.GitHubAPIURL, Catalogs: fc.Catalogs,
		JobTimeout: time.Duration(fc.JobTimeout), RescueAfter: time.Duration(fc.RescueAfter),
		CheckTimeout: time.Duration(fc.CheckTimeout), FetchTimeout: time.Duration(fc.FetchTimeout),
		ResyncInterval: time.Duration(fc.ResyncInterval), RedeliverInterval: time.Duration(fc.RedeliverInterval),
		RedeliverWindow: time.Duration(fc.RedeliverWindow), ShutdownTimeout: time.Duration(fc.ShutdownTimeout),
		DatabaseURL:      NewSecret([]byte(fc.DatabaseURL)),
		RegistryAuthFile: fc.Registry.AuthFile, RegistryInternalHosts: fc.Registry.InternalHosts,
		RegistryInsecureHosts: fc.Registry.InsecureHosts, RegistryOffline: fc.Registry.Offline,
		RebuildBaseImage: fc.Rebuild.BaseImage, RebuildPushAuthFile: fc.Rebuild.PushAuthFile,
		RebuildAllowedImages: fc.Rebuild.AllowedImages, RebuildSignKeyFile: fc.Rebuild.SignKeyFile,
	}
	if fc.LogLevel != "" {
		if err := c.LogLevel.UnmarshalText([]byte(fc.LogLevel)); err != nil {
			return nil, fmt.Errorf("config log_level: %w (want debug, info, warn or error)", err)
		}
	}
	if fc.WebhookSecretsFile != "" && server {
		data, err := readBounded(fc.WebhookSecretsFile, maxConfigSize)
		if err != nil {
			return nil, fmt.Errorf("reading webhook_secrets_file: %w", err)
		}
		secrets, err := parseSecrets(strings.ReplaceAll(strings.TrimSpace(string(data)), "\n", ","))
		if err != nil {
			return nil, fmt.Errorf("webhook_secrets_file %s: %w", fc.WebhookSecretsFile, err)
		}
		c.WebhookSecrets = secrets
	}
	if err := c.applyEnv(getenv); err != nil {
		return nil, err
	}
	c.fillDefaults()
	if !server {
		if c.DatabaseSchema != "" && !store.ValidSchemaName(c.DatabaseSchema) {
			return nil, fmt.Errorf("database_schema %q: use letters, digits and _ only", c.DatabaseSchema)
		}
		return c, nil
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) applyEnv(rawenv func(string) string) error {
	// Values often come from Kubernetes Secrets made with `echo`, which ends
	// them with a newline; no setting here means anything by edge spaces.
	getenv := func(k string) string { return strings.TrimSpace(rawenv(k)) }
	if v := getenv(EnvAppID); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s=%q is not a number: give the App ID shown on the App's settings page", EnvAppID, v)
		}
		c.AppID = id
	}
	if v := getenv(EnvPrivateKeyFile); v != "" {
		c.PrivateKeyFile = v
	}
	if v := getenv(EnvWebhookSecrets); v != "" {
		secrets, err := parseSecrets(v)
		if err != nil {
			return fmt.Errorf("%s: %w", EnvWebhookSecrets, err)
		}
		c.WebhookSecrets = secrets
	}
	if v := getenv(EnvDatabaseURL); v != "" {
		c.DatabaseURL = NewSecret([]byte(v))
	}
	if v := getenv(EnvGitCacheDir); v != "" {
		c.GitCacheDir = v
	}
	if v := getenv(EnvListen); v != "" {
		c.Listen = v
	}
	if v := getenv(EnvWorkers); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s=%q is not a number", EnvWorkers, v)
		}
		c.Workers = n
	}
	if v := getenv(EnvGitHubAPIURL); v != "" {
		c.GitHubAPIURL = v
	}
	if v := getenv(EnvDataDir); v != "" {
		c.DataDir = v
	}
	return nil
}

// parseSecrets splits a comma-separated list; an empty item is an error
// (it usually means a stray comma, and an empty secret would accept anything).
func parseSecrets(list string) ([]Secret, error) {
	var out []Secret
	for i, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("item %d of the comma-separated secret list is empty", i+1)
		}
		out = append(out, NewSecret([]byte(s)))
	}
	return out, nil
}

func (c *Config) fillDefaults() {
	if c.DataDir == "" {
		c.DataDir = "data"
	}
	if c.GitCacheDir == "" {
		c.GitCacheDir = filepath.Join(c.DataDir, "git")
	}
	if c.Listen == "" {
		c.Listen = ":8080"
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.JobTimeout, 5*time.Minute)
	def(&c.RescueAfter, c.JobTimeout+2*time.Minute)
	def(&c.CheckTimeout, 2*time.Minute)
	def(&c.FetchTimeout, 2*time.Minute)
	def(&c.ResyncInterval, 15*time.Minute)
	def(&c.RedeliverInterval, 10*time.Minute)
	def(&c.RedeliverWindow, 24*time.Hour)
	def(&c.ShutdownTimeout, 30*time.Second)
}

func (c *Config) validate() error {
	var errs []error
	if c.AppID <= 0 {
		errs = append(errs, fmt.Errorf("no App ID: set app_id or %s", EnvAppID))
	}
	if len(c.WebhookSecrets) == 0 {
		errs = append(errs, fmt.Errorf("no webhook secret: set %s (comma-separated to rotate) or webhook_secrets_file; without one, anyone could send events", EnvWebhookSecrets))
	}
	if c.PrivateKeyFile == "" {
		errs = append(errs, fmt.Errorf("no private key: set private_key_file or %s to the .pem downloaded from the App's settings", EnvPrivateKeyFile))
	} else if key, err := readPrivateKey(c.PrivateKeyFile); err != nil {
		errs = append(errs, err)
	} else {
		c.PrivateKey = key
	}
	if c.Workers < 1 || c.Workers > 256 {
		errs = append(errs, fmt.Errorf("workers is %d: want 1 to 256", c.Workers))
	}
	if c.RescueAfter < c.JobTimeout {
		errs = append(errs, fmt.Errorf("rescue_stuck_jobs_after (%s) must not be shorter than job_timeout (%s)", c.RescueAfter, c.JobTimeout))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"job_timeout", c.JobTimeout}, {"check_timeout", c.CheckTimeout}, {"fetch_timeout", c.FetchTimeout},
		{"resync_interval", c.ResyncInterval}, {"redeliver_interval", c.RedeliverInterval},
		{"redeliver_window", c.RedeliverWindow}, {"shutdown_timeout", c.ShutdownTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s is negative (%s)", d.name, d.v))
		}
	}
	if c.DatabaseSchema != "" && !store.ValidSchemaName(c.DatabaseSchema) {
		errs = append(errs, fmt.Errorf("database_schema %q: use letters, digits and _ only", c.DatabaseSchema))
	}
	if c.RebuildBaseImage != "" {
		if _, err := name.NewDigest(c.RebuildBaseImage, name.StrictValidation); err != nil {
			errs = append(errs, fmt.Errorf("rebuild.base_image %q: pin it by digest, registry/repository@sha256:<64 hex digits> (%v)", c.RebuildBaseImage, err))
		}
	}
	if c.RebuildPushAuthFile != "" && len(c.RebuildAllowedImages) == 0 {
		// The image a catalog is pushed to comes from each repository's
		// policy: without a list, any installed repository could send the
		// operator's registry credentials' pushes wherever it likes.
		errs = append(errs, errors.New("rebuild.push_auth_file is set but rebuild.allowed_images is empty: list the registries or repositories these credentials may push catalog images to, such as [quay.io/acme/]"))
	}
	for _, p := range c.RebuildAllowedImages {
		if p == "" || strings.ContainsAny(p, "@ \t\r\n") {
			errs = append(errs, fmt.Errorf("rebuild.allowed_images: %q is not a registry or repository prefix such as quay.io/acme/", p))
		}
	}
	return errors.Join(errs...)
}

// readPrivateKey reads the App's key and checks that it is an RSA key in PEM
// (PKCS#1 as GitHub issues it, or PKCS#8).
func readPrivateKey(path string) (Secret, error) {
	data, err := readBounded(path, maxConfigSize)
	if err != nil {
		return Secret{}, fmt.Errorf("reading the private key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return Secret{}, fmt.Errorf("private key %s is not PEM: download a new key from the App's settings", path)
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return NewSecret(data), nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return Secret{}, fmt.Errorf("private key %s is not an RSA private key GitHub issued", path)
	}
	if _, ok := k.(*rsa.PrivateKey); !ok {
		return Secret{}, fmt.Errorf("private key %s is a %T, GitHub Apps use RSA keys", path, k)
	}
	return NewSecret(data), nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d allowed", path, fi.Size(), limit)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && fi.Size() > 0 {
		return nil, err
	}
	return b, nil
}

// Rebuild is the post-merge rebuild's part of the configuration.
func (c *Config) Rebuild() rebuild.Config {
	return rebuild.Config{BaseImage: c.RebuildBaseImage, AllowedImages: c.RebuildAllowedImages, AppID: c.AppID,
		PushAuthFile: c.RebuildPushAuthFile, SignKeyFile: c.RebuildSignKeyFile, Registry: c.registry()}
}

// registry is the registry client's part of the configuration.
func (c *Config) registry() rebuild.RegistryConfig {
	return rebuild.RegistryConfig{AuthFile: c.RegistryAuthFile, InternalHosts: c.RegistryInternalHosts,
		InsecureHosts: c.RegistryInsecureHosts}
}
