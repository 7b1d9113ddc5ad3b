package resilience

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// faultPlan sizes the GitHub fault scenario.
type faultPlan struct {
	deliveries int
	outage     time.Duration
	retryAfter time.Duration // asked by secondary limits
	resetAfter time.Duration // primary limit reset, from the limiting answer
	seed       uint64
}

func faultPlanFor(t *testing.T) faultPlan {
	p := faultPlan{deliveries: 14, outage: 10 * time.Second, retryAfter: 2 * time.Second, resetAfter: 3 * time.Second, seed: uint64(time.Now().UnixNano())}
	switch {
	case os.Getenv("CATALOGBOT_RESILIENCE_LONG") == "1":
		p.deliveries, p.outage = 60, 45*time.Second
	case testing.Short():
		p.deliveries, p.outage = 8, 6*time.Second
	}
	p.seed = seedFromEnv(t, p.seed)
	t.Logf("GitHub faults: %d deliveries over a %s outage (Retry-After %s, reset after %s), seed %d",
		p.deliveries, p.outage, p.retryAfter, p.resetAfter, p.seed)
	return p
}

// outageKinds is the fault cycle: a flaky GitHub that fails about two
// requests in three with every failure GitHub documents.
var outageKinds = []githubfake.FaultKind{
	githubfake.FaultNone, githubfake.FaultServerError,
	githubfake.FaultNone, githubfake.FaultBadGateway,
	githubfake.FaultPrimaryLimit,
	githubfake.FaultNone, githubfake.FaultSecondaryLimit,
	githubfake.FaultNone, githubfake.FaultTooManyRequests,
	githubfake.FaultServerError, githubfake.FaultPrimaryLimit429,
}

// earlyGrace: a request that reaches the fake this soon after the answer
// that limited its identity was already on its way (another worker's), not
// a request sent in spite of the answer.
const earlyGrace = 250 * time.Millisecond

// TestGitHubFaults streams deliveries into one server (SQLite) while the
// fake GitHub fails with 500, 502, primary and secondary rate limits (403
// and 429) for a while, then recovers. Every delivery must end with one
// completed set of check runs on its PR's head, no PR merged twice, no
// request sent before a Retry-After or rate-limit reset had passed, and a
// bounded number of requests during the outage.
func TestGitHubFaults(t *testing.T) {
	p := faultPlanFor(t)
	w := newWorld(t)
	const workers = 4
	r := w.newReplica("sqlite", serverOptions{dataDir: filepath.Join(t.TempDir(), "data"), workers: workers, jobTimeout: 20 * time.Second})
	r.Start()
	r.WaitReady(60 * time.Second)
	r.WaitLog(`"msg":"resync done"`, 30*time.Second) // see TestDatabaseOutagePostgres
	w.fake.SetWebhook(r.URL(), hookToken)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(p.seed, p.seed^0x51ed270b9a3c4f11))
	client := &http.Client{Timeout: 10 * time.Second}

	if err := w.fake.StartOutage(githubfake.Outage{Kinds: outageKinds, Duration: p.outage, RetryAfter: p.retryAfter, ResetAfter: p.resetAfter}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tr := &traffic{w: w, rng: rng}
	gap := p.outage / time.Duration(p.deliveries)
	for i := 0; i < p.deliveries; i++ {
		var d *delivery
		switch x := rng.Float64(); {
		case len(tr.sent) > 0 && x < 0.15: // GitHub redelivers a GUID
			d = tr.again()
		case len(tr.prs) > 0 && x < 0.4:
			d = tr.push()
		default:
			d = tr.open()
		}
		if code, err := deliver(ctx, client, r.URL(), d); err != nil || code < 200 || code >= 300 {
			t.Errorf("delivery %s (PR %d) during the GitHub outage: %d %v; the webhook must not depend on GitHub", d.GUID, d.pr, code, err)
		}
		time.Sleep(gap)
	}

	waitAllChecked(ctx, t, w, tr.current())
	recovered := time.Since(start)
	settle(ctx, w, tr.prs) // late retries land before counting

	checkOneSetEach(t, w, tr.prs)
	checkNoDoubleMerge(t, w)
	if !r.Alive() {
		t.Errorf("the server exited during the GitHub outage")
	}

	outages := w.fake.Outages()
	if len(outages) != 1 || outages[0].End.IsZero() {
		t.Fatalf("outage report %+v, want one finished outage", outages)
	}
	o := outages[0]
	st := limitCompliance(w.fake.Requests(), o.Start, o.End)
	for _, v := range st.violations {
		t.Errorf("request sent while rate limited: %s", v)
	}
	// Requests already on their way when a limit was answered: at most one
	// per requester (the workers and the periodic jobs) for each limit.
	if st.racing > st.limits*(workers+2) {
		t.Errorf("%d requests reached GitHub within %s of one of %d rate-limited answers of their identity; at most %d in flight per answer are expected",
			st.racing, earlyGrace, st.limits, workers+2)
	}
	secs := o.End.Sub(o.Start).Seconds()
	// A hot loop makes hundreds of requests a second; the transport's
	// backoff and the limits' waits keep it to a few.
	if rate := float64(st.inWindow) / secs; rate > 15 {
		t.Errorf("%d requests in the %.1f s outage (%.1f/s): retries are not bounded", st.inWindow, secs, rate)
	}
	var kinds []string
	for k, n := range o.Faults {
		kinds = append(kinds, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("outage %.1f s: %d requests (%.1f/s), failures %s; %d rate-limit answers, %d requests in flight within %s of one (latest %s after), %d early; waits after a limit: shortest margin %s, longest %s past the asked time; all checked %.1f s after the first delivery",
		secs, st.inWindow, float64(st.inWindow)/secs, strings.Join(kinds, " "), st.limits, st.racing, earlyGrace, st.maxRacing.Round(time.Millisecond), len(st.violations),
		st.minMargin.Round(time.Millisecond), st.maxMargin.Round(time.Millisecond), recovered.Seconds())
}

// limitStats is what the request log says about the client's manners.
type limitStats struct {
	inWindow   int // requests that arrived during the outage
	limits     int // rate-limited answers that imposed a wait
	racing     int // early requests within earlyGrace of the limiting answer
	maxRacing  time.Duration
	violations []string // early requests later than that
	// minMargin and maxMargin: how long after the asked time the identity's
	// next request came, over all limits (never negative when it waits).
	minMargin, maxMargin time.Duration
}

func limitCompliance(rs []githubfake.Request, start, end time.Time) limitStats {
	var st limitStats
	st.minMargin = time.Duration(1<<63 - 1)
	type pending struct {
		at, until time.Time
	}
	open := map[string]*pending{} // identity → last limit not yet followed by a request
	for _, r := range rs {
		if !r.At.Before(start) && !r.At.After(end) {
			st.inWindow++
		}
		if r.Identity == "" {
			continue
		}
		if r.Early {
			if d := r.At.Sub(r.LimitedAt); d <= earlyGrace {
				st.racing++
				st.maxRacing = max(st.maxRacing, d)
			} else {
				st.violations = append(st.violations, fmt.Sprintf("%s %s %s at %s, %s after the limiting answer; allowed from %s",
					r.Identity, r.Method, r.Path, r.At.Format("15:04:05.000"), r.At.Sub(r.LimitedAt).Round(time.Millisecond), r.RetryAt.Format("15:04:05.000")))
			}
			continue
		}
		if p := open[r.Identity]; p != nil {
			m := r.At.Sub(p.until)
			st.minMargin = min(st.minMargin, m)
			st.maxMargin = max(st.maxMargin, m)
			delete(open, r.Identity)
		}
		if !r.RetryAt.IsZero() {
			st.limits++
			open[r.Identity] = &pending{at: r.At, until: r.RetryAt}
		}
	}
	if st.limits == 0 {
		st.minMargin = 0
	}
	return st
}
