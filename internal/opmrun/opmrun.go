// Package opmrun prepares what the scripts that run the reference opm need: an in-process registry on
// loopback that serves the bundle images both tools read, and a HOME whose containers policy accepts them,
// so that nothing of the user's configuration is changed.
package opmrun

import (
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
)

// Env is a loopback registry and a HOME for opm runs.
type Env struct {
	// Host is the registry's host:port on 127.0.0.1.
	Host string
	// Home holds .config/containers/policy.json accepting any image; give it to opm as HOME.
	Home string

	ln net.Listener
}

// Start starts the registry and makes the HOME; Close undoes both.
func Start(prefix string) (*Env, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))}
	go func() { _ = srv.Serve(ln) }()
	home, err := os.MkdirTemp("", prefix)
	if err != nil {
		ln.Close()
		return nil, err
	}
	e := &Env{Host: ln.Addr().String(), Home: home, ln: ln}
	dir := filepath.Join(home, ".config", "containers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.Close()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.json"), []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o644); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close stops the registry and removes the HOME.
func (e *Env) Close() {
	e.ln.Close()
	os.RemoveAll(e.Home)
}
