package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// hangingBackend is a database whose ping does not return until released,
// whatever its context says (a partition, as a driver may see it).
type hangingBackend struct {
	queueBackend
	release chan struct{}
}

func (h hangingBackend) ping(ctx context.Context) error {
	<-h.release
	return ctx.Err()
}

func TestReadyzAnswersWhenTheDatabaseHangs(t *testing.T) {
	hb := hangingBackend{release: make(chan struct{})}
	defer close(hb.release)
	q := &Queue{backend: "postgres", b: hb, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	q.started.Store(true)
	s := &Server{queue: q, log: q.log}
	s.ready.Store(true)
	done := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		s.readyz(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		done <- rec.Code
	}()
	select {
	case code := <-done:
		if code != http.StatusServiceUnavailable {
			t.Errorf("/readyz with a hanging database = %d, want 503", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("/readyz waits for a database ping that hangs instead of answering at its timeout")
	}
}
