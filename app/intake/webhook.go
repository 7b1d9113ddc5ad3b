package intake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/internal/markdown"
)

// MaxWebhookBody is GitHub's cap on a webhook payload (25 MiB); anything
// larger is not from GitHub.
const MaxWebhookBody = 25 << 20

// DeliveryStore records a delivery and its jobs atomically (*store.Queue).
type DeliveryStore interface {
	Record(ctx context.Context, d jobs.Delivery, p jobs.Plan) (duplicate bool, err error)
}

// Metrics is where the webhook counts deliveries (implemented by the server's metrics).
type Metrics interface {
	DeliveryReceived(event string)
	DeliveryRejected(reason string)
	DeliveryDuplicate(event string)
	Ack(d time.Duration)
}

// Webhook is the POST /webhook endpoint. It answers 2xx only once the
// delivery and its jobs are committed, so an acknowledged event is never
// lost; anything else makes GitHub mark the delivery failed, and the
// redelivery job asks for it again.
//
// Every verified delivery is recorded, including events catalogbot ignores
// (with no job): a redelivery of any event is then a no-op, and the log
// shows what arrived. Deliveries with a bad or missing signature are never
// stored.
type Webhook struct {
	secrets [][]byte
	store   DeliveryStore
	metrics Metrics
	log     *slog.Logger
	// storeTimeout bounds the transaction; GitHub gives up after 10 s.
	storeTimeout time.Duration
	now          func() time.Time
	// reads admits the requests whose bodies are being read (not yet verified): a stranger can hold at most
	// this many at once; the next is answered 503 at once rather than queued.
	reads chan struct{}
	// buffered bounds the bytes all unverified bodies may hold together.
	buffered *byteBudget
	// readTimeout bounds reading one body (a slow sender holds a slot no longer).
	readTimeout time.Duration
}

// Defaults of the webhook's admission bounds: 32 bodies read at once and 64 MiB buffered for them (GitHub's
// deliveries are a few kB; one may be up to 25 MiB), each read within 10 s.
const (
	DefaultWebhookConcurrentReads = 32
	DefaultWebhookBufferedBytes   = 64 << 20
	defaultWebhookReadTimeout     = 10 * time.Second
)

// byteBudget hands out bytes of a fixed pool.
type byteBudget struct {
	mu   sync.Mutex
	left int64
}

func (b *byteBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
}

// NewWebhook returns the endpoint. secrets (the shared webhook secrets, any of which may sign a delivery)
// must not be empty.
func NewWebhook(secrets [][]byte, store DeliveryStore, m Metrics, log *slog.Logger) (*Webhook, error) {
	if len(secrets) == 0 {
		return nil, errors.New("no webhook secret")
	}
	for i, s := range secrets {
		if len(s) == 0 {
			return nil, fmt.Errorf("webhook secret %d is empty", i+1)
		}
	}
	return &Webhook{secrets: secrets, store: store, metrics: m, log: log, storeTimeout: 8 * time.Second, now: time.Now,
		reads:       make(chan struct{}, DefaultWebhookConcurrentReads),
		buffered:    &byteBudget{left: DefaultWebhookBufferedBytes},
		readTimeout: defaultWebhookReadTimeout}, nil
}

// SetReadTimeout changes how long reading one body may take.
func (h *Webhook) SetReadTimeout(d time.Duration) { h.readTimeout = d }

// SetAdmission changes the bounds on unverified reads: concurrent bodies, bytes buffered for them.
func (h *Webhook) SetAdmission(concurrent int, bufferedBytes int64) {
	h.reads = make(chan struct{}, max(1, concurrent))
	h.buffered = &byteBudget{left: max(MaxWebhookBody, bufferedBytes)}
}

// wellFormedSignature is a cheap look at X-Hub-Signature-256 before anything is read.
func wellFormedSignature(header string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	return ok && len(hexSig) == 2*sha256.Size
}

// readVerified reads the body under the admission bounds while computing its HMAC with every secret (one
// pass), and returns it only when one of them matches. status is the HTTP status to answer otherwise.
func (h *Webhook) readVerified(w http.ResponseWriter, r *http.Request) (body []byte, status int, reason string) {
	select {
	case h.reads <- struct{}{}:
		defer func() { <-h.reads }()
	default:
		return nil, http.StatusServiceUnavailable, "busy"
	}
	// Reserve what the body says it is (GitHub always sends Content-Length); a body without one reserves
	// as it grows.
	reserved := int64(0)
	defer func() { h.buffered.give(reserved) }()
	if r.ContentLength > 0 {
		if !h.buffered.take(r.ContentLength) {
			return nil, http.StatusTooManyRequests, "buffer_full"
		}
		reserved = r.ContentLength
	}
	if h.readTimeout > 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.readTimeout))
	}
	macs := make([]hash.Hash, len(h.secrets))
	writers := make([]io.Writer, len(h.secrets))
	for i, sec := range h.secrets {
		macs[i] = hmac.New(sha256.New, sec)
		writers[i] = macs[i]
	}
	src := io.TeeReader(http.MaxBytesReader(w, r.Body, MaxWebhookBody), io.MultiWriter(writers...))
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	chunk := make([]byte, 32<<10)
	for {
		n, err := src.Read(chunk)
		if n > 0 {
			if int64(buf.Len()+n) > reserved {
				need := int64(buf.Len()+n) - reserved
				need = max(need, 256<<10) // grow the reservation in steps
				if !h.buffered.take(need) {
					return nil, http.StatusTooManyRequests, "buffer_full"
				}
				reserved += need
			}
			buf.Write(chunk[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, http.StatusRequestEntityTooLarge, "too_large"
			}
			return nil, http.StatusBadRequest, "bad_request"
		}
	}
	sig, err := hex.DecodeString(strings.TrimPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256="))
	if err != nil || len(sig) != sha256.Size {
		return nil, http.StatusUnauthorized, "signature"
	}
	match := false
	for _, m := range macs {
		if hmac.Equal(m.Sum(nil), sig) {
			match = true
		}
	}
	if !match {
		return nil, http.StatusUnauthorized, "signature"
	}
	return buf.Bytes(), 0, ""
}

// Sign computes the X-Hub-Signature-256 header of body, as GitHub does (for
// tests, the demo and load generators).
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	// Cheap checks first: nothing of the body is read for a request that cannot be a GitHub delivery.
	id, event := r.Header.Get("X-GitHub-Delivery"), r.Header.Get("X-GitHub-Event")
	switch {
	case !wellFormedSignature(r.Header.Get("X-Hub-Signature-256")):
		h.metrics.DeliveryRejected("signature")
		http.Error(w, "bad or missing X-Hub-Signature-256", http.StatusUnauthorized)
		return
	case !validHeaderToken(id) || !validHeaderToken(event):
		h.metrics.DeliveryRejected("bad_request")
		http.Error(w, "missing or malformed X-GitHub-Delivery or X-GitHub-Event", http.StatusBadRequest)
		return
	case r.ContentLength > MaxWebhookBody:
		h.metrics.DeliveryRejected("too_large")
		http.Error(w, "payload larger than 25 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	body, status, reason := h.readVerified(w, r)
	if status != 0 {
		h.metrics.DeliveryRejected(reason)
		switch status {
		case http.StatusUnauthorized:
			h.log.Warn("webhook signature rejected", "delivery", id, "remote", r.RemoteAddr)
			http.Error(w, "bad or missing X-Hub-Signature-256", status)
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			// GitHub marks the delivery failed; the redelivery job asks for it again.
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many deliveries are being read; try again", status)
		case http.StatusRequestEntityTooLarge:
			http.Error(w, "payload larger than 25 MiB", status)
		default:
			http.Error(w, "reading the payload failed", status)
		}
		return
	}
	d, p, err := Route(id, event, body)
	if err != nil {
		h.metrics.DeliveryRejected("bad_request")
		h.log.Warn("webhook payload rejected", "delivery", id, "event", event, "err", err)
		http.Error(w, "payload does not parse: "+err.Error(), http.StatusBadRequest)
		return
	}
	d.ID, d.Event, d.ReceivedAt = id, event, h.now()
	log := h.log.With("delivery", id, "event", event, "action", d.Action, "repo", d.Repo, "installation", d.InstallationID)

	ctx, cancel := context.WithTimeout(r.Context(), h.storeTimeout)
	defer cancel()
	dup, err := h.store.Record(ctx, d, p)
	if err != nil {
		h.metrics.DeliveryRejected("store")
		log.Error("storing delivery failed; GitHub will show it failed and it will be redelivered", "err", err)
		http.Error(w, "could not store the delivery, try again", http.StatusServiceUnavailable)
		return
	}
	h.metrics.Ack(time.Since(start))
	if dup {
		h.metrics.DeliveryDuplicate(event)
		log.Info("duplicate delivery ignored")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "duplicate delivery, already stored\n")
		return
	}
	h.metrics.DeliveryReceived(event)
	log.Info("delivery stored", "jobs", len(p.Jobs))
	w.WriteHeader(http.StatusAccepted)
	if len(p.Jobs) == 0 {
		io.WriteString(w, "stored, nothing to do\n")
		return
	}
	fmt.Fprintf(w, "stored, %s queued\n", markdown.Count(len(p.Jobs), "job", "jobs"))
}

// validHeaderToken bounds the delivery id and event name: printable ASCII
// without spaces, at most 100 bytes.
func validHeaderToken(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// envelope is what every event payload shares.
type envelope struct {
	Action       string `json:"action"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Repository *payloadRepo `json:"repository"`
}

type payloadRepo struct {
	FullName      string `json:"full_name"`
	Name          string `json:"name"`
	CloneURL      string `json:"clone_url"`
	DefaultBranch string `json:"default_branch"`
	Owner         struct {
		Login string `json:"login"`
	} `json:"owner"`
}

// eventContext is the parsed envelope handed to each event's handler.
type eventContext struct {
	DeliveryID     string
	Action         string
	InstallationID int64
	Owner, Name    string
	CloneURL       string
	DefaultBranch  string
}

// eventHandler turns one event's payload into a plan; it must filter early
// and never call GitHub (the delivery is being acknowledged).
type eventHandler func(ec eventContext, body []byte) (jobs.Plan, error)

func eventHandlers() map[string]eventHandler {
	return map[string]eventHandler{
		"pull_request":              onPullRequest,
		"check_suite":               onCheckSuite,
		"check_run":                 onCheckRun,
		"status":                    onStatus,
		"pull_request_review":       onPullRequestReview,
		"issue_comment":             onIssueComment,
		"merge_group":               onMergeGroup,
		"push":                      onPush,
		"installation":              onInstallation,
		"installation_repositories": onInstallationRepositories,
	}
}

// Route parses the envelope and runs the event's handler. Events
// without a handler give an empty plan (recorded, nothing enqueued).
func Route(deliveryID, event string, body []byte) (jobs.Delivery, jobs.Plan, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return jobs.Delivery{}, jobs.Plan{}, fmt.Errorf("not a JSON object: %w", err)
	}
	ec := eventContext{DeliveryID: deliveryID, Action: env.Action}
	d := jobs.Delivery{Action: env.Action}
	if env.Installation != nil {
		ec.InstallationID = env.Installation.ID
		d.InstallationID = env.Installation.ID
	}
	if r := env.Repository; r != nil {
		owner, name := r.Owner.Login, r.Name
		if o, n, ok := strings.Cut(r.FullName, "/"); ok {
			owner, name = o, n
		}
		ec.Owner, ec.Name, ec.CloneURL, ec.DefaultBranch = owner, name, r.CloneURL, r.DefaultBranch
		d.Repo = owner + "/" + name
	}
	h, ok := eventHandlers()[event]
	if !ok {
		return d, jobs.Plan{}, nil
	}
	p, err := h(ec, body)
	if err != nil {
		return d, jobs.Plan{}, err
	}
	// Every repository event teaches us an installed repository (the resync
	// walks them), unless the event removes it.
	if ec.InstallationID != 0 && ec.Owner != "" && ec.Name != "" && event != "installation" && event != "installation_repositories" {
		p.UpsertRepos = append(p.UpsertRepos, jobs.InstalledRepo{InstallationID: ec.InstallationID, Owner: ec.Owner, Name: ec.Name, CloneURL: ec.CloneURL})
	}
	return d, p, nil
}
