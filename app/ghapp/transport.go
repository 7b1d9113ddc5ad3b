package ghapp

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
)

// RetryPolicy bounds how the API transport waits and retries. Zero fields take
// the defaults in withDefaults.
type RetryPolicy struct {
	// MaxAttempts is the number of exchanges per request, first one included (default 4).
	MaxAttempts int
	// MaxWait caps one wait for a rate limit or Retry-After (default 60 s). A
	// longer wait is not made: the response goes back to the caller, whose job
	// is retried later by the queue.
	MaxWait time.Duration
	// BackoffBase is the first backoff after a 5xx on a GET (default 500 ms),
	// doubled at each attempt, with jitter.
	BackoffBase time.Duration
	// ETagEntries and ETagBytes bound the conditional-request cache of one
	// installation (defaults 256 entries, 4 MiB in all).
	ETagEntries int
	ETagBytes   int
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 60 * time.Second
	}
	if p.BackoffBase <= 0 {
		p.BackoffBase = 500 * time.Millisecond
	}
	if p.ETagEntries <= 0 {
		p.ETagEntries = 256
	}
	if p.ETagBytes <= 0 {
		p.ETagBytes = 4 << 20
	}
	return p
}

// secondaryLimitWait is GitHub's advice when a secondary rate limit answer
// carries neither Retry-After nor an exhausted primary limit: wait at least a minute.
const secondaryLimitWait = time.Minute

// maxErrorBody bounds how much of a 403 body is read to tell a secondary
// rate limit from a permission error.
const maxErrorBody = 64 << 10

// secondaryLimitMaxWait caps the growing wait after repeated secondary
// rate limits that give no Retry-After.
const secondaryLimitMaxWait = 16 * time.Minute

// apiTransport is the RoundTripper under go-github (and under ghinstallation,
// so token requests go through it too). It records metrics, waits out rate
// limits (403/429 with X-RateLimit-Remaining: 0 until X-RateLimit-Reset;
// 403/429 with Retry-After for that long; a secondary limit without either a
// minute, doubling while it repeats; all capped and context-aware) and
// retries them whatever the method, since GitHub did not process a
// rate-limited request; it retries 5xx and network errors only for GET and
// HEAD, with exponential backoff. A rate limit holds for the whole identity
// (the App's JWT, or the installation): the shared gate keeps every request
// of that identity, from any job, from being sent before the time GitHub
// gave. Repeated GETs are sent with If-None-Match from a small LRU of ETags;
// a 304 (free of rate-limit cost) is answered from the cache.
type apiTransport struct {
	base           http.RoundTripper
	installationID int64
	basePath       string
	policy         RetryPolicy
	metrics        APIMetrics
	now            func() time.Time
	etags          *etagCache
	gate           *rateGate
}

// newAPITransport makes the transport of one installation (0: the App).
// gate is shared by the transports of one GitHub; nil makes a private one.
func newAPITransport(base http.RoundTripper, installationID int64, basePath string, p RetryPolicy, m APIMetrics, gate *rateGate) *apiTransport {
	p = p.withDefaults()
	if gate == nil {
		gate = newRateGate()
	}
	return &apiTransport{
		base:           base,
		installationID: installationID,
		basePath:       basePath,
		policy:         p,
		metrics:        m,
		now:            time.Now,
		etags:          newETagCache(p.ETagEntries, p.ETagBytes),
		gate:           gate,
	}
}

// RateLimitedError is returned, without a request being sent, while GitHub
// has asked the identity (0: the App's JWT; else an installation) to wait
// until Until and that is further away than the transport may block (the
// policy's MaxWait, or the request's deadline). The caller's job should be
// tried again after Until.
type RateLimitedError struct {
	Identity int64
	Until    time.Time
}

func (e *RateLimitedError) Error() string {
	who := "the App"
	if e.Identity != 0 {
		who = "installation " + strconv.FormatInt(e.Identity, 10)
	}
	return "github: " + who + " is rate limited until " + e.Until.UTC().Format(time.RFC3339) + "; request not sent"
}

// rateGate remembers, per identity, until when GitHub asked not to be
// called, and how many secondary limits without a stated wait came in a row.
type rateGate struct {
	mu      sync.Mutex
	until   map[int64]time.Time
	strikes map[int64]int
}

func newRateGate() *rateGate {
	return &rateGate{until: map[int64]time.Time{}, strikes: map[int64]int{}}
}

// openAt is when the identity may send again (zero or past: now).
func (g *rateGate) openAt(id int64, now time.Time) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.until[id]
	if ok && !t.After(now) {
		delete(g.until, id)
	}
	return t
}

// hold keeps the identity's requests until t (a later hold wins).
func (g *rateGate) hold(id int64, t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.After(g.until[id]) {
		g.until[id] = t
	}
}

// strike counts a secondary limit without a stated wait and returns how
// long to wait: a minute, doubling with each one in a row.
func (g *rateGate) strike(id int64) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.strikes[id]
	g.strikes[id] = n + 1
	return min(secondaryLimitWait<<min(n, 10), secondaryLimitMaxWait)
}

// clear forgets the strikes of an identity after an answer that was not a
// rate limit.
func (g *rateGate) clear(id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.strikes, id)
}

// identity is whose rate limit a request spends: the App's (JWT, "Bearer")
// or the installation's (its token).
func (t *apiTransport) identity(req *http.Request) int64 {
	if strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ") {
		return 0
	}
	return t.installationID
}

// waitGate blocks until the identity may send, or fails at once when that
// is beyond MaxWait or the request's deadline.
func (t *apiTransport) waitGate(ctx context.Context, id int64) error {
	now := t.now()
	open := t.gate.openAt(id, now)
	wait := open.Sub(now)
	if wait <= 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); wait > t.policy.MaxWait || (ok && dl.Before(open)) {
		return &RateLimitedError{Identity: id, Until: open}
	}
	return sleepCtx(ctx, wait)
}

func (t *apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	endpoint := EndpointLabel(req.Method, strings.TrimPrefix(req.URL.Path, t.basePath))
	cacheable := req.Method == http.MethodGet && req.Header.Get("If-None-Match") == "" && req.Header.Get("Range") == ""
	var cached *etagEntry
	key := ""
	if cacheable {
		key = req.URL.String() + "\x00" + req.Header.Get("Accept")
		cached = t.etags.get(key)
	}
	// Creating an installation token has no effect beyond the new token, so
	// it is as safe to repeat as a GET.
	idempotent := req.Method == http.MethodGet || req.Method == http.MethodHead ||
		(req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/access_tokens"))

	id := t.identity(req)
	for attempt := 1; ; attempt++ {
		if err := t.waitGate(ctx, id); err != nil {
			return nil, err
		}
		r := req
		if attempt > 1 || cached != nil {
			r = req.Clone(ctx)
			if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
			if cached != nil {
				r.Header.Set("If-None-Match", cached.etag)
			}
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			t.record(endpoint, 0, nil)
			if !idempotent || attempt >= t.policy.MaxAttempts || ctx.Err() != nil {
				return nil, err
			}
			if werr := sleepCtx(ctx, t.backoff(attempt)); werr != nil {
				return nil, err
			}
			continue
		}
		t.record(endpoint, resp.StatusCode, resp.Header)

		wait, limited, retry := t.retryAfter(resp, id, idempotent, attempt)
		if limited {
			// Every request of this identity waits, not only this one.
			t.gate.hold(id, t.now().Add(wait))
		} else {
			t.gate.clear(id)
			if until, ok := t.spentUntil(resp); ok {
				// The budget is spent: GitHub asks for no request before the reset.
				t.gate.hold(id, until)
			}
		}
		if retry && attempt < t.policy.MaxAttempts && wait <= t.policy.MaxWait && (req.Body == nil || req.Body == http.NoBody || req.GetBody != nil) {
			if dl, ok := ctx.Deadline(); !ok || !dl.Before(t.now().Add(wait)) {
				drain(resp)
				if !limited {
					if err := sleepCtx(ctx, wait); err != nil {
						return nil, err
					}
				}
				continue // a rate limit is waited out by the gate
			}
			// The wait outlasts the request: the caller gets GitHub's answer now.
		}

		switch {
		case resp.StatusCode == http.StatusNotModified && cached != nil:
			return cached.response(req, resp), nil
		case cacheable && resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
			return t.etags.store(key, resp), nil
		}
		return resp, nil
	}
}

func (t *apiTransport) record(endpoint string, status int, h http.Header) {
	if t.metrics == nil {
		return
	}
	t.metrics.APICall(endpoint, status)
	if h == nil {
		return
	}
	if v := h.Get("X-RateLimit-Remaining"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			id := t.installationID
			if strings.HasPrefix(endpoint, "POST /app/") {
				id = 0 // token requests are made with the App's JWT and spend its budget
			}
			t.metrics.RateLimitRemaining(id, n)
		}
	}
}

// retryAfter tells whether resp is worth another attempt and after how
// long, and whether it is a rate limit (which holds for the whole identity).
func (t *apiTransport) retryAfter(resp *http.Response, id int64, idempotent bool, attempt int) (wait time.Duration, limited, retry bool) {
	switch resp.StatusCode {
	case http.StatusForbidden, http.StatusTooManyRequests:
		if v := resp.Header.Get("Retry-After"); v != "" {
			if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
				return time.Duration(s) * time.Second, true, true
			}
			if at, err := http.ParseTime(v); err == nil {
				return max(at.Sub(t.now()), 0), true, true
			}
		}
		if until, ok := t.spentUntil(resp); ok {
			return max(until.Sub(t.now()), 0), true, true
		}
		if resp.Header.Get("X-RateLimit-Remaining") == "0" {
			return t.gate.strike(id), true, true
		}
		if resp.StatusCode == http.StatusTooManyRequests || isSecondaryRateLimit(resp) {
			return t.gate.strike(id), true, true
		}
		return 0, false, false
	}
	if resp.StatusCode >= 500 && idempotent {
		return t.backoff(attempt), false, true
	}
	return 0, false, false
}

// spentUntil reads an answer saying the primary budget is spent
// (X-RateLimit-Remaining: 0) and returns when it resets, one second past
// X-RateLimit-Reset, which is rounded down to the second.
func (t *apiTransport) spentUntil(resp *http.Response) (time.Time, bool) {
	if resp.Header.Get("X-RateLimit-Remaining") != "0" {
		return time.Time{}, false
	}
	reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(reset, 0).Add(time.Second), true
}

func (t *apiTransport) backoff(attempt int) time.Duration {
	d := t.policy.BackoffBase << (attempt - 1)
	// Full jitter on the upper half keeps replicas from retrying in step.
	return d/2 + rand.N(d/2+1)
}

// isSecondaryRateLimit reads (a bounded part of) a 403 body, puts it back,
// and tells whether GitHub calls it a secondary rate limit.
func isSecondaryRateLimit(resp *http.Response) bool {
	if resp.Body == nil {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	s := strings.ToLower(string(data))
	return strings.Contains(s, "secondary rate limit") || strings.Contains(s, "abuse")
}

type readCloser struct {
	io.Reader
	io.Closer
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// EndpointLabel turns a request into a low-cardinality metric label: the
// method and the path with owner, repository, numbers, SHAs and names
// replaced by placeholders, e.g. "PATCH /repos/{owner}/{repo}/check-runs/{id}".
func EndpointLabel(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	out := make([]string, 0, len(segs))
	for i := 0; i < len(segs) && len(out) < 8; i++ {
		s := segs[i]
		if s == "repos" && i == 0 && len(segs) >= 3 {
			out = append(out, s, "{owner}", "{repo}")
			i += 2
			continue
		}
		prev := ""
		if i > 0 {
			prev = segs[i-1]
		}
		switch {
		case isDigits(s):
			out = append(out, "{id}")
		case prev == "orgs" || prev == "users":
			out = append(out, "{"+strings.TrimSuffix(prev, "s")+"}")
		case prev == "teams":
			out = append(out, "{team}")
		case prev == "commits" || prev == "statuses" || prev == "status":
			out = append(out, "{ref}")
		case prev == "labels":
			out = append(out, "{name}")
		case prev == "branches":
			// Branch names may hold slashes: everything up to "protection" is the name.
			for i+1 < len(segs) && segs[i+1] != "protection" {
				i++
			}
			out = append(out, "{branch}")
		case prev == "contents" || prev == "ref" || prev == "refs":
			out = append(out, "{path}")
			i = len(segs)
		default:
			if len(s) > 40 {
				s = "{long}"
			}
			out = append(out, s)
		}
	}
	return method + " /" + strings.Join(out, "/")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// etagCache is a bounded LRU of GET responses with an ETag.
type etagCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int
	bytes      int
	order      *list.List // of *etagEntry, most recent first
	byKey      map[string]*list.Element
}

type etagEntry struct {
	key    string
	etag   string
	header http.Header
	body   []byte
}

func newETagCache(entries, bytes int) *etagCache {
	return &etagCache{maxEntries: entries, maxBytes: bytes, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *etagCache) get(key string) *etagEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*etagEntry)
}

// store keeps the response (when it is small enough) and returns a response
// equivalent to resp for the caller.
func (c *etagCache) store(key string, resp *http.Response) *http.Response {
	limit := c.maxBytes / 8
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil || len(data) > limit {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
		return resp
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	e := &etagEntry{key: key, etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: data}

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.bytes -= len(el.Value.(*etagEntry).body)
		c.order.Remove(el)
	}
	c.byKey[key] = c.order.PushFront(e)
	c.bytes += len(data)
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		last := c.order.Back()
		old := last.Value.(*etagEntry)
		c.order.Remove(last)
		delete(c.byKey, old.key)
		c.bytes -= len(old.body)
	}
	return resp
}

// response answers a 304 with the cached body: the stored headers, updated
// with what the 304 says (rate limit, ETag, date).
func (e *etagEntry) response(req *http.Request, notModified *http.Response) *http.Response {
	h := e.header.Clone()
	for k, v := range notModified.Header {
		if strings.HasPrefix(k, "X-Ratelimit-") || k == "Etag" || k == "Date" || k == "Cache-Control" {
			h[k] = append([]string(nil), v...)
		}
	}
	drain(notModified)
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         notModified.Proto,
		ProtoMajor:    notModified.ProtoMajor,
		ProtoMinor:    notModified.ProtoMinor,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(e.body)),
		ContentLength: int64(len(e.body)),
		Request:       req,
	}
}

// WaitOutRateLimit turns "GitHub rate limits us until T" into a snooze until
// T. A snooze costs the job no attempt, whereas River's retry delays would
// spend all five attempts within minutes of an hourly limit and drop the
// job. A short random spread keeps the jobs held by one limit from all
// calling GitHub in the same second it lifts.
func WaitOutRateLimit(err error) error {
	var rl *RateLimitedError
	if !errors.As(err, &rl) {
		return err
	}
	wait := max(time.Until(rl.Until), time.Second)
	return river.JobSnooze(wait + rand.N(rateLimitSpread))
}

// rateLimitSpread bounds the random delay added to a rate-limit snooze.
const rateLimitSpread = 5 * time.Second
