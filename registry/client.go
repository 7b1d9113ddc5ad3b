package registry

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// maxRefLen bounds a reference before parsing; real ones are far shorter.
const maxRefLen = 1024

// Client talks to container registries on behalf of the checks. It is safe for concurrent use.
// Views made by WithBudget share its connections and cache.
type Client struct {
	cfg      config
	conns    *http.Transport
	rt       http.RoundTripper
	keychain *keychain
	allowed  hostSet
	insecure hostSet
	cache    *digestCache
	budget   *budget
	// pushLocks serialise PushOnce per tag; shared by the views WithBudget makes.
	pushLocks *tagLocks
}

// New builds a Client. Every option is validated here; the error lists all that are wrong.
func New(opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	kc, err := newKeychain(cfg.credentials, cfg.authFiles)
	if err != nil {
		return nil, err
	}
	allowed := newHostSet(cfg.allowed)
	insecure := newHostSet(cfg.insecure)
	dialer := &guardedDialer{allowed: allowed, resolver: cfg.resolver, dial: cfg.dial}
	conns := &http.Transport{
		Proxy:                 nil, // a proxy would make the guard check the proxy, not the registry
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &Client{
		cfg:   cfg,
		conns: conns,
		rt: &retryingTransport{
			next:         conns,
			insecure:     insecure,
			maxAttempts:  cfg.maxAttempts,
			maxRetryWait: cfg.maxRetryWait,
			backoff:      cfg.backoff,
			maxBackoff:   cfg.maxBackoff,
			logger:       cfg.logger,
		},
		keychain:  kc,
		allowed:   allowed,
		insecure:  insecure,
		cache:     newDigestCache(digestCacheSize),
		pushLocks: &tagLocks{},
	}, nil
}

// WithBudget returns a view of c that may send at most n HTTP requests (retries and auth handshakes count;
// answers from the cache do not). It shares c's connections, credentials and cache. Once the budget is spent,
// checks answer Unverified without sending anything; n <= 0 allows no request at all. Use one view per pull
// request.
func (c *Client) WithBudget(n int) *Client {
	v := *c
	v.budget = &budget{limit: int64(max(n, 0))}
	return &v
}

// Remaining is how many requests the view's budget still allows, or -1 when it has none.
func (c *Client) Remaining() int { return c.budget.remaining() }

// Close releases idle connections. The client stays usable.
func (c *Client) Close() { c.conns.CloseIdleConnections() }

// RemoteOptions are go-containerregistry options that send through this client's credentials, address guard,
// retries and budget, for operations the client does not wrap (the catalog image push). go-containerregistry's
// own retries are switched off so tries are not multiplied. ctx must carry the deadline of the whole operation.
func (c *Client) RemoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(withBudget(ctx, c.budget)),
		remote.WithTransport(c.rt),
		remote.WithAuthFromKeychain(c.keychain),
		remote.WithRetryStatusCodes(),
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
		remote.WithUserAgent(c.cfg.userAgent),
	}
}

// ParseRef parses an image reference strictly: the registry and a tag or digest must be written out
// ("quay.io/org/operator-bundle:v1.2.3", "registry.example.com/org/img@sha256:…"); nothing is defaulted.
func ParseRef(ref string) (name.Reference, error) {
	if len(ref) > maxRefLen {
		return nil, fmt.Errorf("image reference is %d characters long; at most %d are accepted", len(ref), maxRefLen)
	}
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err == nil && r.Context().RegistryStr() == registryHost(ref) {
		return r, nil
	}
	// A short name (kubegreen/kube-green:0.3.0, redis:7) parses, but names no registry: strict parsing
	// refuses it or, for a first component without a dot or port, maps it to Docker Hub.
	if short, serr := name.ParseReference(ref); serr == nil && !namesRegistry(ref) {
		full := "docker.io/" + short.Context().RepositoryStr()
		switch v := short.(type) {
		case name.Tag:
			full += ":" + v.TagStr()
		case name.Digest:
			full += "@" + v.DigestStr()
		}
		return nil, fmt.Errorf("image reference %q is unqualified (a short name: it names no registry). Docker would pull %s, "+
			"but CRI-O, which pulls images on OpenShift and many Kubernetes nodes, resolves short names with the node's "+
			"registries.conf: an alias if one is configured, else the unqualified-search registries in turn (refused under "+
			"short-name-mode \"enforcing\" when there are several), so the image depends on the node; write it in full: %s",
			ref, full, full)
	}
	if err != nil {
		return nil, fmt.Errorf("invalid image reference %q: %v; write it in full as registry/repository:tag or registry/repository@sha256:<64 hex digits>", ref, err)
	}
	return nil, fmt.Errorf("invalid image reference %q: it names no registry; write it in full as registry/repository:tag (docker.io/library/x:1 for Docker Hub)", ref)
}

// namesRegistry says whether the first component of ref is a registry host, as container engines tell
// one: it has a dot or a port, or is localhost.
func namesRegistry(ref string) bool {
	first, _, found := strings.Cut(ref, "/")
	return found && (strings.ContainsAny(first, ".:") || first == "localhost")
}

// registryHost is the first path component of a reference, with Docker Hub's aliases mapped to its name.
func registryHost(ref string) string {
	host, _, _ := strings.Cut(ref, "/")
	if host == "docker.io" || host == "registry-1.docker.io" {
		return name.DefaultRegistry
	}
	return host
}

// parse is ParseRef plus the plain-HTTP mark for hosts given to WithInsecureHosts.
func (c *Client) parse(ref string) (name.Reference, error) {
	r, err := ParseRef(ref)
	if err != nil || !c.insecure.has(r.Context().RegistryStr(), "80") {
		return r, err
	}
	return name.ParseReference(ref, name.StrictValidation, name.Insecure)
}

// refusedUpFront says why a registry must not be contacted at all, judging from its name alone; the dialer
// checks again after resolution.
func (c *Client) refusedUpFront(reg name.Registry) string {
	hostport := reg.RegistryStr()
	if c.allowed.has(hostport, "443") {
		return ""
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if lower := strings.ToLower(host); lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return fmt.Sprintf("refusing to connect to %s: it names the local machine (allow the host explicitly if it is a trusted registry)", hostport)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := refusedReason(ip); why != "" {
			return fmt.Sprintf("refusing to connect to %s: it is %s (allow the host explicitly if it is a trusted registry)", hostport, why)
		}
	}
	return ""
}

// start prepares the context of one operation: deadline, budget and statistics. It returns a Result when the
// operation must not start.
func (c *Client) start(ctx context.Context, ref string, r name.Reference, timeout time.Duration) (context.Context, context.CancelFunc, *callStats, *Result) {
	if why := c.refusedUpFront(r.Context().Registry); why != "" {
		return nil, nil, nil, &Result{Ref: ref, Kind: Unverified, Reason: why}
	}
	if c.budget.remaining() == 0 {
		return nil, nil, nil, &Result{Ref: ref, Kind: Unverified, Reason: "the request budget is exhausted; no more requests are sent for this pull request"}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, &Result{Ref: ref, Kind: Unverified, Reason: "not started: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	st := &callStats{}
	return withStats(withBudget(ctx, c.budget), st), cancel, st, nil
}

// Reference parses ref as ParseRef does, marked for plain HTTP when its host was given to WithInsecureHosts,
// for callers that address the registry through RemoteOptions themselves (signatures, attestations).
func (c *Client) Reference(ref string) (name.Reference, error) { return c.parse(ref) }
