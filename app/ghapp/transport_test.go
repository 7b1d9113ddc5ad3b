package ghapp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// earlyRequests lists the requests the fake got while their identity was
// rate limited after being told so.
func earlyRequests(f *githubfake.Fake) []githubfake.Request {
	var out []githubfake.Request
	for _, r := range f.Requests() {
		if r.Early {
			out = append(out, r)
		}
	}
	return out
}

// TestRateLimitHoldsEveryRequestOfTheIdentity: once GitHub rate limits an
// installation, a request of another job of that installation waits too,
// instead of being sent and refused again.
func TestRateLimitHoldsEveryRequestOfTheIdentity(t *testing.T) {
	for _, kind := range []githubfake.FaultKind{githubfake.FaultSecondaryLimit, githubfake.FaultTooManyRequests, githubfake.FaultPrimaryLimit} {
		t.Run(string(kind), func(t *testing.T) {
			e := newFakeEnv(t, RetryPolicy{})
			c := e.installation(t)
			if _, err := e.fake.AddPullRequest(testOwner, testRepo, githubfake.PR{Author: "alice", HeadSHA: githubfake.MakeSHA("h")}); err != nil {
				t.Fatal(err)
			}
			if err := e.fake.StartOutage(githubfake.Outage{Kinds: []githubfake.FaultKind{kind}, Requests: 1, RetryAfter: time.Second, ResetAfter: time.Second}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make([]error, 2)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[0] = getPull(ctx, c)
			}()
			// The second job starts once the first one's answer closed the gate.
			for e.gh.gate.openAt(testInstID, time.Now()).IsZero() {
				if ctx.Err() != nil {
					t.Fatal("the rate-limited answer never closed the installation's gate")
				}
				time.Sleep(time.Millisecond)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[1] = c.Repositories.Get(ctx, testOwner, testRepo)
			}()
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("job %d: %v, want success after the wait", i, err)
				}
			}
			if early := earlyRequests(e.fake); len(early) > 0 {
				t.Errorf("requests sent before GitHub's time: %+v", early)
			}
			// The App's own identity was never held.
			if !e.gh.gate.openAt(0, time.Now()).IsZero() {
				t.Error("the App's gate is closed by an installation's limit")
			}
		})
	}
}

// TestRateLimitBeyondMaxWaitIsNotSent: a limit longer than the transport may
// block fails the next requests at once, without sending them.
func TestRateLimitBeyondMaxWaitIsNotSent(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{MaxWait: time.Second})
	c := e.installation(t)
	if err := e.fake.StartOutage(githubfake.Outage{Kinds: []githubfake.FaultKind{githubfake.FaultPrimaryLimit}, Requests: 1, ResetAfter: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := c.Repositories.Get(ctx, testOwner, testRepo); httpStatus(err) != 403 {
		t.Fatalf("limited request: %v, want GitHub's 403", err)
	}
	// A raw request through the same transport: go-github's own memory of the
	// limit is per client and would answer before the transport is reached.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, githubfake.APIURL(e.srv.URL)+"repos/acme/catalog", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client().Do(req)
	var rl *RateLimitedError
	if !errors.As(err, &rl) || rl.Identity != testInstID || time.Until(rl.Until) < 25*time.Second {
		t.Errorf("request during the limit: %v, want a RateLimitedError of installation %d until about 31 s from now", err, testInstID)
	}
	if n := e.metrics.Count("GET /repos/{owner}/{repo} "); n != 1 {
		t.Errorf("exchanges = %d, want 1", n)
	}
}

// TestSpentBudgetHoldsUntilReset: an answer with X-RateLimit-Remaining: 0 is
// the last request before the reset, even when it succeeded.
func TestSpentBudgetHoldsUntilReset(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{MaxWait: time.Second}, func(o *githubfake.Options) { o.RateLimit = 2 })
	c := e.installation(t)
	ctx := context.Background()
	// Two different requests (a repeated GET would be a free 304).
	if _, _, err := c.Repositories.Get(ctx, testOwner, testRepo); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PullRequests.List(ctx, testOwner, testRepo, nil); err != nil {
		t.Fatal(err)
	}
	// go-github remembers remaining 0 for its own client; another client
	// of the installation (a raw request here) is held by the transport.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, githubfake.APIURL(e.srv.URL)+"repos/acme/catalog/issues/1/comments", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client().Do(req)
	var rl *RateLimitedError
	if !errors.As(err, &rl) {
		t.Errorf("request after the budget ran out: %v, want a RateLimitedError without a request", err)
	}
	if early := earlyRequests(e.fake); len(early) > 0 {
		t.Errorf("requests sent after remaining 0: %+v", early)
	}
}

func TestSecondaryLimitWithoutWaitBacksOffExponentially(t *testing.T) {
	g := newRateGate()
	var got []time.Duration
	for i := 0; i < 6; i++ {
		got = append(got, g.strike(7))
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 16 * time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	if w := g.strike(8); w != time.Minute {
		t.Errorf("another identity's first wait = %v, want 1m", w)
	}
	g.clear(7)
	if w := g.strike(7); w != time.Minute {
		t.Errorf("wait after an answer that was not a limit = %v, want 1m again", w)
	}
}

func TestTransportIdentity(t *testing.T) {
	tr := newAPITransport(http.DefaultTransport, 42, "", RetryPolicy{}, nil, nil)
	for auth, want := range map[string]int64{"Bearer a.b.c": 0, "token ghs_x": 42, "": 42} {
		req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if got := tr.identity(req); got != want {
			t.Errorf("identity with %q = %d, want %d", auth, got, want)
		}
	}
}
