package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/catalogbot/catalogbot/app"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return serve(ctx, args, stderr, os.Getenv, nil)
}

// serve runs the server; ready, when set, receives the listening address
// (tests).
func serve(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string, ready chan<- string) int {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	configPath := fl.String("config", "", "YAML configuration file (optional: the environment can say everything)")
	fl.Usage = func() {
		fmt.Fprintf(stderr, `usage: catalogbot serve [--config FILE]

Runs the GitHub App: POST /webhook, GET /healthz, /readyz and /metrics.
Environment variables override the file:
  %s, %s, %s (comma-separated: rotation),
  %s (PostgreSQL; default SQLite in the data dir), %s, %s,
  %s, %s, %s (GitHub Enterprise Server API root).
SIGTERM or SIGINT stops it gracefully.

flags:
`, app.EnvAppID, app.EnvPrivateKeyFile, app.EnvWebhookSecrets, app.EnvDatabaseURL, app.EnvDataDir,
			app.EnvGitCacheDir, app.EnvListen, app.EnvWorkers, app.EnvGitHubAPIURL)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitCannotRun
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "catalogbot serve: unexpected argument %q\n", fl.Arg(0))
		return exitCannotRun
	}
	cfg, err := app.LoadConfig(*configPath, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "catalogbot serve: configuration: %v\n", err)
		return exitCannotRun
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// The catalog image rebuild on pushes to the default branch; a repository
	// whose policy names no image gets no build.
	rebuild, err := app.NewRebuilder(cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitCannotRun
	}
	srv, err := app.NewServer(ctx, cfg, log, app.WithRebuildHandler(rebuild))
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitCannotRun
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		srv.Close()
		log.Error("cannot listen", "addr", cfg.Listen, "err", err)
		return exitCannotRun
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	if err := srv.Run(ctx, ln); err != nil {
		log.Error("server stopped with an error", "err", err)
		return exitFail
	}
	return exitOK
}
