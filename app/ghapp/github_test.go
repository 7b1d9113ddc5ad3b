package ghapp

import (
	"context"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
	gh      *GitHub
	metrics *recordingMetrics
}

// newFakeEnv starts the fake GitHub with one installation and repository and
// a GitHub factory pointed at it. Retries are fast unless policy says otherwise.
func newFakeEnv(t testing.TB, policy RetryPolicy, opts ...func(*githubfake.Options)) *fakeEnv {
	t.Helper()
	env := githubfake.NewTestEnv(t, opts...)
	if policy.BackoffBase == 0 {
		policy.BackoffBase = time.Millisecond
	}
	m := &recordingMetrics{}
	gh, err := NewGitHub(GitHubConfig{AppID: testAppID, PrivateKeyPEM: env.Key.PEM, BaseURL: env.APIURL(), Retry: policy}, m)
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

func httpStatus(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) && rl.Response != nil {
		return rl.Response.StatusCode
	}
	var ab *github.AbuseRateLimitError
	if errors.As(err, &ab) && ab.Response != nil {
		return ab.Response.StatusCode
	}
	if err == nil {
		return 0
	}
	return -1
}

func TestNewGitHubRejectsBadConfig(t *testing.T) {
	kp, err := testAppKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  GitHubConfig
		want string
	}{
		{"no app id", GitHubConfig{PrivateKeyPEM: kp.pem}, "app id"},
		{"empty key", GitHubConfig{AppID: 1}, "empty"},
		{"not PEM", GitHubConfig{AppID: 1, PrivateKeyPEM: []byte("hello")}, "not PEM"},
		{"PEM but not a key", GitHubConfig{AppID: 1, PrivateKeyPEM: []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")}, "neither"},
		{"bad URL", GitHubConfig{AppID: 1, PrivateKeyPEM: kp.pem, BaseURL: "http://[::1"}, "base URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewGitHub(tt.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewGitHub = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestInstallationTokensAreCached(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	if _, _, err := c.Repositories.Get(ctx, testOwner, testRepo); err != nil {
		t.Fatal(err)
	}
	tok1, err := e.gh.InstallationToken(ctx, testInstID)
	if err != nil {
		t.Fatal(err)
	}
	c2 := e.installation(t)
	if _, _, err := c2.Repositories.Get(ctx, testOwner, testRepo); err != nil {
		t.Fatal(err)
	}
	tok2, _ := e.gh.InstallationToken(ctx, testInstID)
	if tok1 != tok2 || !strings.HasPrefix(tok1, "ghs_") {
		t.Errorf("tokens %q and %q, want one cached ghs_ token", tok1, tok2)
	}
	if n := e.metrics.Count("POST /app/installations/{id}/access_tokens Created"); n != 1 {
		t.Errorf("token requests = %d, want 1", n)
	}
	if _, _, err := e.gh.App().Apps.Get(ctx, ""); err != nil {
		t.Errorf("GET /app with the App client: %v", err)
	}
	_, err = e.gh.Installation(ctx, 999)
	if err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("Installation(999) = %v, want an error saying the App is not installed", err)
	}
	rem, ok := e.metrics.Remaining(testInstID)
	if !ok || rem <= 0 || rem >= 5000 {
		t.Errorf("rate limit remaining of the installation = %d (%v), want a value below 5000", rem, ok)
	}
}

func TestTransportRetries(t *testing.T) {
	tests := []struct {
		name       string
		policy     RetryPolicy
		fault      string
		status     int
		count      int
		header     http.Header
		call       func(ctx context.Context, c *github.Client) error
		wantStatus int // 0: success
		wantCalls  int // exchanges with the matching endpoint
		endpoint   string
	}{
		{
			name: "5xx on GET is retried", fault: "GET /repos/*/*/pulls/1", status: 502, count: 2,
			call:       getPull,
			wantStatus: 0, wantCalls: 3, endpoint: "GET /repos/{owner}/{repo}/pulls/{id}",
		},
		{
			name: "5xx on GET gives up after MaxAttempts", policy: RetryPolicy{MaxAttempts: 3}, fault: "GET /repos/*/*/pulls/1", status: 500, count: 10,
			call:       getPull,
			wantStatus: 500, wantCalls: 3, endpoint: "GET /repos/{owner}/{repo}/pulls/{id}",
		},
		{
			name: "5xx on POST is not retried", fault: "POST /repos/*/*/check-runs", status: 502, count: 1,
			call:       createRun,
			wantStatus: 502, wantCalls: 1, endpoint: "POST /repos/{owner}/{repo}/check-runs",
		},
		{
			name: "429 with Retry-After is retried even for POST", fault: "POST /repos/*/*/check-runs", status: 429, count: 1, header: http.Header{"Retry-After": {"0"}},
			call:       createRun,
			wantStatus: 0, wantCalls: 2, endpoint: "POST /repos/{owner}/{repo}/check-runs",
		},
		{
			name: "Retry-After beyond MaxWait is not waited", policy: RetryPolicy{MaxWait: time.Second}, fault: "POST /repos/*/*/check-runs", status: 429, count: 1, header: http.Header{"Retry-After": {"120"}},
			call:       createRun,
			wantStatus: 429, wantCalls: 1, endpoint: "POST /repos/{owner}/{repo}/check-runs",
		},
		{
			name: "403 rate limited waits for the reset", fault: "GET /repos/*/*/pulls/1", status: 403, count: 1,
			call:       getPull,
			wantStatus: 0, wantCalls: 2, endpoint: "GET /repos/{owner}/{repo}/pulls/{id}",
		},
		{
			name: "403 secondary limit without headers is not waited beyond MaxWait", policy: RetryPolicy{MaxWait: time.Second}, fault: "GET /repos/*/*/pulls/1", status: 403, count: 1, header: http.Header{"X-Test": {"1"}},
			call:       getPull,
			wantStatus: 403, wantCalls: 1, endpoint: "GET /repos/{owner}/{repo}/pulls/{id}",
		},
		{
			name: "404 is not retried", fault: "GET /repos/*/*/pulls/1", status: 404, count: 1,
			call:       getPull,
			wantStatus: 404, wantCalls: 1, endpoint: "GET /repos/{owner}/{repo}/pulls/{id}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeEnv(t, tt.policy)
			c := e.installation(t)
			if _, err := e.fake.AddPullRequest(testOwner, testRepo, githubfake.PR{Author: "alice", HeadSHA: githubfake.MakeSHA("h")}); err != nil {
				t.Fatal(err)
			}
			e.fake.InjectFault(tt.fault, tt.status, tt.count, tt.header)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := tt.call(ctx, c)
			if got := httpStatus(err); got != tt.wantStatus {
				t.Errorf("status %d (%v), want %d", got, err, tt.wantStatus)
			}
			if got := e.metrics.Count(tt.endpoint + " "); got != tt.wantCalls {
				t.Errorf("%s exchanges = %d, want %d", tt.endpoint, got, tt.wantCalls)
			}
		})
	}
}

func getPull(ctx context.Context, c *github.Client) error {
	_, _, err := c.PullRequests.Get(ctx, testOwner, testRepo, 1)
	return err
}

func createRun(ctx context.Context, c *github.Client) error {
	_, _, err := c.Checks.CreateCheckRun(ctx, testOwner, testRepo, github.CreateCheckRunOptions{Name: "x", HeadSHA: githubfake.MakeSHA("h")})
	return err
}

func TestTransportWaitHonoursContext(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{})
	c := e.installation(t)
	e.fake.InjectFault("GET /repos/*/*", 429, 1, http.Header{"Retry-After": {"30"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, _, err := c.Repositories.Get(ctx, testOwner, testRepo)
	// A wait the request's deadline cannot cover is not begun: GitHub's answer comes back at once.
	if got := httpStatus(err); got != 429 {
		t.Errorf("err = %v (status %d), want the 429", err, got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("returned after %v, want at once", d)
	}
	// Nor is another request of the installation sent within the 30 s.
	_, _, err = c.Repositories.Get(ctx, testOwner, testRepo)
	var rl *RateLimitedError
	if !errors.As(err, &rl) || rl.Identity != testInstID || time.Until(rl.Until) < 25*time.Second {
		t.Errorf("second request: %v, want a RateLimitedError of installation %d for about 30 s", err, testInstID)
	}
	if n := e.metrics.Count("GET /repos/{owner}/{repo} "); n != 1 {
		t.Errorf("exchanges = %d, want 1 (the second request must not be sent)", n)
	}
}

func TestConditionalRequests(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	e.fake.AddPullRequest(testOwner, testRepo, githubfake.PR{Author: "alice", HeadSHA: githubfake.MakeSHA("h")})
	first, r1, err := c.PullRequests.Get(ctx, testOwner, testRepo, 1)
	if err != nil {
		t.Fatal(err)
	}
	second, r2, err := c.PullRequests.Get(ctx, testOwner, testRepo, 1)
	if err != nil {
		t.Fatalf("revalidated GET: %v", err)
	}
	if first.GetHead().GetSHA() != second.GetHead().GetSHA() || r2.StatusCode != http.StatusOK {
		t.Errorf("revalidated answer: status %d head %s, want 200 with head %s", r2.StatusCode, second.GetHead().GetSHA(), first.GetHead().GetSHA())
	}
	if r2.Rate.Remaining != r1.Rate.Remaining {
		t.Errorf("remaining after a 304 = %d, want unchanged %d", r2.Rate.Remaining, r1.Rate.Remaining)
	}
	if n := e.metrics.Count("GET /repos/{owner}/{repo}/pulls/{id} Not Modified"); n != 1 {
		t.Errorf("304 exchanges = %d, want 1", n)
	}
	// A change is seen: the ETag no longer matches.
	e.fake.PushPullRequest(testOwner, testRepo, 1, githubfake.MakeSHA("h2"))
	third, _, err := c.PullRequests.Get(ctx, testOwner, testRepo, 1)
	if err != nil || third.GetHead().GetSHA() != githubfake.MakeSHA("h2") {
		t.Errorf("after a push: head %s (%v), want the new head", third.GetHead().GetSHA(), err)
	}
}

func TestEndpointLabel(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{"PATCH", "/repos/acme/catalog/check-runs/123", "PATCH /repos/{owner}/{repo}/check-runs/{id}"},
		{"GET", "/repos/acme/catalog/commits/0123456789abcdef0123456789abcdef01234567/check-runs", "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"},
		{"GET", "/repos/acme/catalog/branches/release/4.16/protection/required_status_checks", "GET /repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks"},
		{"GET", "/orgs/acme/teams/admins/members", "GET /orgs/{org}/teams/{team}/members"},
		{"POST", "/app/installations/77/access_tokens", "POST /app/installations/{id}/access_tokens"},
		{"DELETE", "/repos/a/b/issues/5/labels/do-not-merge", "DELETE /repos/{owner}/{repo}/issues/{id}/labels/{name}"},
		{"GET", "/repos/a/b", "GET /repos/{owner}/{repo}"},
	}
	for _, tt := range tests {
		if got := EndpointLabel(tt.method, tt.path); got != tt.want {
			t.Errorf("EndpointLabel(%s %s) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestTokenRequestIsRetriedOn5xx(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{})
	e.fake.InjectFault("POST /app/installations/*/access_tokens", 502, 1, nil)
	if _, err := e.gh.Installation(context.Background(), testInstID); err != nil {
		t.Fatalf("Installation after one 502 on the token request: %v", err)
	}
	if n := e.metrics.Count("POST /app/installations/{id}/access_tokens "); n != 2 {
		t.Errorf("token exchanges = %d, want 2", n)
	}
	_, app := e.metrics.Remaining(0)
	if !app {
		t.Error("the token request's rate limit was not reported as the App's (installation 0)")
	}
}
