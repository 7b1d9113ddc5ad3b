package githubfake_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/google/go-github/v62/github"
)

// answer is what a raw request got back.
type answer struct {
	status  int
	header  http.Header
	message string
}

func (e *env) token(t *testing.T) string {
	t.Helper()
	tok, _, err := e.app.Apps.CreateInstallationToken(context.Background(), instID, nil)
	if err != nil {
		t.Fatal(err)
	}
	return "token " + tok.GetToken()
}

func (e *env) raw(t *testing.T, method, path, auth string) answer {
	t.Helper()
	req, err := http.NewRequest(method, githubfake.APIURL(e.srv.URL)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Message string `json:"message"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	return answer{status: resp.StatusCode, header: resp.Header, message: body.Message}
}

// lastRequest is the newest request the fake recorded.
func lastRequest(t *testing.T, f *githubfake.Fake) githubfake.Request {
	t.Helper()
	rs := f.Requests()
	if len(rs) == 0 {
		t.Fatal("no request recorded")
	}
	return rs[len(rs)-1]
}

func TestStartOutageRejectsBadOutages(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		o    githubfake.Outage
		want string
	}{
		{"no kinds", githubfake.Outage{Requests: 1}, "at least one fault kind"},
		{"unknown kind", githubfake.Outage{Kinds: []githubfake.FaultKind{"418"}, Requests: 1}, "unknown"},
		{"no end", githubfake.Outage{Kinds: []githubfake.FaultKind{githubfake.FaultBadGateway}}, "Duration or a number of Requests"},
		{"negative wait", githubfake.Outage{Kinds: []githubfake.FaultKind{githubfake.FaultBadGateway}, Requests: 1, RetryAfter: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		if err := e.fake.StartOutage(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: StartOutage = %v, want an error mentioning %q", tt.name, err, tt.want)
		}
	}
	if n := len(e.fake.Outages()); n != 0 {
		t.Errorf("%d outages recorded after refusals, want 0", n)
	}
}

func TestOutageByRequestsCyclesKindsThenRecovers(t *testing.T) {
	e := newEnv(t)
	auth := e.token(t)
	if err := e.fake.StartOutage(githubfake.Outage{Kinds: []githubfake.FaultKind{githubfake.FaultServerError, githubfake.FaultNone, githubfake.FaultBadGateway}, Requests: 3}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{500, 200, 502, 500, 200, 200} {
		if got := e.raw(t, "GET", "repos/acme/catalog", auth); got.status != want {
			t.Errorf("request %d: %d, want %d", i, got.status, want)
		}
	}
	rep := e.fake.Outages()
	if len(rep) != 1 || rep[0].End.IsZero() || rep[0].Faults[githubfake.FaultServerError] != 2 || rep[0].Faults[githubfake.FaultBadGateway] != 1 {
		t.Errorf("report %+v, want one finished outage with two 500 and one 502", rep)
	}
}

func TestOutageByDurationAndMatch(t *testing.T) {
	e := newEnv(t)
	auth := e.token(t)
	start := e.now.Now()
	if err := e.fake.StartOutage(githubfake.Outage{Kinds: []githubfake.FaultKind{githubfake.FaultBadGateway}, Duration: 10 * time.Second, Match: "GET /repos/*/*/pulls"}); err != nil {
		t.Fatal(err)
	}
	if got := e.raw(t, "GET", "repos/acme/catalog", auth); got.status != 200 {
		t.Errorf("a request the outage does not match: %d, want 200", got.status)
	}
	for i := 0; i < 3; i++ {
		if got := e.raw(t, "GET", "repos/acme/catalog/pulls", auth); got.status != 502 {
			t.Errorf("during the outage: %d, want 502", got.status)
		}
		if r := lastRequest(t, e.fake); r.Fault != githubfake.FaultBadGateway || r.Identity != "installation:77" {
			t.Errorf("recorded %+v, want a 502 fault of installation:77", r)
		}
	}
	if rep := e.fake.Outages(); rep[0].End.IsZero() == false {
		t.Errorf("outage ended at %v before its time", rep[0].End)
	}
	e.now.Advance(10 * time.Second)
	if got := e.raw(t, "GET", "repos/acme/catalog/pulls", auth); got.status != 200 {
		t.Errorf("after the outage: %d, want 200", got.status)
	}
	if rep := e.fake.Outages(); !rep[0].End.Equal(start.Add(10*time.Second)) || rep[0].Faults[githubfake.FaultBadGateway] != 3 {
		t.Errorf("report %+v, want the end 10 s after the start and three 502", rep[0])
	}
}

func TestOutagePrimaryRateLimit(t *testing.T) {
	for _, tt := range []struct {
		kind   githubfake.FaultKind
		status int
	}{{githubfake.FaultPrimaryLimit, 403}, {githubfake.FaultPrimaryLimit429, 429}} {
		t.Run(string(tt.kind), func(t *testing.T) {
			e := newEnv(t)
			auth := e.token(t)
			if err := e.fake.StartOutage(githubfake.Outage{Kinds: []githubfake.FaultKind{tt.kind}, Requests: 1, ResetAfter: 2500 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			now := e.now.Now()
			got := e.raw(t, "GET", "repos/acme/catalog", auth)
			reset := now.Add(2500 * time.Millisecond).Truncate(time.Second).Add(time.Second)
			if got.status != tt.status || got.header.Get("X-RateLimit-Remaining") != "0" ||
				got.header.Get("X-RateLimit-Reset") != strconv.FormatInt(reset.Unix(), 10) ||
				got.message != "API rate limit exceeded for installation ID 77." {
				t.Errorf("limited answer: %d remaining %q reset %q (want %d) %q", got.status, got.header.Get("X-RateLimit-Remaining"),
					got.header.Get("X-RateLimit-Reset"), reset.Unix(), got.message)
			}
			first := lastRequest(t, e.fake)
			if first.Early || !first.RetryAt.Equal(reset) || first.Fault != tt.kind {
				t.Errorf("first limited request recorded as %+v, want not early, RetryAt %v", first, reset)
			}
			// The App's own budget is another identity: not limited.
			if _, _, err := e.app.Apps.Get(context.Background(), ""); err != nil {
				t.Errorf("the App's JWT during the installation's limit: %v", err)
			}
			// The outage is over, but the limit holds until the reset.
			e.now.Advance(time.Second)
			if got := e.raw(t, "GET", "repos/acme/catalog", auth); got.status != tt.status {
				t.Errorf("before the reset: %d, want %d", got.status, tt.status)
			}
			if r := lastRequest(t, e.fake); !r.Early || !r.LimitedAt.Equal(first.At) {
				t.Errorf("request before the reset recorded as %+v, want early since %v", r, first.At)
			}
			e.now.Advance(reset.Sub(e.now.Now()))
			got = e.raw(t, "GET", "repos/acme/catalog", auth)
			if got.status != 200 || got.header.Get("X-RateLimit-Remaining") == "0" {
				t.Errorf("at the reset: %d remaining %q, want 200 with a fresh budget", got.status, got.header.Get("X-RateLimit-Remaining"))
			}
			if r := lastRequest(t, e.fake); r.Early {
				t.Errorf("request at the reset recorded as early: %+v", r)
			}
		})
	}
}

func TestOutageSecondaryRateLimits(t *testing.T) {
	e := newEnv(t)
	auth := e.token(t)
	if err := e.fake.StartOutage(githubfake.Outage{
		Kinds:    []githubfake.FaultKind{githubfake.FaultSecondaryLimit, githubfake.FaultTooManyRequests},
		Requests: 2, RetryAfter: 1500 * time.Millisecond,
	}); err != nil {
		t.Fatal(err)
	}
	got := e.raw(t, "POST", "repos/acme/catalog/check-runs", auth)
	if got.status != 403 || got.header.Get("Retry-After") != "2" || !strings.Contains(got.message, "You have exceeded a secondary rate limit") ||
		got.header.Get("X-RateLimit-Remaining") == "0" {
		t.Errorf("secondary limit: %d Retry-After %q remaining %q %q; want 403, 2, not 0, the secondary message",
			got.status, got.header.Get("Retry-After"), got.header.Get("X-RateLimit-Remaining"), got.message)
	}
	first := lastRequest(t, e.fake)
	if !first.RetryAt.Equal(first.At.Add(2*time.Second)) || first.Early {
		t.Errorf("recorded %+v, want RetryAt two seconds after its arrival", first)
	}
	e.now.Advance(1200 * time.Millisecond)
	got = e.raw(t, "GET", "repos/acme/catalog", auth)
	if got.status != 403 || got.header.Get("Retry-After") != "1" {
		t.Errorf("during the wait: %d Retry-After %q, want 403 and what is left (1)", got.status, got.header.Get("Retry-After"))
	}
	if r := lastRequest(t, e.fake); !r.Early || !r.LimitedAt.Equal(first.At) {
		t.Errorf("request during the wait recorded as %+v, want early", r)
	}
	if rep := e.fake.Outages(); rep[0].Faults[githubfake.FaultSecondaryLimit] != 1 || !rep[0].End.IsZero() {
		t.Errorf("an early request counted as an outage failure: %+v", rep[0])
	}
	e.now.Advance(800 * time.Millisecond)
	if got := e.raw(t, "GET", "repos/acme/catalog", auth); got.status != 429 || got.header.Get("Retry-After") != "2" {
		t.Errorf("second failure: %d Retry-After %q, want 429 and 2", got.status, got.header.Get("Retry-After"))
	}
	e.now.Advance(2 * time.Second)
	if got := e.raw(t, "GET", "repos/acme/catalog", auth); got.status != 200 {
		t.Errorf("after the outage and the wait: %d, want 200", got.status)
	}
}

func TestOutageSecondaryLimitParsesAsAbuseError(t *testing.T) {
	e := newEnv(t)
	if _, _, err := e.inst.Repositories.Get(context.Background(), owner, repoNm); err != nil { // gets the token first
		t.Fatal(err)
	}
	if err := e.fake.StartOutage(githubfake.Outage{Kinds: []githubfake.FaultKind{githubfake.FaultSecondaryLimit}, Requests: 1, RetryAfter: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.inst.Repositories.Get(context.Background(), owner, repoNm)
	var ab *github.AbuseRateLimitError
	if !errors.As(err, &ab) || ab.RetryAfter == nil || *ab.RetryAfter != 3*time.Second {
		t.Errorf("go-github sees %T %v, want an AbuseRateLimitError with RetryAfter 3s", err, err)
	}
}
