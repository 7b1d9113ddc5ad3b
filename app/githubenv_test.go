package app

import (
	"context"
	"crypto/rsa"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/google/go-github/v62/github"
)

// The fake GitHub's installation and repository (internal/githubfake's test environment).
const (
	testAppID  = githubfake.TestAppID
	testInstID = githubfake.TestInstallation
	testOwner  = githubfake.TestOwner
	testRepo   = githubfake.TestRepo
)

type keyPEM struct {
	key *rsa.PrivateKey
	pem []byte
}

// testAppKey is the process's test App key (made once: RSA key generation is slow).
func testAppKey() (keyPEM, error) {
	k, err := githubfake.TestAppKey()
	return keyPEM{k.Key, k.PEM}, err
}

// recordingMetrics keeps every call the transport reports.
type recordingMetrics = githubfake.CallRecorder

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
	env := githubfake.NewTestEnv(t, opts...)
	if policy.BackoffBase == 0 {
		policy.BackoffBase = time.Millisecond
	}
	m := &recordingMetrics{}
	gh, err := ghapp.NewGitHub(ghapp.GitHubConfig{AppID: testAppID, PrivateKeyPEM: env.Key.PEM, BaseURL: env.APIURL(), Retry: policy}, m)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeEnv{fake: env.Fake, srv: env.Server, gh: gh, metrics: m}
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
