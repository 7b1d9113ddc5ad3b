package app

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
)

const (
	e2eAppID  = 7001
	e2eInstID = 4242
	e2eSecret = "e2e-webhook-secret"
)

const e2ePolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
packages:
  etcd: { owners: [bob] }
newPackages: maintainers
`

const e2eBase = `---
schema: olm.package
name: etcd
defaultChannel: stable
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v1.0.0
---
schema: olm.bundle
package: etcd
name: etcd.v1.0.0
image: quay.io/acme/etcd-bundle@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.0.0}
`

// e2eHead adds etcd.v1.1.0 whose channel entry replaces a bundle that does
// not exist and whose version does not parse.
const e2eHead = `---
schema: olm.package
name: etcd
defaultChannel: stable
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v1.0.0
  - name: etcd.v1.1.0
    replaces: etcd.v1.0.0
---
schema: olm.bundle
package: etcd
name: etcd.v1.0.0
image: quay.io/acme/etcd-bundle@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.0.0}
---
schema: olm.bundle
package: etcd
name: etcd.v1.1.0
image: quay.io/acme/etcd-bundle@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
properties:
  - type: olm.package
    value: {packageName: etcd, version: not-a-version}
`

// e2eEnv is a running catalogbot against a fake GitHub and a real git server.
type e2eEnv struct {
	fake    *githubfake.Fake
	git     *gitServer
	work    *workRepo
	srv     *Server
	url     string // catalogbot's base URL
	baseSHA string
	headSHA string
	gate    *apiGate // holds requests to the fake GitHub when a test asks
}

func startE2E(t *testing.T, backend string) *e2eEnv {
	t.Helper()
	return startE2EWith(t, backend, func(w *workRepo) (string, string) {
		base, head := commitEtcdPR(t, w, e2ePolicy)
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	})
}

// commitEtcdPR commits policy and the etcd base catalog, pushes them to main,
// then commits the etcd 1.1.0 head on branch pr; the caller decides whether
// to push that head to refs/pull/1/head.
func commitEtcdPR(t testing.TB, w *workRepo, policy string) (base, head string) {
	t.Helper()
	base = w.commit(map[string]string{".catalogbot.yaml": policy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
	w.push("HEAD", "refs/heads/main")
	runGit(t, w.dir, "checkout", "-q", "-b", "pr")
	head = w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": e2eHead}, "add etcd 1.1.0")
	return base, head
}

// startE2EWith runs catalogbot against a fake GitHub whose acme/catalog has
// PR 1 by bob; seed commits the base (pushed to main) and the head (pushed
// to refs/pull/1/head) and returns their SHAs.
func startE2EWith(t testing.TB, backend string, seed func(w *workRepo) (base, head string), cs ...checks.Check) *e2eEnv {
	t.Helper()
	if len(cs) == 0 {
		cs = []checks.Check{checks.Ownership{}, checks.Validation{}, checks.Immutability{}, checks.CRDSafety{}, checks.Images{}}
	}
	return startE2EServer(t, backend, seed, nil, WithChecks(cs...))
}

// startE2EServer is startE2EWith with the server's options as given (without WithChecks, the App's own
// checks, as production composes them) and configure, when set, adjusting the configuration.
func startE2EServer(t testing.TB, backend string, seed func(w *workRepo) (base, head string), configure func(*Config), opts ...ServerOption) *e2eEnv {
	t.Helper()
	kp, err := testAppKey()
	if err != nil {
		t.Fatal(err)
	}
	fake := githubfake.New(githubfake.Options{AppID: e2eAppID, PublicKey: &kp.key.PublicKey})
	gate := &apiGate{}
	api := httptest.NewServer(gate.wrap(fake))
	t.Cleanup(api.Close)

	gs := newGitServer(t)
	w := gs.newRepo(t, "acme", "catalog")
	base, head := seed(w)

	fake.AddInstallation(e2eInstID, "acme")
	if err := fake.AddRepo(githubfake.Repo{Owner: "acme", Name: "catalog", Installation: e2eInstID, DefaultSHA: base, GitDir: gs.BarePath("acme", "catalog")}); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.AddPullRequest("acme", "catalog", githubfake.PR{Number: 1, Author: "bob", HeadSHA: head, BaseRef: "main"}); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t)
	cfg.AppID = e2eAppID
	cfg.PrivateKey = NewSecret(kp.pem)
	cfg.WebhookSecrets = []Secret{NewSecret([]byte(e2eSecret))}
	cfg.GitHubAPIURL = githubfake.APIURL(api.URL)
	cfg.ShutdownTimeout = 10 * time.Second
	if backend == store.BackendPostgres {
		u := postgresURL(t)
		cfg.DatabaseURL = NewSecret([]byte(u))
		cfg.DatabaseSchema = freshSchema(t, u)
	}
	if configure != nil {
		configure(cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := NewServer(ctx, cfg, testLogger(t), opts...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	url := "http://" + ln.Addr().String()
	fake.SetWebhook(url+"/webhook", e2eSecret)
	return &e2eEnv{fake: fake, git: gs, work: w, srv: srv, url: url, baseSHA: base, headSHA: head, gate: gate}
}

// apiGate lets a test hold the App's requests to the fake GitHub: hold, when set, is called with each request
// before the fake serves it (and may block it).
type apiGate struct {
	mu   sync.Mutex
	hold func(*http.Request)
}

func (g *apiGate) set(hold func(*http.Request)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold = hold
}

func (g *apiGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		hold := g.hold
		g.mu.Unlock()
		if hold != nil {
			hold(r)
		}
		next.ServeHTTP(w, r)
	})
}

// prEvent is the pull_request payload GitHub sends, with the clone URL of the
// local git server.
func (e *e2eEnv) prEvent(action, sha string) map[string]any {
	return map[string]any{
		"action": action, "number": 1, "installation": map[string]any{"id": e2eInstID},
		"repository": map[string]any{"full_name": "acme/catalog", "name": "catalog", "owner": map[string]any{"login": "acme"},
			"clone_url": e.git.URL("acme", "catalog"), "default_branch": "main"},
		"pull_request": map[string]any{"number": 1, "state": "open", "draft": false,
			"head": map[string]any{"sha": sha, "ref": "pr"}, "base": map[string]any{"ref": "main", "sha": e.baseSHA},
			"user": map[string]any{"login": "bob"}},
	}
}

func (e *e2eEnv) deliver(t testing.TB, event string, payload any) {
	t.Helper()
	d, err := e.fake.Deliver(context.Background(), event, payload)
	if err != nil {
		t.Fatal(err)
	}
	if d.StatusCode != http.StatusAccepted && d.StatusCode != http.StatusOK {
		t.Fatalf("delivery of %s answered %d (%s)", event, d.StatusCode, d.Status)
	}
}

// waitRuns waits until sha has want completed check runs.
func (e *e2eEnv) waitRuns(t testing.TB, sha string, want int) []githubfake.CheckRun {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		runs := e.fake.CheckRuns("acme", "catalog", sha)
		completed := 0
		for _, r := range runs {
			if r.Status == "completed" {
				completed++
			}
		}
		if completed >= want {
			return runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d check runs completed on %s after 90s: %+v", completed, want, sha[:8], runs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitIdle waits until the queue has nothing left to do.
func (e *e2eEnv) waitIdle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := e.srv.Queue().Stats(context.Background())
		if err == nil && st.Depth == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue not idle after 60s: %+v %v\n%s", st, err, dumpJobs(e.srv.Queue()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func latestByName(runs []githubfake.CheckRun) map[string]githubfake.CheckRun {
	out := map[string]githubfake.CheckRun{}
	for _, r := range runs { // oldest first
		out[r.Name] = r
	}
	return out
}

func annotationLines(r githubfake.CheckRun) []string {
	var out []string
	for _, a := range r.Annotations {
		out = append(out, fmt.Sprintf("%s:%d %s", a.Path, a.StartLine, a.Level))
	}
	sort.Strings(out)
	return out
}

func TestEndToEnd(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := startE2E(t, backend)
			e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
			runs := latestByName(e.waitRuns(t, e.headSHA, 4))

			want := map[string]string{
				"catalogbot/ownership":  "success", // bob owns etcd
				"catalogbot/validate":   "failure",
				"catalogbot/crd-safety": "neutral", // the new bundle has no manifests and no image source is configured
				"catalogbot/images":     "neutral", // no registry: nothing can be verified
			}
			if len(runs) != len(want) {
				t.Errorf("check runs = %v, want %v", keys(runs), keys(want))
			}
			for name, conclusion := range want {
				r, ok := runs[name]
				if !ok {
					t.Errorf("no check run %s", name)
					continue
				}
				if r.Conclusion != conclusion {
					t.Errorf("%s: conclusion %q, want %q; title %q\n%s", name, r.Conclusion, conclusion, r.Title, r.Summary)
				}
				if n, ok := jobs.ParseCheckRunExternalID(r.ExternalID); !ok || n != 1 || !strings.HasPrefix(r.ExternalID, "pr:1/job:") {
					t.Errorf("%s: external_id %q, want pr:1/job:…", name, r.ExternalID)
				}
			}
			v := runs["catalogbot/validate"]
			if !strings.Contains(v.Summary, "```mermaid") || !strings.Contains(v.Summary, "etcd.v1.1.0") {
				t.Errorf("catalogbot/validate's summary lacks the upgrade graph of etcd/stable with the new head:\n%s", v.Summary)
			}
			t.Logf("validate summary:\n%s", v.Summary)
			lines := annotationLines(v)
			t.Logf("validate annotations: %v", lines)
			if len(lines) == 0 {
				t.Fatalf("catalogbot/validate has no annotations; summary:\n%s", v.Summary)
			}
			// The bad version is on line 28 of the head's catalog.yaml.
			wantLine := "catalogs/v4.16/etcd/catalog.yaml:28 failure"
			found := false
			for _, l := range lines {
				if l == wantLine {
					found = true
				}
			}
			if !found {
				t.Errorf("annotations %v lack %q", lines, wantLine)
			}

			// Re-run from GitHub's button: a new set of runs on the same head.
			e.deliver(t, "check_run", map[string]any{
				"action": "rerequested", "installation": map[string]any{"id": e2eInstID},
				"repository": map[string]any{"full_name": "acme/catalog", "name": "catalog", "owner": map[string]any{"login": "acme"},
					"clone_url": e.git.URL("acme", "catalog")},
				"check_run": map[string]any{"name": "catalogbot/validate", "head_sha": e.headSHA, "external_id": "pr:1"},
			})
			e.waitRuns(t, e.headSHA, 8)

			// A stale event for a head that is no longer the PR's is dropped:
			// the PR moves to a new head, then the old head's event arrives.
			runGit(t, e.work.dir, "checkout", "-q", "pr")
			head2 := e.work.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "revert to base content")
			e.work.push("HEAD", "refs/pull/1/head")
			if err := e.fake.PushPullRequest("acme", "catalog", 1, head2); err != nil {
				t.Fatal(err)
			}
			e.deliver(t, "pull_request", e.prEvent("synchronize", head2))
			stale := e.prEvent("synchronize", e.headSHA)
			e.deliver(t, "pull_request", stale)
			runs2 := latestByName(e.waitRuns(t, head2, 4))
			e.waitIdle(t)
			if got := len(e.fake.CheckRuns("acme", "catalog", e.headSHA)); got != 8 {
				t.Errorf("check runs on the superseded head = %d, want 8 (no new ones)", got)
			}
			for name, r := range runs2 {
				if name != "catalogbot/images" && name != "catalogbot/crd-safety" && r.Conclusion != "success" {
					t.Errorf("new head: %s concluded %q, want success\n%s", name, r.Conclusion, r.Summary)
				}
			}

			// A redelivery of a stored delivery is acknowledged and does nothing.
			ds := e.fake.Deliveries()
			before := len(e.fake.CheckRuns("acme", "catalog", head2))
			code, err := postSigned(e.url+"/webhook", e2eSecret, ds[0].GUID, ds[0].Event, ds[0].Payload)
			if err != nil || code != http.StatusOK {
				t.Errorf("redelivery answered %d, %v; want 200", code, err)
			}
			e.waitIdle(t)
			if got := len(e.fake.CheckRuns("acme", "catalog", head2)); got != before {
				t.Errorf("check runs after a redelivery = %d, want %d", got, before)
			}
			if !strings.Contains(scrape(t, e.url), "catalogbot_webhook_deliveries_duplicate_total") {
				t.Error("metrics lack the duplicate counter")
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func postSigned(url, secret, id, event string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Hub-Signature-256", Sign([]byte(secret), body))
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-GitHub-Event", event)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

func githubfakeDelivery(event, action string, payload []byte, status int) githubfake.Delivery {
	return githubfake.Delivery{Event: event, Action: action, StatusCode: status, InstallationID: e2eInstID, Payload: payload}
}

// dumpJobs lists the jobs of a SQLite queue, for failure messages.
func dumpJobs(q *store.Queue) string {
	if q.Backend() != store.BackendSQLite {
		return ""
	}
	var sb strings.Builder
	q.Query(context.Background(), `SELECT id, kind, state, attempt, CAST(errors AS TEXT), CAST(args AS TEXT) FROM river_job`, nil, func(scan func(...any) error) error {
		var id, attempt int64
		var kind, state string
		var errs, args sql.NullString
		if err := scan(&id, &kind, &state, &attempt, &errs, &args); err != nil {
			return err
		}
		fmt.Fprintf(&sb, "job %d %s %s attempt %d errors %s args %s\n", id, kind, state, attempt, errs.String, args.String)
		return nil
	})
	return sb.String()
}
