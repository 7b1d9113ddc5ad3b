package app

import (
	"context"
	"io"
	"net/http"
	"time"
)

// healthz answers 200 while the process runs.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	io.WriteString(w, "ok\n")
}

// readyTimeout bounds the database check of /readyz (the deployment's
// probe gives up after 3 s).
const readyTimeout = 2 * time.Second

// readyz answers 200 when the server accepts work: the database answers and
// the workers run. During shutdown it answers 503 so load balancers stop
// sending deliveries first.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "not ready: starting or shutting down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	// The driver may take longer than the context to give up on a database
	// that does not answer (a partition: pgx then also tries to send a
	// cancel request); the answer does not wait for it.
	errc := make(chan error, 1)
	go func() { errc <- s.dbReady(ctx) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		s.log.Warn("not ready", "err", err)
		http.Error(w, "not ready: the database does not answer", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ready\n")
}
