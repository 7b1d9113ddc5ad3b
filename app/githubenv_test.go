package app

import (
	"context"
	"crypto/rsa"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/google/go-github/v62/github"
)

const (
	testAppID  = 4242
	testInstID = 77
	testOwner  = "acme"
	testRepo   = "catalog"
)

// testAppKey is made once per test binary: RSA key generation is slow.
var testAppKey = sync.OnceValues(func() (keyPEM, error) {
	k, p, err := githubfake.GenerateAppKey()
	return keyPEM{k, p}, err
})

type keyPEM struct {
	key *rsa.PrivateKey
	pem []byte
}

// recordingMetrics keeps every call the transport reports.
type recordingMetrics struct {
	mu        sync.Mutex
	calls     []string // "endpoint status"
	remaining map[int64]int
}

func (m *recordingMetrics) APICall(endpoint string, status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, endpoint+" "+http.StatusText(status))
}

func (m *recordingMetrics) RateLimitRemaining(id int64, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.remaining == nil {
		m.remaining = map[int64]int{}
	}
	m.remaining[id] = n
}

func (m *recordingMetrics) count(prefix string) int {
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

type fakeEnv struct {
	fake    *githubfake.Fake
	srv     *httptest.Server
	gh      *ghapp.GitHub
	metrics *recordingMetrics
}

// newFakeEnv starts the fake GitHub with one installation and repository and
// a GitHub factory pointed at it. Retries are fast unless policy says otherwise.
func newFakeEnv(t testing.TB, policy ghapp.RetryPolicy, opts ...func(*githubfake.Options)) *fakeEnv {
	t.Helper()
	kp, err := testAppKey()
	if err != nil {
		t.Fatal(err)
	}
	o := githubfake.Options{AppID: testAppID, PublicKey: &kp.key.PublicKey}
	for _, fn := range opts {
		fn(&o)
	}
	f := githubfake.New(o)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.AddInstallation(testInstID, testOwner)
	if err := f.AddRepo(githubfake.Repo{Owner: testOwner, Name: testRepo, Installation: testInstID}); err != nil {
		t.Fatal(err)
	}
	if policy.BackoffBase == 0 {
		policy.BackoffBase = time.Millisecond
	}
	m := &recordingMetrics{}
	gh, err := ghapp.NewGitHub(ghapp.GitHubConfig{AppID: testAppID, PrivateKeyPEM: kp.pem, BaseURL: githubfake.APIURL(srv.URL), Retry: policy}, m)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeEnv{fake: f, srv: srv, gh: gh, metrics: m}
}

func (e *fakeEnv) installation(t *testing.T) *github.Client {
	t.Helper()
	c, err := e.gh.Installation(context.Background(), testInstID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
