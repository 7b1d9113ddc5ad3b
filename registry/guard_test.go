package registry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestRefusedReason(t *testing.T) {
	tests := []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.1", true}, {"127.0.0.2", true}, {"::1", true},
		{"10.0.0.1", true}, {"172.16.5.4", true}, {"192.168.1.1", true}, {"fd00::1", true}, {"fc00::1", true},
		{"169.254.169.254", true}, {"169.254.1.1", true}, {"fe80::1", true}, {"fd00:ec2::254", true},
		{"0.0.0.0", true}, {"::", true}, {"0.1.2.3", true}, {"100.64.0.1", true}, {"100.127.255.254", true},
		{"224.0.0.1", true}, {"ff02::1", true}, {"255.255.255.255", true}, {"198.18.0.1", true},
		{"::ffff:10.0.0.1", true}, {"::ffff:127.0.0.1", true}, {"64:ff9b::a00:1", true}, {"64:ff9b::a9fe:a9fe", true},
		{"8.8.8.8", false}, {"100.63.255.255", false}, {"100.128.0.0", false}, {"2606:4700::1111", false},
		{"172.32.0.1", false}, {"64:ff9b::808:808", false}, {"::ffff:8.8.8.8", false},
	}
	for _, tt := range tests {
		why := refusedReason(netip.MustParseAddr(tt.addr))
		if (why != "") != tt.refused {
			t.Errorf("refusedReason(%s) = %q, want refused %v", tt.addr, why, tt.refused)
		}
	}
}

func TestGuardedDialer(t *testing.T) {
	res := &fakeResolver{answers: map[string][]string{
		"localhost":     {"127.0.0.1", "::1"},
		"metadata.test": {"169.254.169.254"},
		"ten.test":      {"10.0.0.1"},
		"home.test":     {"192.168.1.1"},
		"ula.test":      {"fd00::1"},
		"ec2v6.test":    {"fd00:ec2::254"},
		"cgnat.test":    {"100.64.0.1"},
		"mapped.test":   {"::ffff:10.0.0.1"},
		"mixed.test":    {"203.0.113.7", "10.0.0.1"},
		"public.test":   {"203.0.113.7"},
		"trusted.test":  {"10.1.2.3"},
	}}
	rec := &dialRecorder{}
	d := &guardedDialer{
		allowed:  newHostSet([]string{"trusted.test", "127.0.0.1:5000"}),
		resolver: res,
		dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			rec.mu.Lock()
			rec.addrs = append(rec.addrs, addr)
			rec.mu.Unlock()
			return nil, errors.New("test dial: not connecting")
		},
	}
	tests := []struct {
		addr     string
		refused  bool
		wantDial string
	}{
		{"localhost:443", true, ""},
		{"127.0.0.1:443", true, ""},
		{"127.0.0.2:5000", true, ""},
		{"[::1]:443", true, ""},
		{"metadata.test:80", true, ""},
		{"169.254.169.254:80", true, ""},
		{"ten.test:443", true, ""},
		{"home.test:443", true, ""},
		{"ula.test:443", true, ""},
		{"ec2v6.test:443", true, ""},
		{"cgnat.test:443", true, ""},
		{"mapped.test:443", true, ""},
		{"mixed.test:443", true, ""},
		{"public.test:443", false, "203.0.113.7:443"},
		{"trusted.test:8443", false, "10.1.2.3:8443"},
		{"127.0.0.1:5000", false, "127.0.0.1:5000"},
		{"[fe80::1%eth0]:443", true, ""},
	}
	for _, tt := range tests {
		rec.addrs = nil
		_, err := d.DialContext(t.Context(), "tcp", tt.addr)
		var refused *refusedError
		if got := errors.As(err, &refused); got != tt.refused {
			t.Errorf("DialContext(%s) error = %v, want refused %v", tt.addr, err, tt.refused)
		}
		want := []string(nil)
		if tt.wantDial != "" {
			want = []string{tt.wantDial}
		}
		if got := rec.dialed(); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("DialContext(%s) dialled %v, want %v", tt.addr, got, want)
		}
	}
}

// TestCheckRefusesInternalAddresses proves the guard end to end: every dial the guard approves goes to a
// loopback registry that counts connections, so a refused reference that got through would show there.
func TestCheckRefusesInternalAddresses(t *testing.T) {
	reg := newTestRegistry(t, nil)
	_, port, _ := net.SplitHostPort(reg.host)
	res := &fakeResolver{answers: map[string][]string{
		"metadata.test": {"169.254.169.254"},
		"ten.test":      {"10.0.0.1"},
		"home.test":     {"192.168.1.1"},
		"ula.test":      {"fd00::1"},
		"localhost":     {"127.0.0.1"},
	}}
	rec := &dialRecorder{target: reg.host}
	insecure := []string{"metadata.test", "ten.test", "home.test", "ula.test", "localhost", "[::1]", "127.0.0.2"}
	c := newTestClient(t, reg.host, WithResolver(res), withDial(rec.dial), WithInsecureHosts(insecure...))
	push(t, c, reg.host+"/org/bundle:v1")
	rec.mu.Lock()
	rec.addrs = nil
	rec.mu.Unlock()
	conns := reg.listener.accepted.Load()

	for _, ref := range []string{
		"localhost:" + port + "/org/bundle:v1",
		"[::1]:" + port + "/org/bundle:v1",
		"127.0.0.2:" + port + "/org/bundle:v1",
		"metadata.test/org/bundle:v1",
		"metadata.test:" + port + "/org/bundle:v1",
		"ten.test/org/bundle:v1",
		"home.test:" + port + "/org/bundle:v1",
		"ula.test/org/bundle:v1",
		"169.254.169.254/latest/meta-data:v1",
		"[fd00:ec2::254]/latest/meta-data:v1",
		"100.64.0.1:" + port + "/org/bundle:v1",
	} {
		got := c.Check(testCtx(t), ref)
		if got.Kind != Unverified || got.Status != 0 {
			t.Errorf("Check(%s) = %v %d (%s), want unverified without a response", ref, got.Kind, got.Status, got.Reason)
		}
	}
	if got := reg.listener.accepted.Load() - conns; got != 0 {
		t.Errorf("the loopback listener accepted %d connections for refused references, want 0", got)
	}
	if got := rec.dialed(); len(got) != 0 {
		t.Errorf("the guard approved dials %v for refused references, want none", got)
	}
	if res.lookups == 0 {
		t.Errorf("the injected resolver was never asked, want names resolved through it")
	}

	// The allow-listed host works, through the same recorder and listener.
	if got := c.Check(testCtx(t), reg.host+"/org/bundle:v1"); got.Kind != Exists {
		t.Errorf("Check(allow-listed %s) = %v (%s), want exists", reg.host, got.Kind, got.Reason)
	}
	if got := reg.listener.accepted.Load() - conns; got == 0 {
		t.Errorf("the loopback listener accepted no connection for the allow-listed host, want at least one")
	}
}

func TestPlainHTTPOnlyForInsecureHosts(t *testing.T) {
	reg := newTestRegistry(t, nil)
	// Allowed address but not insecure: HTTPS is tried (and fails against a plain server), HTTP is never sent.
	c, err := New(WithAllowedHosts(reg.host))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Check(testCtx(t), reg.host+"/org/bundle:v1")
	if got.Kind != Unverified {
		t.Errorf("Check(not insecure) = %v (%s), want unverified", got.Kind, got.Reason)
	}
	if n := reg.total(); n != 0 {
		t.Errorf("registry saw %d plain HTTP requests from a client not allowed to send them, want 0", n)
	}
}

// TestRedirectsAreGuarded serves blob fetches as redirects to internal addresses; Manifests must refuse them
// without connecting.
func TestRedirectsAreGuarded(t *testing.T) {
	for _, target := range []string{
		"http://metadata.test/latest/meta-data/",
		"https://ten.test/blob",
		"http://169.254.169.254/latest/",
		"http://public.test/blob", // a public address, but plain HTTP to a host not marked insecure
	} {
		t.Run(target, func(t *testing.T) {
			var a armed
			reg := newTestRegistry(t, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if a.on.Load() && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
						http.Redirect(w, r, target, http.StatusTemporaryRedirect)
						return
					}
					next.ServeHTTP(w, r)
				})
			})
			res := &fakeResolver{answers: map[string][]string{
				"metadata.test": {"169.254.169.254"}, "ten.test": {"10.0.0.1"}, "public.test": {"203.0.113.7"},
			}}
			rec := &dialRecorder{target: reg.host}
			c := newTestClient(t, reg.host, WithResolver(res), withDial(rec.dial), WithInsecureHosts("metadata.test", "169.254.169.254"))
			push(t, c, reg.host+"/org/bundle:v1")
			a.on.Store(true)
			_, err := c.Manifests(testCtx(t), reg.host+"/org/bundle:v1", Limits{})
			var e *Error
			if !errors.As(err, &e) || e.Result.Kind != Unverified {
				t.Fatalf("Manifests(redirect to %s) error = %v, want an *Error with kind unverified", target, err)
			}
			for _, addr := range rec.dialed() {
				if addr != reg.host {
					t.Errorf("the guard approved a dial to %s, want only %s", addr, reg.host)
				}
			}
		})
	}
}

// TestTokenRealmIsGuarded: a registry may name any token endpoint in its 401 challenge; even when the policy
// allows the realm's host, the token request goes through the same address guard.
func TestTokenRealmIsGuarded(t *testing.T) {
	for _, realm := range []string{"https://metadata.test/token", "http://169.254.169.254/token", "https://ten.test:8443/token"} {
		t.Run(realm, func(t *testing.T) {
			reg := newTestRegistry(t, func(http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`",service="test"`)
					w.WriteHeader(http.StatusUnauthorized)
				})
			})
			res := &fakeResolver{answers: map[string][]string{"metadata.test": {"169.254.169.254"}, "ten.test": {"10.0.0.1"}}}
			rec := &dialRecorder{target: reg.host}
			c := newTestClient(t, reg.host, WithResolver(res), withDial(rec.dial), WithInsecureHosts("169.254.169.254"),
				WithCredentials(reg.host, "user", "pass"))
			ctx := WithTokenHosts(testCtx(t), "metadata.test", "169.254.169.254", "ten.test")
			got := c.Check(ctx, reg.host+"/org/bundle:v1")
			if got.Kind != Unverified {
				t.Errorf("Check(realm %s) = %v (%s), want unverified", realm, got.Kind, got.Reason)
			}
			if !strings.Contains(got.Reason, "refusing") {
				t.Errorf("Check(realm %s).Reason = %q, want the guard's refusal", realm, got.Reason)
			}
			for _, addr := range rec.dialed() {
				if addr != reg.host {
					t.Errorf("the guard approved a dial to %s, want only %s", addr, reg.host)
				}
			}
		})
	}
}
