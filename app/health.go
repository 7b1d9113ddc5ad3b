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

// readyz answers 200 when the server accepts work: the database answers and
// the workers run. During shutdown it answers 503 so load balancers stop
// sending deliveries first.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		http.Error(w, "not ready: starting or shutting down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.queue.Ready(ctx); err != nil {
		s.log.Warn("not ready", "err", err)
		http.Error(w, "not ready: the database does not answer", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ready\n")
}
