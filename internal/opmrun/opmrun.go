// Package opmrun prepares what the scripts that run the reference opm need: an in-process registry on
// loopback that serves the bundle images both tools read, and a HOME whose containers policy accepts them,
// so that nothing of the user's configuration is changed.
package opmrun

import (
	"fmt"
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

// Tool finds a reference tool for a script: the path given on its command line if any, else the environment
// variable env (OPM, CRDIFY…), else bin/NAME under $CATALOGBOT_TOOLS (where scripts/build-reference-tools.sh
// builds them). It returns "" and why when none of these names an executable file, so that the script can say
// what it skips instead of failing on a machine without the reference tools.
func Tool(given, env, name string) (path, why string) {
	src := "-" + name
	switch {
	case given != "":
		path = given
	case os.Getenv(env) != "":
		path, src = os.Getenv(env), "$"+env
	case os.Getenv("CATALOGBOT_TOOLS") != "":
		path, src = filepath.Join(os.Getenv("CATALOGBOT_TOOLS"), "bin", name), "$CATALOGBOT_TOOLS/bin/"+name
	default:
		if dir := ToolsDir(); dir != "" {
			if p := filepath.Join(dir, "bin", name); isExecutable(p) {
				return p, ""
			}
		}
		return "", "no " + name + " binary: give its path with -" + name + " or $" + env +
			" (scripts/build-reference-tools.sh builds the reference releases into $CATALOGBOT_TOOLS/bin)"
	}
	if !isExecutable(path) {
		return "", fmt.Sprintf("%s names %s, which is not an executable file", src, path)
	}
	return path, ""
}

// ToolsDir is where scripts/build-reference-tools.sh puts the reference tools: $CATALOGBOT_TOOLS, else
// catalogbot/tools in the user's cache directory ("" when there is none).
func ToolsDir() string {
	if d := os.Getenv("CATALOGBOT_TOOLS"); d != "" {
		return d
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "catalogbot", "tools")
	}
	return ""
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// NeedTool is Tool for a script's main: a path given on the command line that is not a tool is an error
// (exit 2); a tool merely absent from this machine skips the script (Skip).
func NeedTool(program, given, env, name string) string {
	path, why := Tool(given, env, name)
	if why == "" {
		return path
	}
	if given != "" {
		fmt.Fprintf(os.Stderr, "%s: %s\n", program, why)
		os.Exit(2)
	}
	Skip(program, why)
	return ""
}

// NeedDir skips the script when dir, an input of its that only some machines have (the shared community
// test data), is not a directory; what names it and how to get it go into the message.
func NeedDir(program, dir, what string) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		Skip(program, fmt.Sprintf("%s is not a directory (%s)", dir, what))
	}
}

// Skip reports on stderr that the program skipped its work and why, and exits 0: a benchmark that cannot run
// on this machine is not a failure of the code it measures.
func Skip(program, why string) {
	fmt.Fprintf(os.Stderr, "%s: skipped: %s\n", program, why)
	os.Exit(0)
}
