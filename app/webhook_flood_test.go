package app

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/intake"
	"github.com/catalogbot/catalogbot/app/store"
)

// slowDelivery sends headers claiming a 25 MiB signed-looking body and then nothing, as a flood of strangers
// would; it returns the status once the server answers (or "" if the request is still being read at stop).
func slowDelivery(t *testing.T, url string, stop <-chan struct{}) (int, error) {
	pr, pw := io.Pipe()
	go func() {
		<-stop
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}()
	req, _ := http.NewRequest(http.MethodPost, url, pr)
	req.ContentLength = intake.MaxWebhookBody
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", "flood")
	req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestWebhookFloodIsBounded: strangers claiming large bodies cannot make the endpoint buffer more than its
// budget or hold more than its read slots: beyond them they are answered 429/503 at once, nothing of their
// bodies read, while a genuine delivery still gets through; a body over 25 MiB is refused from its headers.
// Before, every request was read whole (up to 25 MiB each) before its signature was looked at.
func TestWebhookFloodIsBounded(t *testing.T) {
	wh, q, _ := newTestWebhook(t, store.BackendSQLite, "s3cret")
	wh.SetAdmission(8, 2*intake.MaxWebhookBody+(1<<20)) // two large bodies at most
	wh.SetReadTimeout(2 * time.Second)
	srv := httptest.NewServer(wh)
	defer srv.Close()

	stop := make(chan struct{})
	statuses := make(chan int, 24)
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := slowDelivery(t, srv.URL, stop)
			statuses <- code
		}()
	}
	// Wait for the 22 refusals: they come at once, without reading anything.
	refused := 0
	deadline := time.After(5 * time.Second)
	for refused < 22 {
		select {
		case code := <-statuses:
			if code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable {
				t.Fatalf("a flooding request got %d while others were read, want 429 or 503", code)
			}
			refused++
		case <-deadline:
			t.Fatalf("%d of 22 flooding requests refused after 5 s; the rest are being read", refused)
		}
	}
	// A genuine delivery still gets through while two strangers hold their slots.
	body := prPayload("opened", 7, testSHA, nil)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", "genuine-1")
	req.Header.Set("X-Hub-Signature-256", Sign([]byte("s3cret"), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("genuine delivery during the flood = %d, want 202", resp.StatusCode)
	}
	close(stop)
	wg.Wait()
	if n := countRows(t, q, "catalogbot_delivery"); n != 1 {
		t.Errorf("stored deliveries = %d; want only the genuine one", n)
	}

	// Over 25 MiB: refused from the headers.
	req, _ = http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
	req.ContentLength = intake.MaxWebhookBody + 1
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", "big")
	req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("Content-Length %s = %d, want 413", strconv.Itoa(intake.MaxWebhookBody+1), resp.StatusCode)
		}
	}
}
