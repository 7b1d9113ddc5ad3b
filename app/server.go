package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/intake"
	"github.com/catalogbot/catalogbot/app/merge"
	"github.com/catalogbot/catalogbot/app/pipeline"
	"github.com/catalogbot/catalogbot/app/promotion"
	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/app/recovery"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/catalog/load"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/registry"
)

// parseCacheBytes bounds the parse cache. A check parses only the files of
// the packages it touches (catalog.LoadPartial), so the cache holds hot
// packages, not catalogs, and a miss costs one package's parse (1–4 ms).
// Measured with BenchmarkParseCacheBudget (docs/benchmarks.md: 3,000
// one-package reads of the 600 MB derived catalog, Zipf-like popularity):
// hit ratio 0.31 at 16 MiB, 0.50 at 64, 0.73 at 256, 0.81 at 512, for
// 2.1, 1.9, 1.35 and 1.27 ms per read. 256 MiB keeps most of the gain at
// half the memory.
const parseCacheBytes = 256 << 20

// Server is the GitHub App: the composition root that wires configuration,
// metrics, GitHub clients, the git cache, the queue, the workers and the
// HTTP routes.
type Server struct {
	cfg      *Config
	log      *slog.Logger
	metrics  *Metrics
	queue    *store.Queue
	dbReady  func(context.Context) error // the queue's Ready; /readyz asks it
	pipeline *pipeline.Pipeline
	caches   serverCaches
	recovery *recovery.Recovery
	commands *merge.Commands
	rebuild  *rebuild.Rebuilder // nil without WithRebuild
	handler  http.Handler
	registry *registry.Client
	ready    atomic.Bool
}

// serverCaches are the caches the server shares among its features and shows in its metrics.
type serverCaches struct {
	limits     catalog.Limits
	lines      *checks.LineDiffCache
	bundleDirs *template.DirFactsCache
}

// ServerOption adjusts a Server; the defaults are for production.
type ServerOption func(*serverOptions)

type serverOptions struct {
	version  string
	revision string
	checks   []checks.Check
	review   reviewHandler
	// rebuild runs the post-merge rebuild (app/rebuild), each of rebuildTune adjusting it before the workers start.
	rebuild     bool
	rebuildTune []func(*rebuild.Rebuilder)
	httpClient  *http.Client
	github      *githubDeps
}

// WithBuildInfo names the running build in the catalogbot_build_info metric.
func WithBuildInfo(version, revision string) ServerOption {
	return func(o *serverOptions) { o.version, o.revision = version, revision }
}

// WithChecks replaces the checks run on each pull request.
func WithChecks(cs ...checks.Check) ServerOption {
	return func(o *serverOptions) { o.checks = cs }
}

// withReviewHandler replaces the merge evaluation as the review job's handler (tests).
func withReviewHandler(h reviewHandler) ServerOption {
	return func(o *serverOptions) { o.review = h }
}

// WithRebuild runs the post-merge rebuild (catalog and bundle images, catalog updates), built from the
// App's configuration; each tune, when given, adjusts it before the workers start (tests).
func WithRebuild(tune ...func(*rebuild.Rebuilder)) ServerOption {
	return func(o *serverOptions) { o.rebuild, o.rebuildTune = true, append(o.rebuildTune, tune...) }
}

// withGitHubDeps replaces the GitHub side (tests).
func withGitHubDeps(d *githubDeps) ServerOption {
	return func(o *serverOptions) { o.github = d }
}

// NewServer wires a server and prepares its database (migrations included).
// It does not listen or work jobs until Run.
func NewServer(ctx context.Context, cfg *Config, log *slog.Logger, opts ...ServerOption) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	var o serverOptions
	for _, f := range opts {
		f(&o)
	}
	s := &Server{cfg: cfg, log: log, metrics: NewMetrics()}
	s.metrics.setBuildInfo(o.version, o.revision)

	if o.github == nil {
		d, err := newGitHubDeps(cfg, o.httpClient, s.metrics, log)
		if err != nil {
			return nil, err
		}
		o.github = d
	}
	if o.checks == nil {
		if !cfg.RegistryOffline {
			reg, err := s.newRegistry()
			if err != nil {
				return nil, err
			}
			s.registry = reg
		}
		o.checks = defaultChecks(s.registry)
	}
	cache, err := ghapp.NewGitCache(cfg.GitCacheDir, cfg.FetchTimeout, log)
	if err != nil {
		return nil, err
	}
	// Parses of catalog files by git blob hash, shared by every repository
	// and pull request: a check re-parses only what changed. The index
	// knows which packages each blob holds, so a check reads only the
	// files of the packages it touches (catalog.LoadPartial).
	limits := catalog.Limits{Cache: load.NewParseCache(parseCacheBytes), Index: load.NewSummaryIndex(0)}
	s.caches = serverCaches{limits: limits,
		// Changed lines by (base blob, head blob): a check of contents compared before reads neither blob.
		lines: checks.NewLineDiffCache(0),
		// A bundle directory's facts by its git tree: an unchanged directory is neither parsed nor built again.
		bundleDirs: template.NewDirFactsCache(0),
	}

	// One pass. First the store: the one database, migrated; it takes jobs once the workers are registered.
	q, err := store.OpenQueue(ctx, store.QueueOptions{
		DatabaseURL: string(cfg.DatabaseURL.Reveal()), Schema: cfg.DatabaseSchema,
		SQLitePath: cfg.SQLitePath(), Log: log,
	})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) { q.Close(); return nil, err }

	// Then each feature, once, with everything it needs.
	gh := o.github
	runNames := pipeline.RunNames(o.checks) // the check runs every check job reports, in order (the merge waits for all of them)
	merger := merge.NewMerger(q, gh.clients, gh.teams, func() []string { return runNames }, log, cfg.AppID, cache, limits)
	s.commands = merge.NewCommands(q, gh.clients, gh.teams, log)
	s.pipeline = pipeline.New(pipeline.Deps{
		GitHub: gh.clients, Reporter: gh.reporter, Teams: gh.teams, Cache: cache,
		Checks: o.checks, CheckTimeout: cfg.CheckTimeout, JobTimeout: cfg.JobTimeout, Catalogs: cfg.Catalogs,
		Limits: limits, Policies: gitpr.NewPolicyCache(), Lines: s.caches.lines, BundleDirs: s.caches.bundleDirs,
		Metrics: s.metrics, Log: log, Checked: merger, Updates: q.Updates(), Bot: gh.bot, Promotions: q.Promotions(),
	})
	s.recovery = recovery.New(recovery.Deps{Queue: q, GitHub: gh.recovery, Names: func() []string { return runNames },
		Window: cfg.RedeliverWindow, Log: log})
	review := o.review
	if review == nil {
		review = merger
	}
	var rebuildJob rebuildHandler = recordOnly{log}
	if o.rebuild {
		rb, err := rebuild.NewRebuilder(cfg.Rebuild(), rebuild.Deps{
			GitHub: gh.clients, Cache: cache, Queue: q, Limits: limits, Metrics: s.metrics, Log: log, Version: o.version})
		if err != nil {
			return fail(err)
		}
		for _, f := range o.rebuildTune {
			if f != nil {
				f(rb)
			}
		}
		s.rebuild, rebuildJob = rb, rb
	}

	// Then every job kind's worker, from one list.
	rc, err := newRiverConfig(cfg, jobHandlers{pipeline: s.pipeline, merger: merger, commands: s.commands,
		review: review, rebuild: rebuildJob, recovery: s.recovery, promoter: promotion.New(promotion.Deps{
			GitHub: gh.clients, Cache: cache, Teams: gh.teams, Records: q.Promotions(), Commands: q.Commands(), Leases: q.Leases(),
			Limits: limits, Log: log})})
	if err != nil {
		return fail(err)
	}
	rc.ErrorHandler = jobErrorLogger{log: log}
	if err := q.Register(rc); err != nil {
		return fail(err)
	}
	s.queue, s.dbReady = q, q.Ready
	s.metrics.registerQueue(q, log)
	var layers *image.LayerCache
	if s.rebuild != nil {
		layers = s.rebuild.LayerCache()
	}
	s.metrics.registerCaches(limits.Cache, limits.Index, s.caches.lines, layers)
	wh, err := newWebhook(cfg.WebhookSecrets, q, s.metrics, log)
	if err != nil {
		return fail(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/webhook", wh)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics.Handler())
	s.handler = mux
	return s, nil
}

// defaultChecks are the checks run on each pull request. With no registry
// client (registry.offline) no check contacts a registry: the images check
// is left out, crd-safety reads no bundle image (a bundle without
// olm.bundle.object is "CRDs not embedded, not compared", neutral) and
// templates pull nothing (an image neither the base's catalogs nor a bundle
// directory resolves leaves its template "not verified", neutral).
func defaultChecks(reg *registry.Client) []checks.Check {
	return checks.Default(checks.Deps{Bundles: reg, Images: reg})
}

func (s *Server) newRegistry() (*registry.Client, error) {
	reg, err := rebuild.NewRegistryClient(s.cfg.registry(), s.log)
	if err != nil {
		return nil, fmt.Errorf("configuring the registry client: %w", err)
	}
	return reg, nil
}

// newWebhook is the webhook endpoint (app/intake) taking deliveries signed with any of secrets into st.
func newWebhook(secrets []Secret, st intake.DeliveryStore, m *Metrics, log *slog.Logger) (*intake.Webhook, error) {
	keys := make([][]byte, len(secrets))
	for i, sec := range secrets {
		keys[i] = sec.Reveal()
	}
	return intake.NewWebhook(keys, st, m, log)
}

// Sign is the X-Hub-Signature-256 value of body under secret, as GitHub signs a delivery (tests, tools).
func Sign(secret, body []byte) string { return intake.Sign(secret, body) }

// Handler is the server's HTTP routes (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// Queue is the server's queue.
func (s *Server) Queue() *store.Queue { return s.queue }

// Run starts the workers and serves HTTP on ln until ctx is done, then shuts
// down gracefully: it stops accepting requests, lets in-flight requests and
// jobs finish within the shutdown timeout, and cancels the jobs still
// running (River retries them later, here or on another replica).
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	defer s.close()
	// River stops hard when its start context ends: stop it explicitly instead.
	if err := s.queue.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("starting the job queue: %w", err)
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.ready.Store(true)
	s.log.Info("catalogbot serving", "addr", ln.Addr().String(), "backend", s.queue.Backend(), "workers", s.cfg.Workers)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.ready.Store(false)
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	herr := srv.Shutdown(sctx)
	qerr := s.queue.Stop(sctx)
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	if err := errors.Join(serveErr, herr, qerr); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	s.log.Info("stopped")
	return nil
}

// Close releases what NewServer opened, for a server that never ran.
func (s *Server) Close() { s.close() }

func (s *Server) close() {
	s.queue.Close()
	if s.registry != nil {
		s.registry.Close()
	}
}
