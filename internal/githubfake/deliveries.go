package githubfake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// webhookTimeout: GitHub waits 10 seconds for a webhook answer.
const webhookTimeout = 10 * time.Second

// redeliveryWindow: GitHub allows redelivering deliveries of the past 3 days.
const redeliveryWindow = 72 * time.Hour

// Delivery is one webhook delivery attempt as GitHub records it.
type Delivery struct {
	ID          int64
	GUID        string
	Event       string
	Action      string
	StatusCode  int
	Status      string // "OK", "Invalid HTTP Response: 503", "timed out", "Couldn't connect to server"
	Redelivery  bool
	DeliveredAt time.Time
	Duration    float64
	// InstallationID and RepositoryID come from the payload.
	InstallationID int64
	RepositoryID   int64
	Payload        []byte
}

// SetWebhook sets where deliveries go and the secret that signs them.
func (f *Fake) SetWebhook(url, secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.webhookURL, f.webhookSecret = url, secret
}

// Deliveries returns all deliveries, oldest first.
func (f *Fake) Deliveries() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Delivery, len(f.deliveries))
	for i, d := range f.deliveries {
		out[i] = *d
	}
	return out
}

// AddDelivery records a delivery without sending it (for example a failed
// one from before a restart); ID and GUID are made up when empty.
func (f *Fake) AddDelivery(d Delivery) Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.ID == 0 {
		d.ID = f.id()
	}
	if d.GUID == "" {
		d.GUID = newGUID()
	}
	if d.DeliveredAt.IsZero() {
		d.DeliveredAt = f.now()
	}
	if d.Status == "" {
		d.Status = statusText(d.StatusCode, nil)
	}
	f.deliveries = append(f.deliveries, &d)
	return d
}

// Deliver sends an event to the webhook URL, signed with the secret, and
// records the delivery as GitHub would; payload is JSON bytes or a value to
// marshal. It returns the recorded delivery (its Status tells how it went).
func (f *Fake) Deliver(ctx context.Context, event string, payload any) (Delivery, error) {
	data, ok := payload.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(payload); err != nil {
			return Delivery{}, fmt.Errorf("githubfake: payload: %w", err)
		}
	}
	var meta struct {
		Action       string `json:"action"`
		Installation struct {
			ID int64 `json:"id"`
		} `json:"installation"`
		Repository struct {
			ID int64 `json:"id"`
		} `json:"repository"`
	}
	_ = json.Unmarshal(data, &meta)
	d := Delivery{GUID: newGUID(), Event: event, Action: meta.Action, InstallationID: meta.Installation.ID, RepositoryID: meta.Repository.ID, Payload: data}
	return f.send(ctx, d), nil
}

// send posts d and records the outcome.
func (f *Fake) send(ctx context.Context, d Delivery) Delivery {
	f.mu.Lock()
	url, secret := f.webhookURL, f.webhookSecret
	d.ID = f.id()
	d.DeliveredAt = f.now()
	f.mu.Unlock()

	start := time.Now()
	code, err := post(ctx, url, secret, d)
	d.Duration = time.Since(start).Seconds()
	d.StatusCode = code
	d.Status = statusText(code, err)

	f.mu.Lock()
	f.deliveries = append(f.deliveries, &d)
	f.mu.Unlock()
	return d
}

func post(ctx context.Context, url, secret string, d Delivery) (int, error) {
	if url == "" {
		return 0, errors.New("no webhook URL")
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/fake")
	req.Header.Set("X-GitHub-Event", d.Event)
	req.Header.Set("X-GitHub-Delivery", d.GUID)
	req.Header.Set("X-GitHub-Hook-ID", "1")
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	if secret != "" {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(d.Payload)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
		m1 := hmac.New(sha1.New, []byte(secret))
		m1.Write(d.Payload)
		req.Header.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m1.Sum(nil)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func statusText(code int, err error) string {
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout")):
		return "timed out"
	case err != nil || code == 0:
		return "Couldn't connect to server"
	case code >= 200 && code < 300:
		return "OK"
	}
	return "Invalid HTTP Response: " + strconv.Itoa(code)
}

func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Wait waits for redeliveries started by the API to finish.
func (f *Fake) Wait() { f.webhookWG.Wait() }

func deliveryJSON(d *Delivery) map[string]any {
	return map[string]any{
		"id": d.ID, "guid": d.GUID, "delivered_at": jsonTime(d.DeliveredAt), "redelivery": d.Redelivery,
		"duration": d.Duration, "status": d.Status, "status_code": d.StatusCode, "event": d.Event,
		"action": nilIfEmpty(d.Action), "installation_id": d.InstallationID, "repository_id": d.RepositoryID,
	}
}

// listDeliveries answers with cursor pagination, newest first: per_page
// (default 30, at most 100) and cursor from the Link header's next URL.
func (f *Fake) listDeliveries(c *call) reply {
	q := c.r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	ds := append([]*Delivery(nil), f.deliveries...)
	sort.Slice(ds, func(i, j int) bool { return ds[i].ID > ds[j].ID })
	if cur := q.Get("cursor"); cur != "" {
		before, err := strconv.ParseInt(strings.TrimPrefix(cur, "v1_"), 10, 64)
		if err != nil || !strings.HasPrefix(cur, "v1_") {
			return validationFailed("HookDelivery", "cursor", "invalid", "cursor is not valid")
		}
		i := sort.Search(len(ds), func(i int) bool { return ds[i].ID < before })
		ds = ds[i:]
	}
	h := http.Header{}
	if len(ds) > per {
		q2 := c.r.URL.Query()
		q2.Set("per_page", strconv.Itoa(per))
		q2.Set("cursor", "v1_"+strconv.FormatInt(ds[per-1].ID, 10))
		h.Set("Link", fmt.Sprintf(`<%s?%s>; rel="next"`, c.absURL(), q2.Encode()))
		ds = ds[:per]
	}
	out := []any{}
	for _, d := range ds {
		out = append(out, deliveryJSON(d))
	}
	return reply{status: http.StatusOK, body: out, header: h}
}

func (f *Fake) findDelivery(id int64) *Delivery {
	for _, d := range f.deliveries {
		if d.ID == id {
			return d
		}
	}
	return nil
}

func (f *Fake) getDelivery(c *call) reply {
	d := f.findDelivery(pathInt(c, "id"))
	if d == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	out := deliveryJSON(d)
	var payload any
	_ = json.Unmarshal(d.Payload, &payload)
	out["request"] = map[string]any{"headers": map[string]any{"X-GitHub-Event": d.Event, "X-GitHub-Delivery": d.GUID}, "payload": payload}
	out["response"] = map[string]any{"headers": map[string]any{}, "payload": nil}
	return reply{status: http.StatusOK, body: out}
}

// redeliver answers 202 and sends the delivery again in the background, as a
// new delivery with the same GUID and redelivery true.
func (f *Fake) redeliver(c *call) reply {
	d := f.findDelivery(pathInt(c, "id"))
	if d == nil {
		return errorReply(http.StatusNotFound, "Not Found")
	}
	if f.now().Sub(d.DeliveredAt) > redeliveryWindow {
		return errorReply(http.StatusUnprocessableEntity, "Delivery is too old to be redelivered")
	}
	again := Delivery{GUID: d.GUID, Event: d.Event, Action: d.Action, Redelivery: true, InstallationID: d.InstallationID, RepositoryID: d.RepositoryID, Payload: d.Payload}
	f.webhookWG.Add(1)
	go func() {
		defer f.webhookWG.Done()
		f.send(context.Background(), again)
	}()
	return reply{status: http.StatusAccepted, body: map[string]any{}}
}
