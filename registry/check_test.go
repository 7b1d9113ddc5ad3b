package registry

import (
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckAgainstInProcessRegistry(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	img := push(t, c, reg.host+"/org/bundle:v1")
	digest := digestOf(t, img)
	const zeros = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

	tests := []struct {
		name       string
		ref        string
		want       Kind
		wantStatus int
		wantDigest string
	}{
		{"existing tag", reg.host + "/org/bundle:v1", Exists, 200, digest},
		{"existing digest", reg.host + "/org/bundle@" + digest, Exists, 200, digest},
		{"missing tag", reg.host + "/org/bundle:v2", Missing, 404, ""},
		{"missing digest", reg.host + "/org/bundle@" + zeros, Missing, 404, ""},
		{"missing repository", reg.host + "/org/nothing:v1", Missing, 404, ""},
		{"no tag", reg.host + "/org/bundle", Invalid, 0, ""},
		{"no registry", "org/bundle:v1", Invalid, 0, ""},
		{"bad digest", reg.host + "/org/bundle@sha256:abc", Invalid, 0, ""},
		{"upper case repository", reg.host + "/Org/bundle:v1", Invalid, 0, ""},
		{"too long", reg.host + "/org/" + strings.Repeat("a", 2000) + ":v1", Invalid, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Check(testCtx(t), tt.ref)
			if got.Kind != tt.want || got.Status != tt.wantStatus || got.Digest != tt.wantDigest {
				t.Errorf("Check(%s) = %v %d %q (%s), want %v %d %q", tt.ref, got.Kind, got.Status, got.Digest, got.Reason, tt.want, tt.wantStatus, tt.wantDigest)
			}
			if got.Ref != tt.ref {
				t.Errorf("Check(%s).Ref = %q, want the reference as given", tt.ref, got.Ref)
			}
			if tt.want == Invalid && got.Requests != 0 {
				t.Errorf("Check(%s) sent %d requests for an invalid reference, want 0", tt.ref, got.Requests)
			}
		})
	}
}

func TestCheckUsesHeadOnly(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	push(t, c, reg.host+"/org/bundle:v1")
	gets, heads := reg.count("GET /v2/org/bundle/"), reg.count("HEAD /v2/org/bundle/manifests/")
	if got := c.Check(testCtx(t), reg.host+"/org/bundle:v1"); got.Kind != Exists {
		t.Fatalf("Check = %v (%s), want exists", got.Kind, got.Reason)
	}
	if got := reg.count("GET /v2/org/bundle/") - gets; got != 0 {
		t.Errorf("Check sent %d GETs of manifests or blobs, want 0 (HEAD only)", got)
	}
	if got := reg.count("HEAD /v2/org/bundle/manifests/") - heads; got != 1 {
		t.Errorf("Check sent %d manifest HEADs, want 1", got)
	}
}

func TestCheckCachesDigestsNotTags(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	img := push(t, c, reg.host+"/org/bundle:v1")
	byDigest := reg.host + "/org/bundle@" + digestOf(t, img)
	byTag := reg.host + "/org/bundle:v1"
	for _, ref := range []string{byDigest, byTag} {
		c.Check(testCtx(t), ref)
	}
	before := reg.total()
	if got := c.Check(testCtx(t), byDigest); got.Kind != Exists || got.Requests != 0 {
		t.Errorf("second Check(by digest) = %v with %d requests, want exists with 0", got.Kind, got.Requests)
	}
	if got := reg.total() - before; got != 0 {
		t.Errorf("second Check(by digest) reached the registry %d times, want 0", got)
	}
	if got := c.Check(testCtx(t), byTag); got.Kind != Exists || got.Requests == 0 {
		t.Errorf("second Check(by tag) = %v with %d requests, want exists asked again", got.Kind, got.Requests)
	}
	// A budget view shares the cache: a known digest costs nothing even with no budget left.
	if got := c.WithBudget(0).Check(testCtx(t), byDigest); got.Kind != Exists {
		t.Errorf("WithBudget(0).Check(cached digest) = %v (%s), want exists", got.Kind, got.Reason)
	}
}

func TestCheckAll(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host, WithConcurrency(3))
	var refs []string
	for _, tag := range []string{"a", "b", "c", "d", "e"} {
		push(t, c, reg.host+"/org/bundle:"+tag)
		refs = append(refs, reg.host+"/org/bundle:"+tag)
	}
	push(t, c, reg.host+"/org/other:a")
	refs = append(refs, reg.host+"/org/other:a", reg.host+"/org/bundle:missing", refs[0], "not a ref")
	pings := reg.countExact("GET /v2/")
	got := c.CheckAll(testCtx(t), refs)
	if len(got) != 8 {
		t.Fatalf("CheckAll returned %d results, want 8 (one per distinct reference)", len(got))
	}
	for _, ref := range refs[:6] {
		if got[ref].Kind != Exists {
			t.Errorf("CheckAll[%s] = %v (%s), want exists", ref, got[ref].Kind, got[ref].Reason)
		}
	}
	if k := got[reg.host+"/org/bundle:missing"].Kind; k != Missing {
		t.Errorf("CheckAll[missing] = %v, want missing", k)
	}
	if k := got["not a ref"].Kind; k != Invalid {
		t.Errorf("CheckAll[not a ref] = %v, want invalid", k)
	}
	if n := reg.countExact("GET /v2/") - pings; n != 2 {
		t.Errorf("CheckAll pinged the registry %d times for two repositories, want 2 (one handshake per repository)", n)
	}
}

// armed switches fault injection on once the test image is pushed.
type armed struct{ on atomic.Bool }

// faults answers manifest HEADs with status (and headers) for the first n of them once armed, then passes
// through.
func (a *armed) faults(n int64, status int, header map[string]string) func(http.Handler) http.Handler {
	var seen atomic.Int64
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a.on.Load() && isManifest(r) && r.Method == http.MethodHead && seen.Add(1) <= n {
				for k, v := range header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(status)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestCheckFaults(t *testing.T) {
	const always = 1 << 30
	type injector func(a *armed) func(http.Handler) http.Handler
	faults := func(n int64, status int, header map[string]string) injector {
		return func(a *armed) func(http.Handler) http.Handler { return a.faults(n, status, header) }
	}
	tests := []struct {
		name           string
		wrap           injector
		opts           []Option
		want           Kind
		wantStatus     int
		wantHeads      int
		wantRetryAfter time.Duration
		wantWaited     time.Duration
	}{
		{"429 with Retry-After 1 then success", faults(1, 429, map[string]string{"Retry-After": "1"}), nil,
			Exists, 200, 2, time.Second, time.Second},
		{"429 with hostile Retry-After is not obeyed", faults(always, 429, map[string]string{"Retry-After": "99999"}), nil,
			Unverified, 429, 1, 99999 * time.Second, 0},
		{"429 with Retry-After beyond the deadline is not obeyed", faults(always, 429, map[string]string{"Retry-After": "5"}),
			[]Option{WithTimeout(2 * time.Second)}, Unverified, 429, 1, 5 * time.Second, 0},
		{"persistent 500", faults(always, 500, nil), []Option{WithMaxAttempts(4)}, Unverified, 500, 4, 0, -1},
		{"503 once", faults(1, 503, nil), nil, Exists, 200, 2, 0, -1},
		{"total wait capped", faults(always, 502, nil), []Option{WithMaxAttempts(10),
			WithRetryBackoff(10*time.Millisecond, 10*time.Millisecond), WithMaxRetryWait(15 * time.Millisecond)},
			Unverified, 502, 2, 0, -1},
		{"503 with Retry-After", faults(1, 503, map[string]string{"Retry-After": "0"}), nil, Exists, 200, 2, 0, 0},
		{"403", faults(always, 403, nil), nil, Inaccessible, 403, 1, 0, 0},
		{"401", faults(always, 401, nil), nil, Inaccessible, 401, 1, 0, 0},
		{"400 is not retried", faults(always, 400, nil), nil, Unverified, 400, 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a armed
			reg := newTestRegistry(t, tt.wrap(&a))
			c := newTestClient(t, reg.host, tt.opts...)
			push(t, c, reg.host+"/org/bundle:v1")
			a.on.Store(true)
			heads := reg.count("HEAD /v2/org/bundle/manifests/")
			got := c.Check(testCtx(t), reg.host+"/org/bundle:v1")
			if got.Kind != tt.want || got.Status != tt.wantStatus {
				t.Errorf("Check = %v %d (%s), want %v %d", got.Kind, got.Status, got.Reason, tt.want, tt.wantStatus)
			}
			if n := reg.count("HEAD /v2/org/bundle/manifests/") - heads; n != tt.wantHeads {
				t.Errorf("registry saw %d manifest HEADs, want %d", n, tt.wantHeads)
			}
			if got.RetryAfter != tt.wantRetryAfter {
				t.Errorf("Check.RetryAfter = %v, want %v", got.RetryAfter, tt.wantRetryAfter)
			}
			if tt.wantWaited >= 0 && got.Waited != tt.wantWaited {
				t.Errorf("Check.Waited = %v, want %v", got.Waited, tt.wantWaited)
			}
			if got.Kind != Exists && got.Reason == "" {
				t.Errorf("Check gave no reason for %v", got.Kind)
			}
		})
	}
}

func TestCheckRetriesDroppedConnections(t *testing.T) {
	var a armed
	drop := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a.on.Load() && isManifest(r) && r.Method == http.MethodHead {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	reg := newTestRegistry(t, drop)
	c := newTestClient(t, reg.host, WithMaxAttempts(3))
	push(t, c, reg.host+"/org/bundle:v1")
	a.on.Store(true)
	heads := reg.count("HEAD /v2/org/bundle/manifests/")
	got := c.Check(testCtx(t), reg.host+"/org/bundle:v1")
	if got.Kind != Unverified || got.Status != 0 {
		t.Errorf("Check(connection dropped) = %v %d (%s), want unverified without a status", got.Kind, got.Status, got.Reason)
	}
	// Our transport tries 3 times; net/http itself re-sends a request once on a fresh connection when a reused
	// keep-alive connection dies before answering, so the registry sees between 3 and 6 HEADs, never 3×3.
	if n := reg.count("HEAD /v2/org/bundle/manifests/") - heads; n < 3 || n > 6 {
		t.Errorf("registry saw %d manifest HEADs, want 3 to 6", n)
	}
}

func TestCheckSlowRegistryTimesOut(t *testing.T) {
	var a armed
	slow := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a.on.Load() && isManifest(r) && r.Method == http.MethodHead {
				select {
				case <-r.Context().Done():
				case <-time.After(20 * time.Second):
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	reg := newTestRegistry(t, slow)
	push(t, newTestClient(t, reg.host), reg.host+"/org/bundle:v1")
	a.on.Store(true)
	heads := reg.count("HEAD /v2/org/bundle/manifests/")
	c := newTestClient(t, reg.host, WithTimeout(300*time.Millisecond))
	got := c.Check(testCtx(t), reg.host+"/org/bundle:v1")
	if got.Kind != Unverified {
		t.Errorf("Check(slow registry) = %v (%s), want unverified", got.Kind, got.Reason)
	}
	if n := reg.count("HEAD /v2/org/bundle/manifests/") - heads; n != 1 {
		t.Errorf("registry saw %d manifest HEADs, want 1 (a timed-out request is not retried past the deadline)", n)
	}
}

func TestCheckRespectsCallerContext(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	ctx, cancel := contextWithCancel(t)
	cancel()
	if got := c.Check(ctx, reg.host+"/org/bundle:v1"); got.Kind != Unverified || got.Requests != 0 {
		t.Errorf("Check(cancelled ctx) = %v with %d requests, want unverified with 0", got.Kind, got.Requests)
	}
	if n := reg.total(); n != 0 {
		t.Errorf("registry saw %d requests, want 0", n)
	}
}

func TestBudget(t *testing.T) {
	reg := newTestRegistry(t, nil)
	c := newTestClient(t, reg.host)
	push(t, c, reg.host+"/org/bundle:v1")
	ref := reg.host + "/org/bundle:v1"

	full := c.Check(testCtx(t), ref)
	if full.Kind != Exists || full.Requests < 2 {
		t.Fatalf("Check = %v with %d requests, want exists with a handshake and a HEAD", full.Kind, full.Requests)
	}
	if got := c.Remaining(); got != -1 {
		t.Errorf("Remaining() without a budget = %d, want -1", got)
	}

	view := c.WithBudget(full.Requests)
	if got := view.Check(testCtx(t), ref); got.Kind != Exists {
		t.Fatalf("view.Check within budget = %v (%s), want exists", got.Kind, got.Reason)
	}
	if got := view.Remaining(); got != 0 {
		t.Errorf("view.Remaining() = %d, want 0", got)
	}
	before := reg.total()
	got := view.Check(testCtx(t), ref)
	if got.Kind != Unverified || got.Requests != 0 {
		t.Errorf("view.Check with the budget spent = %v with %d requests, want unverified with 0", got.Kind, got.Requests)
	}
	if n := reg.total() - before; n != 0 {
		t.Errorf("registry saw %d requests after the budget was spent, want 0", n)
	}

	short := c.WithBudget(full.Requests - 1)
	before = reg.total()
	if got := short.Check(testCtx(t), ref); got.Kind != Unverified {
		t.Errorf("Check running out of budget midway = %v (%s), want unverified", got.Kind, got.Reason)
	}
	if n := reg.total() - before; n > full.Requests-1 {
		t.Errorf("registry saw %d requests from a view with budget %d, want at most %d", n, full.Requests-1, full.Requests-1)
	}
	// The parent and other views are unaffected.
	if got := c.Check(testCtx(t), ref); got.Kind != Exists {
		t.Errorf("parent Check after a view spent its budget = %v, want exists", got.Kind)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Unverified: "unverified", Exists: "exists", Missing: "missing",
		Inaccessible: "inaccessible", Invalid: "invalid", Kind(42): "Kind(42)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// TestRemoteOptionsDoNotMultiplyRetries pushes through RemoteOptions against a registry failing every upload:
// a POST is never retried (not idempotent), and go-containerregistry's own upload retries are off.
func TestRemoteOptionsDoNotMultiplyRetries(t *testing.T) {
	reg := newTestRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/blobs/uploads/") {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	c := newTestClient(t, reg.host)
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.parse(reg.host + "/org/bundle:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, c.RemoteOptions(testCtx(t))...); err == nil {
		t.Fatalf("remote.Write to a registry refusing uploads: no error, want one")
	}
	// The first failure cancels the other uploads, so 1 or 2 POSTs, never more than one per blob.
	if n, blobs := reg.count("POST /v2/org/bundle/blobs/uploads/"), 2; n < 1 || n > blobs {
		t.Errorf("registry saw %d upload POSTs for %d blobs, want 1 to %d (at most one each)", n, blobs, blobs)
	}
}
