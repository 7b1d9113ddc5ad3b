package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// budget counts the HTTP requests of one Client view. A nil budget is unlimited.
type budget struct {
	limit int64
	used  atomic.Int64
}

func (b *budget) take() bool { return b == nil || b.used.Add(1) <= b.limit }

func (b *budget) remaining() int {
	if b == nil {
		return -1
	}
	return int(max(0, b.limit-b.used.Load()))
}

// callStats records what the transport did for one operation, so results can say it without parsing errors.
type callStats struct {
	mu         sync.Mutex
	requests   int
	waited     time.Duration
	retryAfter time.Duration
	gaveUp     string // why the transport stopped retrying or refused a request; "" if it did not
	realms     map[string]bool
	tokenFail  string // why the token service refused a token; "" if it did not
}

// realm records a token service a registry named, so its answers can be told from the registry's.
func (s *callStats) realm(key string) {
	if s != nil {
		s.mu.Lock()
		if s.realms == nil {
			s.realms = map[string]bool{}
		}
		s.realms[key] = true
		s.mu.Unlock()
	}
}

// tokenAnswer notes a failed answer of a token service named earlier in the operation.
func (s *callStats) tokenAnswer(key string, resp *http.Response) {
	if s == nil || resp.StatusCode < 400 {
		return
	}
	s.mu.Lock()
	if s.realms[key] {
		s.tokenFail = fmt.Sprintf("the token service %s answered %s, so the registry could not be asked", key, resp.Status)
	}
	s.mu.Unlock()
}

func (s *callStats) tokenFailure() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenFail
}

func (s *callStats) request() {
	if s != nil {
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
	}
}

func (s *callStats) wait(d, retryAfter time.Duration) {
	if s != nil {
		s.mu.Lock()
		s.waited += d
		if retryAfter > 0 {
			s.retryAfter = retryAfter
		}
		s.mu.Unlock()
	}
}

func (s *callStats) giveUp(why string) {
	if s != nil {
		s.mu.Lock()
		s.gaveUp = why
		s.mu.Unlock()
	}
}

func (s *callStats) snapshot() (requests int, waited, retryAfter time.Duration, gaveUp string) {
	if s == nil {
		return 0, 0, 0, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.waited, s.retryAfter, s.gaveUp
}

type budgetKey struct{}
type statsKey struct{}

func withBudget(ctx context.Context, b *budget) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, b)
}

func budgetFrom(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

func withStats(ctx context.Context, s *callStats) context.Context {
	return context.WithValue(ctx, statsKey{}, s)
}

func statsFrom(ctx context.Context) *callStats {
	s, _ := ctx.Value(statsKey{}).(*callStats)
	return s
}

// maxManifestBytes bounds a manifest read from a registry (go-containerregistry's own bound is 100 MiB).
const maxManifestBytes = 8 << 20

// cappedBody fails once a response body goes past its bound.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &requestError{fmt.Sprintf("manifest larger than %d bytes", maxManifestBytes)}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, &requestError{fmt.Sprintf("manifest larger than %d bytes", maxManifestBytes)}
	}
	return n, err
}

// requestError is the transport's final word on a request that got no usable response. Like refusedError it
// is not temporary and unwraps to nothing, so go-containerregistry does not retry it a second time.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

// retryingTransport sits directly under go-containerregistry's transports (whose own status-code retries the
// client switches off). It enforces HTTPS except for insecure hosts, spends the request budget, and retries
// 429 (honouring Retry-After up to a cap), 5xx and network errors with capped exponential backoff.
type retryingTransport struct {
	next         http.RoundTripper
	insecure     hostSet
	maxAttempts  int
	maxRetryWait time.Duration
	backoff      time.Duration
	maxBackoff   time.Duration
	logger       *slog.Logger
}

func (t *retryingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	st := statsFrom(ctx)
	refuse := func(msg string) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		st.giveUp(msg)
		t.logger.DebugContext(ctx, "registry request refused", "url", redactURL(req), "reason", msg)
		return nil, &refusedError{msg}
	}
	switch {
	case req.URL.Scheme == "https":
	case req.URL.Scheme == "http" && t.insecure.has(req.URL.Host, "80"):
	default:
		return refuse(fmt.Sprintf("refusing %s to %s: only HTTPS is allowed for hosts not given to WithInsecureHosts", req.URL.Scheme, req.URL.Host))
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	idempotent := req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodPut ||
		req.Method == http.MethodDelete || req.Method == http.MethodOptions

	var waited time.Duration
	for attempt := 1; ; attempt++ {
		if !budgetFrom(ctx).take() {
			return refuse("the request budget is exhausted; no more requests are sent for this pull request")
		}
		st.request()
		r := req
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, &requestError{fmt.Sprintf("%s %s: rewinding the body for a retry: %v", req.Method, redactURL(req), err)}
			}
			r = req.Clone(ctx)
			r.Body = body
		}
		resp, err := t.next.RoundTrip(r)

		var delay, retryAfter time.Duration
		var what string
		switch {
		case err != nil:
			var refused *refusedError
			if errors.As(err, &refused) {
				st.giveUp(refused.msg)
				return nil, refused
			}
			if ctx.Err() != nil {
				return nil, t.contextError(ctx, req)
			}
			if !idempotent || !replayable || !retryableNetError(err) {
				return nil, &requestError{fmt.Sprintf("%s %s: %v", req.Method, redactURL(req), err)}
			}
			what = err.Error()
			delay = t.backoffFor(attempt)
		case resp.StatusCode == http.StatusTooManyRequests && replayable,
			retryableStatus(resp.StatusCode) && idempotent && replayable:
			what = resp.Status
			if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				delay, retryAfter = d, d
			} else {
				delay = t.backoffFor(attempt)
			}
		default:
			st.tokenAnswer(realmKey(req.URL), resp)
			if resp.StatusCode == http.StatusUnauthorized {
				realm, raw := challengeRealm(resp)
				if realm != nil || raw != "" {
					if why := realmRefusal(ctx, req, realm, raw); why != "" {
						io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
						resp.Body.Close()
						return refuse(why)
					}
					st.realm(realmKey(realm))
				}
			}
			if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/manifests/") {
				resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxManifestBytes}
			}
			return resp, nil
		}

		stop := ""
		switch deadline, hasDeadline := ctx.Deadline(); {
		case attempt >= t.maxAttempts:
			stop = fmt.Sprintf("%s after %d attempts", what, attempt)
		case waited+delay > t.maxRetryWait && retryAfter > 0:
			stop = fmt.Sprintf("%s; the registry asked to wait %v, more than the %v this client waits in all", what, delay, t.maxRetryWait)
		case waited+delay > t.maxRetryWait:
			stop = fmt.Sprintf("%s; waiting %v more would exceed the %v this client waits in all", what, delay, t.maxRetryWait)
		case hasDeadline && time.Until(deadline) < delay:
			stop = fmt.Sprintf("%s; waiting %v more would pass the deadline", what, delay)
		}
		if stop != "" {
			st.giveUp(stop)
			st.wait(0, retryAfter)
			t.logger.DebugContext(ctx, "registry request gave up", "url", redactURL(req), "reason", stop)
			if err != nil {
				return nil, &requestError{fmt.Sprintf("%s %s: %s", req.Method, redactURL(req), stop)}
			}
			return resp, nil
		}
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		t.logger.DebugContext(ctx, "registry request retrying", "url", redactURL(req), "attempt", attempt, "reason", what, "wait", delay)
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, t.contextError(ctx, req)
		case <-timer.C:
		}
		waited += delay
		st.wait(delay, retryAfter)
	}
}

func (t *retryingTransport) contextError(ctx context.Context, req *http.Request) error {
	msg := fmt.Sprintf("%s %s: %v", req.Method, redactURL(req), ctx.Err())
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg = fmt.Sprintf("%s %s: timed out", req.Method, redactURL(req))
	}
	statsFrom(ctx).giveUp(msg)
	return &requestError{msg}
}

// backoffFor is the wait before try attempt+1: first, 2×first, … capped, with up to 20% jitter off.
func (t *retryingTransport) backoffFor(attempt int) time.Duration {
	d := t.backoff
	for i := 1; i < attempt && d < t.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, t.maxBackoff)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryableNetError is true for failures a second try may not meet: timeouts, resets, refused connections,
// truncated responses. TLS and certificate errors, unknown hosts and the like are final.
func retryableNetError(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTimeout || dnsErr.IsTemporary
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date. A date in the past means now.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		const maxSecs = int64(1<<63-1) / int64(time.Second)
		return time.Duration(min(secs, maxSecs)) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(0, at.Sub(now)), true
	}
	return 0, false
}

// redactURL is the request's URL without query (tokens can travel there) or user info.
func redactURL(req *http.Request) string {
	u := *req.URL
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
