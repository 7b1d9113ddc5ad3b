package githubfake

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// maxRequestBody bounds a request body; GitHub refuses large bodies too.
const maxRequestBody = 5 << 20

// maxJWTLifetime is GitHub's limit on a JWT's exp: at most 10 minutes ahead.
const maxJWTLifetime = 10 * time.Minute

// clockDrift is the skew allowed on iat (GitHub advises setting iat 60 s in the past).
const clockDrift = 60 * time.Second

// tokenLifetime: installation access tokens expire after one hour.
const tokenLifetime = time.Hour

type authKind int

const (
	authApp authKind = iota + 1
	authInstallation
)

// call is one request being answered, with the lock held.
type call struct {
	f     *Fake
	r     *http.Request
	path  string // the path as the client sent it (with /api/v3 when given)
	inst  *installation
	appID bool
}

// reply is what a handler answers.
type reply struct {
	status int
	body   any // marshalled to JSON; nil writes no body
	header http.Header
}

func errorReply(status int, msg string) reply {
	return reply{status: status, body: map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest"}}
}

// validationFailed is GitHub's 422 shape.
func validationFailed(resource, field, code, msg string) reply {
	return reply{status: http.StatusUnprocessableEntity, body: map[string]any{
		"message":           "Validation Failed",
		"errors":            []map[string]any{{"resource": resource, "field": field, "code": code, "message": msg}},
		"documentation_url": "https://docs.github.com/rest",
	}}
}

func (f *Fake) handle(pattern string, kind authKind, h func(c *call) reply) {
	f.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("X-Fake-Route", pattern)
		f.serve(w, r, kind, h)
	})
}

// ServeHTTP answers a REST API request. Paths may carry the /api/v3 prefix of
// GitHub Enterprise Server.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	orig := r.URL.Path
	r2 := r.Clone(r.Context())
	r2.URL.Path = strings.TrimPrefix(orig, "/api/v3")
	// Keep the escaping of a segment holding a slash (a label "do-not-merge/hold" is sent as do-not-merge%2Fhold).
	r2.URL.RawPath = ""
	if raw := r.URL.RawPath; raw != "" {
		r2.URL.RawPath = strings.TrimPrefix(raw, "/api/v3")
	}
	r2.Header.Set("X-Fake-Original-Path", orig)

	f.mu.Lock()
	if rep, ok := f.faultLocked(r2); ok {
		f.recordRequest(Request{Method: r.Method, Path: r2.URL.Path, Status: rep.status, At: f.now(), Fault: FaultInjected})
		f.mu.Unlock()
		f.write(w, r2, rep, nil)
		return
	}
	f.mu.Unlock()
	f.mux.ServeHTTP(w, r2)
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request, kind authKind, h func(c *call) reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &call{f: f, r: r, path: r.Header.Get("X-Fake-Original-Path")}
	rec := Request{Method: r.Method, Path: r.URL.Path, Route: r.Header.Get("X-Fake-Route"), At: f.now(), Conditional: r.Header.Get("If-None-Match") != ""}
	var b *budget
	if kind != 0 {
		key, authRep, ok := f.authenticate(c, kind)
		if !ok {
			rec.Status = f.write(w, r, authRep, nil)
			f.recordRequest(rec)
			return
		}
		rec.Identity = key
		b = f.budgetLocked(key)
		if rep, limited := f.limitedLocked(key, b, &rec); limited {
			f.setRateHeaders(rep.header, b)
			rec.Status = f.write(w, r, rep, nil)
			f.recordRequest(rec)
			return
		}
		if rep, faulted := f.outageLocked(r, key, b, &rec); faulted {
			f.setRateHeaders(rep.header, b)
			rec.Status = f.write(w, r, rep, nil)
			f.recordRequest(rec)
			return
		}
	}
	rec.Status = f.write(w, r, h(c), b)
	f.recordRequest(rec)
}

func (f *Fake) record(r *http.Request, status int) {
	f.recordRequest(Request{Method: r.Method, Path: r.URL.Path, Status: status, At: f.now(), Conditional: r.Header.Get("If-None-Match") != ""})
}

func (f *Fake) recordRequest(rq Request) {
	if len(f.requests) >= maxRecordedRequests {
		f.requests = f.requests[1:]
	}
	f.requests = append(f.requests, rq)
}

// setRateHeaders adds the primary rate-limit headers of b without charging it.
func (f *Fake) setRateHeaders(h http.Header, b *budget) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(f.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(f.limit-b.used, 0)))
	h.Set("X-RateLimit-Used", strconv.Itoa(b.used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// write sends rep with GitHub's headers: rate limit (charging b unless the
// answer is a 304), ETag on successful GETs, and 304 for a matching If-None-Match.
func (f *Fake) write(w http.ResponseWriter, r *http.Request, rep reply, b *budget) int {
	var data []byte
	if rep.body != nil {
		var err error
		data, err = json.Marshal(rep.body)
		if err != nil {
			rep = errorReply(http.StatusInternalServerError, "fake: "+err.Error())
			data, _ = json.Marshal(rep.body)
		}
	}
	h := w.Header()
	for k, v := range rep.header {
		h[k] = v
	}
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("FAKE:%d", len(f.requests)+1))
	status := rep.status
	if r.Method == http.MethodGet && status == http.StatusOK {
		sum := sha256.Sum256(data)
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, etag) {
			status = http.StatusNotModified
		}
	}
	if b != nil {
		// A 304 does not count against the primary rate limit.
		if status != http.StatusNotModified {
			b.used++
			if b.used >= f.limit && b.limitedAt.IsZero() {
				// The answer says remaining 0: from now on the caller knows.
				b.limitedAt = f.now()
			}
		}
		f.setRateHeaders(h, b)
	}
	if status == http.StatusNotModified || data == nil {
		w.WriteHeader(status)
		return status
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
	return status
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// authenticate checks the Authorization header for the kind of endpoint and
// returns the rate-limit budget key of the caller.
func (f *Fake) authenticate(c *call, kind authKind) (string, reply, bool) {
	auth := c.r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(auth, " ")
	if auth == "" || cred == "" {
		return "", errorReply(http.StatusUnauthorized, "Requires authentication"), false
	}
	switch kind {
	case authApp:
		if !strings.EqualFold(scheme, "Bearer") {
			return "", errorReply(http.StatusUnauthorized, "A JSON web token could not be decoded"), false
		}
		if msg := f.verifyJWT(cred); msg != "" {
			return "", errorReply(http.StatusUnauthorized, msg), false
		}
		c.appID = true
		return budgetKey(0), reply{}, true
	default:
		if !strings.EqualFold(scheme, "token") && !strings.EqualFold(scheme, "Bearer") {
			return "", errorReply(http.StatusUnauthorized, "Bad credentials"), false
		}
		t := f.tokens[cred]
		if t == nil || !f.now().Before(t.expires) {
			return "", errorReply(http.StatusUnauthorized, "Bad credentials"), false
		}
		inst := f.installations[t.installation]
		if inst == nil {
			return "", errorReply(http.StatusUnauthorized, "Bad credentials"), false
		}
		c.inst = inst
		return budgetKey(inst.id), reply{}, true
	}
}

// verifyJWT checks an App JWT as GitHub does: RS256 signed with the App's
// key, iss the App id, exp in the future and at most 10 minutes ahead, iat
// not in the future. It returns "" when the token is good.
func (f *Fake) verifyJWT(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || f.pub == nil {
		return "A JSON web token could not be decoded"
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &hdr) != nil {
		return "A JSON web token could not be decoded"
	}
	if hdr.Alg != "RS256" {
		return "A JSON web token could not be decoded"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "A JSON web token could not be decoded"
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(f.pub, crypto.SHA256, sum[:], sig) != nil {
		return "A JSON web token could not be decoded"
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "A JSON web token could not be decoded"
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat *int64          `json:"iat"`
		Exp *int64          `json:"exp"`
	}
	if json.Unmarshal(pb, &claims) != nil {
		return "A JSON web token could not be decoded"
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	if iss != strconv.FormatInt(f.appID, 10) {
		return "'Issuer' claim ('iss') must be an Integer"
	}
	now := f.now()
	if claims.Exp == nil || !time.Unix(*claims.Exp, 0).After(now) {
		return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	}
	if time.Unix(*claims.Exp, 0).After(now.Add(maxJWTLifetime + clockDrift)) {
		return "'Expiration time' claim ('exp') is too far in the future"
	}
	if claims.Iat == nil || time.Unix(*claims.Iat, 0).After(now.Add(clockDrift)) {
		return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	}
	return ""
}

// newTokenLocked issues an installation token.
func (f *Fake) newTokenLocked(inst int64) *token {
	var b [20]byte
	_, _ = rand.Read(b[:])
	t := &token{value: "ghs_" + hex.EncodeToString(b[:]), installation: inst, expires: f.now().Add(tokenLifetime).Truncate(time.Second)}
	f.tokens[t.value] = t
	return t
}

// decode reads a JSON body into v; it answers 400 for malformed JSON as GitHub does ("Problems parsing JSON").
func (c *call) decode(v any) (reply, bool) {
	if c.r.Body == nil {
		return errorReply(http.StatusBadRequest, "Problems parsing JSON"), false
	}
	data, err := io.ReadAll(io.LimitReader(c.r.Body, maxRequestBody+1))
	if err != nil {
		return errorReply(http.StatusBadRequest, "Problems parsing JSON"), false
	}
	if len(data) > maxRequestBody {
		return errorReply(http.StatusRequestEntityTooLarge, "Request body too large"), false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return reply{}, true
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errorReply(http.StatusBadRequest, "Problems parsing JSON"), false
	}
	return reply{}, true
}

// repo finds the repository in the path and checks the installation can see it (404 otherwise, as GitHub hides what a token cannot see).
func (c *call) repo() (*repo, reply, bool) {
	r := c.f.repos[repoKey(c.r.PathValue("owner"), c.r.PathValue("repo"))]
	if r == nil || c.inst == nil || r.installation != c.inst.id {
		return nil, errorReply(http.StatusNotFound, "Not Found"), false
	}
	return r, reply{}, true
}

// pageOf applies GitHub's offset pagination (per_page default 30, at most
// 100; page from 1) to n items and returns the slice bounds and the Link header.
func (c *call) pageOf(n int) (lo, hi int, h http.Header) {
	q := c.r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	last := max((n+per-1)/per, 1)
	lo = min((page-1)*per, n)
	hi = min(lo+per, n)
	link := func(p int, rel string) string {
		q2 := c.r.URL.Query()
		q2.Set("page", strconv.Itoa(p))
		q2.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf(`<%s?%s>; rel="%s"`, c.absURL(), q2.Encode(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	h = http.Header{}
	if len(links) > 0 {
		h.Set("Link", strings.Join(links, ", "))
	}
	return lo, hi, h
}

// absURL is the request's URL without query, as the client addressed it.
func (c *call) absURL() string {
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	p := c.path
	if p == "" {
		p = c.r.URL.Path
	}
	return scheme + "://" + c.r.Host + (&url.URL{Path: p}).EscapedPath()
}

// apiBase is the API root as the client addressed it (with /api/v3 when used).
func (c *call) apiBase() string {
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	prefix := ""
	if strings.HasPrefix(c.path, "/api/v3") {
		prefix = "/api/v3"
	}
	return scheme + "://" + c.r.Host + prefix
}

// fault is an injected failure.
type fault struct {
	method  string
	pattern string
	status  int
	left    int
	header  http.Header
	body    any
}

// InjectFault makes the next count requests whose path matches pattern fail
// with status (before authentication, as a GitHub outage or limit would).
// pattern is "[METHOD ]/path" with path.Match wildcards per segment, e.g.
// "GET /repos/*/*/pulls" or "/app/installations/*/access_tokens"; the path is
// the one without the /api/v3 prefix. Headers are added to the answer. A 403
// or 429 without headers is a rate-limit answer: 403 gets
// X-RateLimit-Remaining: 0 and a reset one second ahead, 429 gets Retry-After: 1.
func (f *Fake) InjectFault(pattern string, status, count int, headers http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	method, p, ok := strings.Cut(pattern, " ")
	if !ok {
		method, p = "", pattern
	}
	h := http.Header{}
	for k, v := range headers {
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
	var body any
	switch status {
	case http.StatusForbidden:
		if len(h) == 0 {
			h.Set("X-RateLimit-Limit", strconv.Itoa(f.limit))
			h.Set("X-RateLimit-Remaining", "0")
			h.Set("X-RateLimit-Used", strconv.Itoa(f.limit))
			h.Set("X-RateLimit-Reset", strconv.FormatInt(f.now().Add(time.Second).Unix(), 10))
			h.Set("X-RateLimit-Resource", "core")
			body = map[string]any{"message": "API rate limit exceeded for installation.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}
		} else {
			body = map[string]any{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}
		}
	case http.StatusTooManyRequests:
		if len(h) == 0 {
			h.Set("Retry-After", "1")
		}
		body = map[string]any{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}
	case http.StatusBadGateway:
		body = map[string]any{"message": "Server Error"}
	default:
		body = map[string]any{"message": http.StatusText(status)}
	}
	f.faults = append(f.faults, &fault{method: strings.ToUpper(method), pattern: p, status: status, left: count, header: h, body: body})
}

func (f *Fake) faultLocked(r *http.Request) (reply, bool) {
	for i, ft := range f.faults {
		if ft.method != "" && ft.method != r.Method {
			continue
		}
		if !pathMatches(ft.pattern, r.URL.Path) {
			continue
		}
		ft.left--
		if ft.left <= 0 {
			f.faults = append(f.faults[:i:i], f.faults[i+1:]...)
		}
		return reply{status: ft.status, body: ft.body, header: ft.header.Clone()}, true
	}
	return reply{}, false
}

func pathMatches(pattern, p string) bool {
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(p, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if ok, err := path.Match(ps[i], xs[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func jsonTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}
