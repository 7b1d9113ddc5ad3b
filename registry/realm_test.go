package registry

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// tokenService is a token endpoint on its own port that records who asked, and what it was sent.
type tokenService struct {
	host   string
	status int // answer; 200 hands out the token "good"
	mu     sync.Mutex
	asked  []string // the Authorization header of each request
}

func newTokenService(t *testing.T, status int) *tokenService {
	t.Helper()
	ts := &tokenService{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.mu.Lock()
		ts.asked = append(ts.asked, r.Header.Get("Authorization"))
		ts.mu.Unlock()
		if ts.status != http.StatusOK {
			http.Error(w, "no", ts.status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"token":"good"}`))
	}))
	t.Cleanup(srv.Close)
	ts.host = srv.Listener.Addr().String()
	return ts
}

func (ts *tokenService) requests() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.asked...)
}

// registryWithRealm wraps the test registry: without the token "good" it answers 401 naming realm.
func registryWithRealm(t *testing.T, realm string) *testRegistry {
	return newTestRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer good" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`",service="test",scope="repository:org/bundle:pull"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
}

// TestTokenRealmOutsideAllowListGetsNothing: a registry that names a token service on a host the operation
// does not allow gets an unverified answer, and the token service receives no request, so no credential.
// Before the realm guard, the address guard alone let the request (with the registry's Basic credentials)
// through, because the realm's address is allowed.
func TestTokenRealmOutsideAllowListGetsNothing(t *testing.T) {
	ts := newTokenService(t, http.StatusOK)
	reg := registryWithRealm(t, "http://"+ts.host+"/token")
	c := newTestClient(t, "127.0.0.1", WithCredentials(reg.host, "user", "secret"))

	got := c.Check(testCtx(t), reg.host+"/org/bundle:v1")
	if got.Kind != Unverified {
		t.Errorf("Check() = %v (%s), want unverified", got.Kind, got.Reason)
	}
	if !strings.Contains(got.Reason, ts.host) || !strings.Contains(got.Reason, "no credentials were sent") {
		t.Errorf("Check().Reason = %q, want it to name the token service %s and say nothing was sent", got.Reason, ts.host)
	}
	if asked := ts.requests(); len(asked) != 0 {
		t.Errorf("the token service outside the allow-list got %d requests (Authorization %q), want none", len(asked), asked)
	}
}

// TestTokenRealmOnAllowedHostWorks: listing the token service's host (as the checks do with the policy's
// allowed registries) lets the handshake go through.
func TestTokenRealmOnAllowedHostWorks(t *testing.T) {
	ts := newTokenService(t, http.StatusOK)
	reg := registryWithRealm(t, "http://"+ts.host+"/token")
	c := newTestClient(t, "127.0.0.1", WithCredentials(reg.host, "user", "secret"))
	ctx := WithTokenHosts(testCtx(t), ts.host)
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.parse(reg.host + "/org/bundle:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, c.RemoteOptions(ctx)...); err != nil {
		t.Fatalf("remote.Write() error = %v", err)
	}

	got := c.Check(ctx, reg.host+"/org/bundle:v1")
	if got.Kind != Exists || got.Digest != digestOf(t, img) {
		t.Errorf("Check() = %v %s (%s), want exists %s", got.Kind, got.Digest, got.Reason, digestOf(t, img))
	}
	if asked := ts.requests(); len(asked) == 0 || !strings.HasPrefix(asked[0], "Basic ") {
		t.Errorf("token service requests = %q, want the handshake with Basic credentials", asked)
	}
}

// TestTokenServiceFailureIsNotMissing: a token service's 404 says nothing about the image.
func TestTokenServiceFailureIsNotMissing(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			ts := newTokenService(t, status)
			reg := registryWithRealm(t, "http://"+ts.host+"/token")
			c := newTestClient(t, "127.0.0.1", WithCredentials(reg.host, "user", "secret"))
			got := c.Check(WithTokenHosts(testCtx(t), ts.host), reg.host+"/org/bundle:v1")
			if got.Kind != Unverified {
				t.Errorf("Check() = %v (%s), want unverified: the token service failed, not the image", got.Kind, got.Reason)
			}
			if !strings.Contains(got.Reason, "token service") {
				t.Errorf("Check().Reason = %q, want it to say the token service failed", got.Reason)
			}
		})
	}
}

// TestChallengeParam reads realm values as registries write them.
func TestChallengeParam(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{`realm="https://a/token",service="x"`, "https://a/token"},
		{`service="x", realm="https://a/t?x=1,2"`, "https://a/t?x=1,2"},
		{`realm=https://a/token,service=x`, "https://a/token"},
		{`service="x"`, ""},
		{`realm="unterminated`, ""},
		{``, ""},
	} {
		if got := challengeParam(tc.params, "realm"); got != tc.want {
			t.Errorf("challengeParam(%q) = %q, want %q", tc.params, got, tc.want)
		}
	}
}
