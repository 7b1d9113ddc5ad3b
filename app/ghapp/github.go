package ghapp

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
)

// GitHubConfig says how to reach GitHub as the App.
type GitHubConfig struct {
	// AppID is the App's numeric id (the JWT issuer).
	AppID int64
	// PrivateKeyPEM is the App's RSA private key (PKCS#1 or PKCS#8 PEM).
	PrivateKeyPEM []byte
	// BaseURL is the REST API root: "" means https://api.github.com/; for
	// GitHub Enterprise Server and tests, e.g. "https://ghe.example.com/api/v3/"
	// (a URL without /api/v3/ gets it appended, as go-github does).
	BaseURL string
	// HTTPClient supplies the transport and timeout; nil means http.DefaultTransport.
	HTTPClient *http.Client
	// Retry tunes the rate-limit and retry behaviour; the zero value means the defaults.
	Retry RetryPolicy
}

// APIMetrics receives one call per HTTP exchange with GitHub and the rate
// limit remaining after it. Installation id 0 is the App itself (JWT).
type APIMetrics interface {
	APICall(endpoint string, status int)
	RateLimitRemaining(installationID int64, remaining int)
}

// maxCachedInstallations bounds the per-installation client cache; the least
// recently used entry is dropped beyond it.
const maxCachedInstallations = 4096

// tokenRefreshMargin: a cached installation token is replaced when it has
// less than this left, so a token handed to git outlives a long fetch.
// (Installation tokens live one hour; ghinstallation itself refreshes only one
// minute before expiry.)
const tokenRefreshMargin = 5 * time.Minute

// installationTokenLifetime is how long GitHub's installation tokens last.
const installationTokenLifetime = time.Hour

// GitHub makes API clients for the App (JWT) and for its installations
// (installation tokens, cached per installation until shortly before they expire).
type GitHub struct {
	appID    int64
	key      *rsa.PrivateKey
	apiRoot  string // with trailing slash
	basePath string // path part of apiRoot without trailing slash, e.g. "/api/v3" or ""
	base     http.RoundTripper
	timeout  time.Duration
	retry    RetryPolicy
	metrics  APIMetrics
	app      *github.Client
	// gate holds back every request of an identity GitHub rate limited,
	// whichever transport (token refreshes make new ones) sends it.
	gate *rateGate

	mu       sync.Mutex
	installs map[int64]*installationEntry
}

type installationEntry struct {
	tr       *ghinstallation.Transport
	client   *github.Client
	lastUsed time.Time
	// created is when the entry (and so its first token) was made. Entries are replaced by age rather than by
	// asking the transport for its token's expiry: ghinstallation reads that without its lock while a
	// concurrent request may be refreshing the token (a data race).
	created time.Time
}

// NewGitHub validates the configuration and the private key. m may be nil.
func NewGitHub(cfg GitHubConfig, m APIMetrics) (*GitHub, error) {
	if cfg.AppID <= 0 {
		return nil, fmt.Errorf("github: app id %d is not valid: set the App's numeric id from its settings page", cfg.AppID)
	}
	key, err := ParseAppPrivateKey(cfg.PrivateKeyPEM)
	if err != nil {
		return nil, err
	}
	g := &GitHub{
		appID:    cfg.AppID,
		key:      key,
		base:     http.DefaultTransport,
		retry:    cfg.Retry.withDefaults(),
		metrics:  m,
		installs: map[int64]*installationEntry{},
		gate:     newRateGate(),
	}
	if cfg.HTTPClient != nil {
		if cfg.HTTPClient.Transport != nil {
			g.base = cfg.HTTPClient.Transport
		}
		g.timeout = cfg.HTTPClient.Timeout
	}
	probe, err := newGitHubClient(&http.Client{}, cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	g.apiRoot = probe.BaseURL.String()
	g.basePath = strings.TrimSuffix(probe.BaseURL.Path, "/")

	appTr := ghinstallation.NewAppsTransportFromPrivateKey(g.newAPITransport(0), cfg.AppID, key)
	appTr.BaseURL = strings.TrimSuffix(g.apiRoot, "/")
	g.app, err = newGitHubClient(&http.Client{Transport: appTr, Timeout: g.timeout}, cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// ParseAppPrivateKey parses a GitHub App private key (PEM, PKCS#1 as GitHub
// issues them, or PKCS#8).
func ParseAppPrivateKey(data []byte) (*rsa.PrivateKey, error) {
	if len(data) == 0 {
		return nil, errors.New("github: the App private key is empty: give the .pem file downloaded from the App's settings")
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("github: the App private key is not PEM: give the .pem file downloaded from the App's settings")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("github: the App private key (PEM block %q) is neither PKCS#1 nor PKCS#8 RSA: %v", block.Type, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("github: the App private key is a %T, GitHub Apps use RSA keys", k)
	}
	return rk, nil
}

func newGitHubClient(hc *http.Client, baseURL string) (*github.Client, error) {
	c := github.NewClient(hc)
	if baseURL == "" {
		return c, nil
	}
	c, err := c.WithEnterpriseURLs(baseURL, baseURL)
	if err != nil {
		return nil, fmt.Errorf("github: base URL %q: %w", baseURL, err)
	}
	return c, nil
}

func (g *GitHub) newAPITransport(installationID int64) *apiTransport {
	return newAPITransport(g.base, installationID, g.basePath, g.retry, g.metrics, g.gate)
}

// App returns the client authenticated as the App (a JWT per request), for
// the /app endpoints: installations, hook deliveries.
func (g *GitHub) App() *github.Client { return g.app }

// APIRoot is the REST API root URL the clients use, with a trailing slash.
func (g *GitHub) APIRoot() string { return g.apiRoot }

// Installation returns a client acting as the installation. The first call
// for an installation obtains its token, so an uninstalled App fails here.
func (g *GitHub) Installation(ctx context.Context, installationID int64) (*github.Client, error) {
	e, err := g.entry(ctx, installationID)
	if err != nil {
		return nil, err
	}
	return e.client, nil
}

// InstallationToken returns a token of the installation with at least
// tokenRefreshMargin left, for git over HTTPS (user "x-access-token").
func (g *GitHub) InstallationToken(ctx context.Context, installationID int64) (string, error) {
	e, err := g.entry(ctx, installationID)
	if err != nil {
		return "", err
	}
	tok, err := e.tr.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("github: token of installation %d: %w", installationID, err)
	}
	return tok, nil
}

// entry returns the cached transport of an installation with a fresh enough
// token, making a new one when there is none or its token is about to expire.
func (g *GitHub) entry(ctx context.Context, installationID int64) (*installationEntry, error) {
	if installationID <= 0 {
		return nil, fmt.Errorf("github: installation id %d is not valid", installationID)
	}
	now := time.Now()
	g.mu.Lock()
	e := g.installs[installationID]
	if e != nil && now.Sub(e.created) > installationTokenLifetime-tokenRefreshMargin {
		e = nil
	}
	if e == nil {
		appTr := ghinstallation.NewAppsTransportFromPrivateKey(g.newAPITransport(installationID), g.appID, g.key)
		tr := ghinstallation.NewFromAppsTransport(appTr, installationID)
		tr.BaseURL = strings.TrimSuffix(g.apiRoot, "/")
		c := github.NewClient(&http.Client{Transport: tr, Timeout: g.timeout})
		var err error
		if g.apiRoot != "https://api.github.com/" {
			c, err = c.WithEnterpriseURLs(g.apiRoot, g.apiRoot)
			if err != nil {
				g.mu.Unlock()
				return nil, err
			}
		}
		e = &installationEntry{tr: tr, client: c, created: now}
		g.installs[installationID] = e
		g.evictLocked()
	}
	e.lastUsed = now
	g.mu.Unlock()

	// Token takes the transport's own lock: concurrent first calls for one
	// installation fetch one token.
	if _, err := e.tr.Token(ctx); err != nil {
		g.mu.Lock()
		if g.installs[installationID] == e {
			delete(g.installs, installationID)
		}
		g.mu.Unlock()
		return nil, fmt.Errorf("github: token of installation %d: %w", installationID, describeTokenError(err))
	}
	return e, nil
}

func (g *GitHub) evictLocked() {
	if len(g.installs) <= maxCachedInstallations {
		return
	}
	var oldestID int64
	var oldest time.Time
	for id, e := range g.installs {
		if oldestID == 0 || e.lastUsed.Before(oldest) {
			oldestID, oldest = id, e.lastUsed
		}
	}
	delete(g.installs, oldestID)
}

// describeTokenError adds what a failed token request usually means.
func describeTokenError(err error) error {
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		he.Response.Body.Close()
		switch he.Response.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%w (the App is not installed there any more)", err)
		case http.StatusUnauthorized:
			return fmt.Errorf("%w (GitHub refused the App's JWT: check the App id and private key, and the clock)", err)
		case http.StatusForbidden:
			return fmt.Errorf("%w (the installation is suspended or rate limited)", err)
		}
	}
	return err
}
