package githubfake

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRecordedRequests bounds the request log.
const maxRecordedRequests = 100000

// FaultKind is one way GitHub refuses a request.
type FaultKind string

const (
	// FaultServerError is a 500.
	FaultServerError FaultKind = "500"
	// FaultBadGateway is a 502, as GitHub's front ends answer when a
	// backend does not.
	FaultBadGateway FaultKind = "502"
	// FaultPrimaryLimit spends the identity's primary budget: 403 with
	// X-RateLimit-Remaining: 0 and "API rate limit exceeded for ...", for
	// every request of the identity until X-RateLimit-Reset.
	FaultPrimaryLimit FaultKind = "403 primary rate limit"
	// FaultPrimaryLimit429 is the same answered with 429, which GitHub's
	// documentation allows for the primary limit too.
	FaultPrimaryLimit429 FaultKind = "429 primary rate limit"
	// FaultSecondaryLimit is 403 "You have exceeded a secondary rate limit"
	// with Retry-After, for every request of the identity until then.
	FaultSecondaryLimit FaultKind = "403 secondary rate limit"
	// FaultTooManyRequests is the same secondary limit answered with 429.
	FaultTooManyRequests FaultKind = "429 secondary rate limit"
	// FaultNone serves the request normally: mixed with the others, it
	// makes a flaky GitHub rather than one that is down.
	FaultNone FaultKind = "none"
	// FaultInjected marks the answers of InjectFault.
	FaultInjected FaultKind = "injected"
)

const (
	primaryLimitDocs   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
	secondaryLimitDocs = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	secondaryLimitText = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)

// Outage is a period in which the fake answers authenticated API calls with
// failures instead of serving them. It starts when StartOutage is called and
// ends after Duration or after Requests failures, whichever comes first (at
// least one of them is set). Rate limits it imposes outlast it: a request of
// a limited identity is refused until its Retry-After or reset has passed,
// as GitHub does, and is recorded as Early.
type Outage struct {
	// Kinds are the failures, used in turn, one per request.
	Kinds []FaultKind
	// Duration bounds the outage in time (on the fake's clock).
	Duration time.Duration
	// Requests bounds the outage by the number of failed answers.
	Requests int
	// RetryAfter is the wait a secondary limit asks for, rounded up to whole
	// seconds (Retry-After carries seconds); default 1 s.
	RetryAfter time.Duration
	// ResetAfter puts a primary limit's X-RateLimit-Reset this far ahead,
	// rounded up to the second (the header carries epoch seconds); default 2 s.
	ResetAfter time.Duration
	// Match narrows the outage to some requests: "[METHOD ]/path" with
	// path.Match wildcards per segment, as InjectFault; "" is every call.
	Match string
}

// OutageReport says what an outage did.
type OutageReport struct {
	// Start and End bound the outage; End is zero while it lasts.
	Start, End time.Time
	// Faults counts the failed answers by kind.
	Faults map[FaultKind]int
}

type outage struct {
	o       Outage
	method  string
	pattern string
	start   time.Time
	end     time.Time
	next    int
	failed  int
	faults  map[FaultKind]int
	retry   time.Duration
	reset   time.Duration
}

// secondaryLimit is a secondary rate limit imposed on an identity.
type secondaryLimit struct {
	since, until time.Time
	status       int
	kind         FaultKind
}

// StartOutage begins an outage now. An outage still under way is ended first.
func (f *Fake) StartOutage(o Outage) error {
	if len(o.Kinds) == 0 {
		return errors.New("githubfake: an outage needs at least one fault kind")
	}
	for _, k := range o.Kinds {
		switch k {
		case FaultNone, FaultServerError, FaultBadGateway, FaultPrimaryLimit, FaultPrimaryLimit429, FaultSecondaryLimit, FaultTooManyRequests:
		default:
			return fmt.Errorf("githubfake: unknown outage fault kind %q", k)
		}
	}
	if o.Duration <= 0 && o.Requests <= 0 {
		return errors.New("githubfake: an outage needs a Duration or a number of Requests to end")
	}
	if o.Duration < 0 || o.Requests < 0 || o.RetryAfter < 0 || o.ResetAfter < 0 {
		return errors.New("githubfake: outage durations and counts cannot be negative")
	}
	ot := &outage{o: o, faults: map[FaultKind]int{}, retry: o.RetryAfter, reset: o.ResetAfter}
	if ot.retry == 0 {
		ot.retry = time.Second
	}
	if ot.reset == 0 {
		ot.reset = 2 * time.Second
	}
	ot.retry = ceilSecond(ot.retry)
	if o.Match != "" {
		m, p, ok := strings.Cut(o.Match, " ")
		if !ok {
			m, p = "", o.Match
		}
		ot.method, ot.pattern = strings.ToUpper(m), p
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if cur := f.currentOutageLocked(now); cur != nil {
		cur.end = now
	}
	ot.start = now
	f.outages = append(f.outages, ot)
	return nil
}

// Outages reports the outages so far, oldest first.
func (f *Fake) Outages() []OutageReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.currentOutageLocked(f.now()) // closes one that has run its course
	out := make([]OutageReport, len(f.outages))
	for i, ot := range f.outages {
		r := OutageReport{Start: ot.start, End: ot.end, Faults: map[FaultKind]int{}}
		for k, n := range ot.faults {
			r.Faults[k] = n
		}
		out[i] = r
	}
	return out
}

// currentOutageLocked returns the outage under way, closing the last one
// when its time is up.
func (f *Fake) currentOutageLocked(now time.Time) *outage {
	if len(f.outages) == 0 {
		return nil
	}
	ot := f.outages[len(f.outages)-1]
	if !ot.end.IsZero() {
		return nil
	}
	if ot.o.Duration > 0 && !now.Before(ot.start.Add(ot.o.Duration)) {
		ot.end = ot.start.Add(ot.o.Duration)
		return nil
	}
	return ot
}

// limitedLocked answers a request of an identity that is rate limited: its
// primary budget is spent, or a secondary limit holds. It notes on rec
// whether the caller had been told so before (Early).
func (f *Fake) limitedLocked(key string, b *budget, rec *Request) (reply, bool) {
	now := rec.At
	if s := f.secondary[key]; s != nil {
		if now.Before(s.until) {
			rec.Fault, rec.RetryAt, rec.Early, rec.LimitedAt = s.kind, s.until, true, s.since
			return secondaryReply(s.status, s.until.Sub(now)), true
		}
		delete(f.secondary, key)
	}
	if b.used < f.limit {
		return reply{}, false
	}
	if b.limitedAt.IsZero() {
		// Spent without the caller being told (ExhaustRateLimit): this
		// answer tells it.
		b.limitedAt = now
	} else {
		rec.Early, rec.LimitedAt = true, b.limitedAt
	}
	rec.RetryAt = b.reset
	status := b.status
	if status == 0 {
		status = http.StatusForbidden
	}
	rep := errorReply(status, "API rate limit exceeded for "+strings.ReplaceAll(key, ":", " ID ")+".")
	rep.body.(map[string]any)["documentation_url"] = primaryLimitDocs
	rep.header = http.Header{}
	return rep, true
}

// outageLocked answers a request with the outage's next failure, if one is
// under way and matches.
func (f *Fake) outageLocked(r *http.Request, key string, b *budget, rec *Request) (reply, bool) {
	now := rec.At
	ot := f.currentOutageLocked(now)
	if ot == nil {
		return reply{}, false
	}
	if ot.method != "" && ot.method != r.Method {
		return reply{}, false
	}
	if ot.pattern != "" && !pathMatches(ot.pattern, r.URL.Path) {
		return reply{}, false
	}
	kind := ot.o.Kinds[ot.next%len(ot.o.Kinds)]
	ot.next++
	if kind == FaultNone {
		return reply{}, false
	}
	ot.failed++
	ot.faults[kind]++
	if ot.o.Requests > 0 && ot.failed >= ot.o.Requests {
		ot.end = now
	}
	rec.Fault = kind
	switch kind {
	case FaultServerError:
		return reply{status: http.StatusInternalServerError, header: http.Header{}, body: map[string]any{"message": "Server Error"}}, true
	case FaultBadGateway:
		// GitHub's front end answers a 502 with an HTML page; clients see
		// only the status. A JSON message keeps the fake's answers uniform.
		return reply{status: http.StatusBadGateway, header: http.Header{}, body: map[string]any{"message": "Server Error"}}, true
	case FaultPrimaryLimit, FaultPrimaryLimit429:
		b.used = f.limit
		b.reset = now.Add(ot.reset)
		if t := b.reset.Truncate(time.Second); !t.Equal(b.reset) {
			b.reset = t.Add(time.Second)
		}
		b.limitedAt = now
		b.status = http.StatusForbidden
		if kind == FaultPrimaryLimit429 {
			b.status = http.StatusTooManyRequests
		}
		rec.RetryAt = b.reset
		rep := errorReply(b.status, "API rate limit exceeded for "+strings.ReplaceAll(key, ":", " ID ")+".")
		rep.body.(map[string]any)["documentation_url"] = primaryLimitDocs
		rep.header = http.Header{}
		return rep, true
	default: // secondary limits
		status := http.StatusForbidden
		if kind == FaultTooManyRequests {
			status = http.StatusTooManyRequests
		}
		s := &secondaryLimit{since: now, until: now.Add(ot.retry), status: status, kind: kind}
		f.secondary[key] = s
		rec.RetryAt = s.until
		return secondaryReply(status, ot.retry), true
	}
}

// secondaryReply is GitHub's secondary rate limit answer asking to wait d
// (whole seconds, rounded up).
func secondaryReply(status int, d time.Duration) reply {
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(int64(ceilSecond(d)/time.Second), 10))
	return reply{status: status, header: h, body: map[string]any{"message": secondaryLimitText, "documentation_url": secondaryLimitDocs}}
}

// ceilSecond rounds d up to whole seconds.
func ceilSecond(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	return d
}
