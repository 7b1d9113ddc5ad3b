package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Defaults of the options below. They are what New uses when an option is not given.
const (
	DefaultTimeout      = 15 * time.Second       // deadline of one Check (handshake, retries and waits included)
	DefaultMaxAttempts  = 3                      // tries of one HTTP request, the first included
	DefaultMaxRetryWait = 10 * time.Second       // total time one HTTP request may spend waiting between tries
	DefaultBackoff      = 250 * time.Millisecond // first wait after a 5xx or a network error (doubles each time)
	DefaultMaxBackoff   = 2 * time.Second        // cap of one such wait
	DefaultConcurrency  = 8                      // repositories CheckAll checks at once
	DefaultUserAgent    = "catalogbot"
)

// Bounds the options are validated against.
const (
	maxAttemptsLimit = 10
	maxConcurrency   = 64
	maxHosts         = 256
)

// Resolver turns a host name into addresses. *net.Resolver satisfies it; tests inject their own so a name can
// resolve to any address without a packet leaving the machine.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Option configures a Client. Options only record values; New validates them all in one place.
type Option func(*config)

type credential struct {
	host, user, pass string
}

type config struct {
	timeout      time.Duration
	maxAttempts  int
	maxRetryWait time.Duration
	backoff      time.Duration
	maxBackoff   time.Duration
	concurrency  int
	userAgent    string
	pushSettle   time.Duration
	authFiles    []string
	credentials  []credential
	allowed      []string
	insecure     []string
	resolver     Resolver
	logger       *slog.Logger

	// dial makes the TCP connection to an address the guard has already approved. Only tests replace it.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// WithTimeout sets the deadline of each Check (default DefaultTimeout). A caller's earlier deadline wins.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithMaxAttempts sets how many times one HTTP request is tried, the first included (default 3, at most 10).
// Only 429, 5xx and network errors are retried, and 5xx or network errors only for idempotent methods.
func WithMaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// WithMaxRetryWait caps the total time one HTTP request waits between tries (default 10 s). A registry that asks
// for a longer Retry-After is not obeyed: the request fails at once and the image counts as not verified.
func WithMaxRetryWait(d time.Duration) Option { return func(c *config) { c.maxRetryWait = d } }

// WithPushSettle sets how long PushOnce waits after writing a tag before reading it back to confirm that no
// concurrent push replaced it (default DefaultPushSettle; at least 0).
func WithPushSettle(d time.Duration) Option {
	return func(c *config) { c.pushSettle = d }
}

// WithRetryBackoff sets the first wait after a 5xx or network error and the cap of one wait
// (defaults 250 ms and 2 s). Waits double from first to max, with jitter.
func WithRetryBackoff(first, max time.Duration) Option {
	return func(c *config) { c.backoff, c.maxBackoff = first, max }
}

// WithConcurrency sets how many repositories CheckAll checks at once (default 8, at most 64); the references
// of one repository are checked one after the other over a shared handshake.
func WithConcurrency(n int) Option { return func(c *config) { c.concurrency = n } }

// WithUserAgent sets the User-Agent prefix sent to registries (default "catalogbot").
func WithUserAgent(ua string) Option { return func(c *config) { c.userAgent = ua } }

// WithAuthFile adds a docker or podman auth file (config.json / auth.json). Files are consulted in the order
// given, after WithCredentials. Only "auths" entries are used; a file naming credential helpers (credHelpers,
// credsStore) is refused, because the client never runs programs.
func WithAuthFile(path string) Option {
	return func(c *config) { c.authFiles = append(c.authFiles, path) }
}

// WithCredentials sets a user name and password for one registry host (as written in references, with its
// port if any: "quay.io", "registry.example.com:5000"; "docker.io" means Docker Hub). They take precedence
// over auth files.
func WithCredentials(host, user, pass string) Option {
	return func(c *config) { c.credentials = append(c.credentials, credential{host, user, pass}) }
}

// WithAllowedHosts lets the client connect to the given hosts ("host" for any port, "host:port" for one)
// even when they resolve to loopback, private, link-local or other internal addresses, which are refused
// otherwise. Use it for an internal registry, or for tests on 127.0.0.1.
func WithAllowedHosts(hosts ...string) Option {
	return func(c *config) { c.allowed = append(c.allowed, hosts...) }
}

// WithInsecureHosts lets the client speak plain HTTP to the given hosts ("host" or "host:port"). Every other
// host gets HTTPS only, redirects included. It does not lift the address guard: combine it with
// WithAllowedHosts for a registry on an internal address.
func WithInsecureHosts(hosts ...string) Option {
	return func(c *config) { c.insecure = append(c.insecure, hosts...) }
}

// WithResolver replaces the DNS resolver (default net.DefaultResolver). Every dial resolves afresh through it
// and connects to an address it returned, after the guard has checked them all.
func WithResolver(r Resolver) Option { return func(c *config) { c.resolver = r } }

// WithLogger sets where retries and refusals are logged, at debug level (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

func defaultConfig() config {
	return config{
		timeout:      DefaultTimeout,
		maxAttempts:  DefaultMaxAttempts,
		maxRetryWait: DefaultMaxRetryWait,
		backoff:      DefaultBackoff,
		pushSettle:   DefaultPushSettle,
		maxBackoff:   DefaultMaxBackoff,
		concurrency:  DefaultConcurrency,
		userAgent:    DefaultUserAgent,
		resolver:     net.DefaultResolver,
		logger:       slog.New(slog.DiscardHandler),
		dial:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
}

// validate checks every option; it is the only place that does.
func (c *config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.timeout <= 0 {
		bad("registry: timeout must be positive, got %v", c.timeout)
	}
	if c.maxAttempts < 1 || c.maxAttempts > maxAttemptsLimit {
		bad("registry: max attempts must be between 1 and %d, got %d", maxAttemptsLimit, c.maxAttempts)
	}
	if c.maxRetryWait < 0 {
		bad("registry: max retry wait must not be negative, got %v", c.maxRetryWait)
	}
	if c.backoff <= 0 || c.maxBackoff < c.backoff {
		bad("registry: retry backoff needs 0 < first <= max, got first %v, max %v", c.backoff, c.maxBackoff)
	}
	if c.pushSettle < 0 || c.pushSettle > time.Minute {
		bad("registry: push settle must be between 0 and 1m, got %v", c.pushSettle)
	}
	if c.concurrency < 1 || c.concurrency > maxConcurrency {
		bad("registry: concurrency must be between 1 and %d, got %d", maxConcurrency, c.concurrency)
	}
	if c.userAgent == "" || strings.ContainsAny(c.userAgent, "\r\n") {
		bad("registry: user agent must be one non-empty line, got %q", c.userAgent)
	}
	if c.resolver == nil {
		bad("registry: resolver must not be nil")
	}
	if c.logger == nil {
		bad("registry: logger must not be nil")
	}
	for _, list := range []struct {
		what  string
		hosts []string
	}{{"allowed", c.allowed}, {"insecure", c.insecure}} {
		if len(list.hosts) > maxHosts {
			bad("registry: at most %d %s hosts, got %d", maxHosts, list.what, len(list.hosts))
		}
		for _, h := range list.hosts {
			if err := checkHostPattern(h); err != nil {
				bad("registry: %s host %q: %v", list.what, h, err)
			}
		}
	}
	for _, cr := range c.credentials {
		if err := checkHostPattern(registryKey(cr.host)); err != nil {
			bad("registry: credentials for %q: %v", cr.host, err)
		}
		if cr.user == "" || cr.pass == "" {
			bad("registry: credentials for %q need a user name and a password", cr.host)
		}
	}
	return errors.Join(errs...)
}

// checkHostPattern accepts "host" or "host:port", with IPv6 literals in brackets.
func checkHostPattern(h string) error {
	if h == "" {
		return errors.New("empty host")
	}
	if strings.ContainsAny(h, "/@ \t\r\n") {
		return errors.New(`want "host" or "host:port", without scheme, path or credentials`)
	}
	host := h
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1 {
		hh, port, err := net.SplitHostPort(h)
		if err != nil {
			if !strings.HasPrefix(h, "[") || !strings.HasSuffix(h, "]") {
				return fmt.Errorf(`want "host" or "host:port": %v`, err)
			}
			hh = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
		host = hh
	} else if strings.Contains(h, ":") {
		return errors.New(`an IPv6 address needs brackets: "[::1]" or "[::1]:5000"`)
	}
	if host == "" {
		return errors.New("empty host name")
	}
	return nil
}

// hostSet matches "host:port" addresses against "host" and "host:port" patterns, case-insensitively.
type hostSet map[string]bool

func newHostSet(patterns []string) hostSet {
	s := hostSet{}
	for _, p := range patterns {
		p = strings.ToLower(p)
		if strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]") {
			p = strings.Trim(p, "[]")
		} else if h, port, err := net.SplitHostPort(p); err == nil {
			p = net.JoinHostPort(h, port)
		}
		s[p] = true
	}
	return s
}

// has reports whether host (with defaultPort when it has none) matches a pattern.
func (s hostSet) has(hostport, defaultPort string) bool {
	if len(s) == 0 {
		return false
	}
	hostport = strings.ToLower(hostport)
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), defaultPort
	}
	return s[host] || s[net.JoinHostPort(host, port)]
}
