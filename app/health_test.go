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

func TestReadyzAnswersWhenTheDatabaseHangs(t *testing.T) {
	// A database whose ping does not return until released, whatever its context says (a partition, as a
	// driver may see it).
	release := make(chan struct{})
	defer close(release)
	hanging := func(ctx context.Context) error {
		<-release
		return ctx.Err()
	}
	s := &Server{dbReady: hanging, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
