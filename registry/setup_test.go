package registry

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testCtx bounds every test: nothing here may hang.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// testRegistry is go-containerregistry's in-process registry on 127.0.0.1, behind an optional fault-injecting
// wrapper, counting connections and requests.
type testRegistry struct {
	host     string
	listener *countingListener
	mu       sync.Mutex
	requests []string // "METHOD path"
}

func (r *testRegistry) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.requests {
		if strings.HasPrefix(q, prefix) {
			n++
		}
	}
	return n
}

func (r *testRegistry) countExact(q string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.requests {
		if x == q {
			n++
		}
	}
	return n
}

func (r *testRegistry) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

func newTestRegistry(t testing.TB, wrap func(http.Handler) http.Handler) *testRegistry {
	t.Helper()
	tr := &testRegistry{}
	var h http.Handler = gcrregistry.New(gcrregistry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.requests = append(tr.requests, r.Method+" "+r.URL.Path)
		tr.mu.Unlock()
		inner.ServeHTTP(w, r)
	})
	srv := httptest.NewUnstartedServer(h)
	tr.listener = &countingListener{Listener: srv.Listener}
	srv.Listener = tr.listener
	srv.Start()
	t.Cleanup(srv.Close)
	tr.host = srv.Listener.Addr().String()
	return tr
}

// isManifest reports whether r addresses a manifest.
func isManifest(r *http.Request) bool { return strings.Contains(r.URL.Path, "/manifests/") }

// newTestClient trusts host (allowed address, plain HTTP) and retries fast.
func newTestClient(t testing.TB, host string, opts ...Option) *Client {
	t.Helper()
	base := []Option{WithAllowedHosts(host), WithInsecureHosts(host), WithRetryBackoff(time.Millisecond, 4*time.Millisecond)}
	c, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// push writes a small random image to ref through the client's own RemoteOptions.
func push(t testing.TB, c *Client, ref string) v1.Image {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	pushImage(t, c, ref, img)
	return img
}

func pushImage(t testing.TB, c *Client, ref string, img v1.Image) {
	t.Helper()
	r, err := c.parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, c.RemoteOptions(testCtx(t))...); err != nil {
		t.Fatalf("remote.Write(%s) error = %v", ref, err)
	}
}

func digestOf(t testing.TB, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// fakeResolver answers from a table and counts lookups; unknown names do not exist.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string
	lookups int
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	var out []netip.Addr
	for _, a := range f.answers[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// withDial replaces the final TCP dial; tests send every approved dial to a loopback listener, so nothing
// leaves the machine even if the guard were broken.
func withDial(f func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(c *config) { c.dial = f }
}

// dialRecorder records the addresses the guard approved and connects them all to target.
type dialRecorder struct {
	target string
	mu     sync.Mutex
	addrs  []string
}

func (d *dialRecorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", d.target)
}

func (d *dialRecorder) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

func contextWithCancel(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithCancel(testCtx(t))
}
