package githubfake

import (
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The installation and repository a test environment starts with.
const (
	TestAppID        = 4242
	TestInstallation = 77
	TestOwner        = "acme"
	TestRepo         = "catalog"
)

// AppKey is an App private key and its PEM, made once per process: RSA key generation is slow, and tests of
// several packages start many fakes.
type AppKey struct {
	Key *rsa.PrivateKey
	PEM []byte
}

// TestAppKey returns the process's test App key.
var TestAppKey = sync.OnceValues(func() (AppKey, error) {
	k, p, err := GenerateAppKey()
	return AppKey{Key: k, PEM: p}, err
})

// TestEnv is a fake GitHub served over HTTP with one installation (TestInstallation of TestOwner) and one
// repository (TestOwner/TestRepo), keyed with TestAppKey.
type TestEnv struct {
	Fake   *Fake
	Server *httptest.Server
	Key    AppKey
}

// NewTestEnv starts a TestEnv, closed when the test ends. opts adjust the fake's options.
func NewTestEnv(t testing.TB, opts ...func(*Options)) *TestEnv {
	t.Helper()
	kp, err := TestAppKey()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{AppID: TestAppID, PublicKey: &kp.Key.PublicKey}
	for _, fn := range opts {
		fn(&o)
	}
	f := New(o)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.AddInstallation(TestInstallation, TestOwner)
	if err := f.AddRepo(Repo{Owner: TestOwner, Name: TestRepo, Installation: TestInstallation}); err != nil {
		t.Fatal(err)
	}
	return &TestEnv{Fake: f, Server: srv, Key: kp}
}

// APIURL is the environment's REST API address, for a client's base URL.
func (e *TestEnv) APIURL() string { return APIURL(e.Server.URL) }

// CallRecorder keeps every API call and rate-limit reading a client's transport reports (it has the two methods
// the App's GitHub metrics take).
type CallRecorder struct {
	mu        sync.Mutex
	calls     []string // "endpoint status text"
	remaining map[int64]int
}

// APICall records one call.
func (m *CallRecorder) APICall(endpoint string, status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, endpoint+" "+http.StatusText(status))
}

// RateLimitRemaining records the installation's last reading.
func (m *CallRecorder) RateLimitRemaining(id int64, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.remaining == nil {
		m.remaining = map[int64]int{}
	}
	m.remaining[id] = n
}

// Count is how many recorded calls start with prefix ("GET /repos/{owner}/{repo} ", "GET /app/hook/deliveries OK").
func (m *CallRecorder) Count(prefix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// Remaining is the last rate-limit reading recorded for an installation, and whether there was one.
func (m *CallRecorder) Remaining(id int64) (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.remaining[id]
	return n, ok
}
