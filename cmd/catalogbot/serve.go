package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/app"
	"github.com/catalogbot/catalogbot/internal/cli"
)

// serveCommand runs the GitHub App server.
func serveCommand(e env) cli.Command {
	var configPath string
	return cli.Command{
		Use:   "serve",
		Short: "run the GitHub App server (webhooks, job queue, check runs)",
		Long: fmt.Sprintf(`Runs the GitHub App: POST /webhook, GET /healthz, /readyz and /metrics.
Environment variables override the file:
  %s, %s, %s (comma-separated: rotation),
  %s (PostgreSQL; default SQLite in the data dir), %s, %s,
  %s, %s, %s (GitHub Enterprise Server API root).
SIGTERM or SIGINT stops it gracefully.`, app.EnvAppID, app.EnvPrivateKeyFile, app.EnvWebhookSecrets, app.EnvDatabaseURL, app.EnvDataDir,
			app.EnvGitCacheDir, app.EnvListen, app.EnvWorkers, app.EnvGitHubAPIURL),
		Example: `  catalogbot serve --config catalogbot.yaml
  CATALOGBOT_APP_ID=123456 CATALOGBOT_PRIVATE_KEY_FILE=app.pem CATALOGBOT_WEBHOOK_SECRETS=s3cret catalogbot serve`,
		Args: cli.NoArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&configPath, "config", "", "YAML configuration file (optional: the environment can say everything)")
		},
		Run: func(ctx context.Context, _ []string, _, stderr io.Writer) int {
			return serve(ctx, configPath, stderr, e.getenv, e.ready)
		},
	}
}

// serve runs the server; ready, when set, receives the listening address
// (tests).
func serve(ctx context.Context, configPath string, stderr io.Writer, getenv func(string) string, ready chan<- string) int {
	cfg, err := app.LoadConfig(configPath, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "catalogbot serve: configuration: %v\n", err)
		return exitCannotRun
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel, ReplaceAttr: durationsAsText}))
	// The catalog image rebuild on pushes to the default branch; a repository
	// whose policy names no image gets no build.
	srv, err := app.NewServer(ctx, cfg, log, app.WithRebuild(), app.WithBuildInfo(buildVersion(), buildRevision()))
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

// durationsAsText writes durations in JSON logs as Go prints them ("1.5s"), not as integer nanoseconds,
// which log tools read as plain numbers.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// buildRevision is the commit stamped at build time, else the one Go recorded.
func buildRevision() string {
	if revision != "" {
		return revision
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
