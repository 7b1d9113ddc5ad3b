package registry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// A registry that wants a token answers 401 with a challenge naming a token service (its "realm"), and the
// client then sends the registry's credentials there. A registry the policy allows could name any host, so the
// realm is held to the same allow-list as the registries themselves: the registry's own host, a host the caller
// lists for the operation (the hosts of the policy's allowed registries), or a well-known pairing below.

type tokenHostsKey struct{}

// WithTokenHosts returns a context under which registries may also send the client to the given hosts ("host"
// for any port, "host:port" for one) for tokens. Callers pass the hosts of the registries their policy allows,
// so that a registry that keeps its token service on another allowed host still works. A realm on any other
// host is never contacted: the operation ends unverified, with the reason, and no credential leaves.
func WithTokenHosts(ctx context.Context, hosts ...string) context.Context {
	return context.WithValue(ctx, tokenHostsKey{}, newHostSet(hosts))
}

func tokenHostsFrom(ctx context.Context) hostSet {
	s, _ := ctx.Value(tokenHostsKey{}).(hostSet)
	return s
}

// wellKnownRealm is the token service a registry is known to keep on another host (host:port), or "":
// allowing the registry allows it. Docker Hub is the one that matters.
func wellKnownRealm(registryHostPort string) string {
	switch registryHostPort {
	case "registry-1.docker.io:443", "index.docker.io:443", "docker.io:443":
		return "auth.docker.io:443"
	}
	return ""
}

// canonicalHostPort is host:port in lower case with the scheme's default port filled in.
func canonicalHostPort(scheme, hostport string) string {
	hostport = strings.ToLower(hostport)
	if _, _, err := net.SplitHostPort(hostport); err == nil {
		return hostport
	}
	port := "443"
	if scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(strings.Trim(hostport, "[]"), port)
}

// challengeRealm is the realm URL of a Bearer challenge in a 401 response, or nil when there is none.
func challengeRealm(resp *http.Response) (*url.URL, string) {
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		scheme, params, _ := strings.Cut(strings.TrimSpace(h), " ")
		if !strings.EqualFold(scheme, "bearer") {
			continue
		}
		realm := challengeParam(params, "realm")
		if realm == "" {
			return nil, ""
		}
		u, err := url.Parse(realm)
		if err != nil || u.Host == "" {
			return nil, realm
		}
		return u, realm
	}
	return nil, ""
}

// challengeParam reads one key="value" (or key=value) parameter of a challenge.
func challengeParam(params, key string) string {
	for params != "" {
		params = strings.TrimLeft(params, " ,")
		k, rest, ok := strings.Cut(params, "=")
		if !ok {
			return ""
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return ""
			}
			v, params = rest[1:1+end], rest[2+end:]
		} else {
			v, params, _ = strings.Cut(rest, ",")
		}
		if strings.EqualFold(strings.TrimSpace(k), key) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// realmRefusal says why the realm a registry named must not be contacted, or "" when it may be.
func realmRefusal(ctx context.Context, req *http.Request, realm *url.URL, raw string) string {
	registryHost := canonicalHostPort(req.URL.Scheme, req.URL.Host)
	if realm == nil {
		return fmt.Sprintf("registry %s asks for a token from %q, which is not a usable URL; nothing was sent to it", req.URL.Host, raw)
	}
	if realm.User != nil {
		return fmt.Sprintf("registry %s names a token service with user information in its URL; nothing was sent to it", req.URL.Host)
	}
	realmHost := canonicalHostPort(realm.Scheme, realm.Host)
	if realmHost == registryHost || wellKnownRealm(registryHost) == realmHost || tokenHostsFrom(ctx).has(realm.Host, defaultPort(realm.Scheme)) {
		return ""
	}
	return fmt.Sprintf("registry %s sends clients to the token service %s, a host outside the allowed registries; no credentials were sent there (add the host to images.allowedRegistries if it is trusted)",
		req.URL.Host, realm.Host)
}

func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// realmKey identifies a token service in the statistics of one operation: scheme, host and path.
func realmKey(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + canonicalHostPort(u.Scheme, u.Host) + u.EscapedPath()
}
