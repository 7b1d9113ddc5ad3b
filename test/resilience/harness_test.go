package resilience

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/internal/servertest"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

const (
	appID     = 7101
	instID    = 5151
	hookToken = "resilience-webhook-secret"
	owner     = "acme"
	repoName  = "catalog"
)

// runNames are the check runs the server reports on every head.
var runNames = []string{"catalogbot/ownership", "catalogbot/validate", "catalogbot/crd-safety", "catalogbot/images"}

// binaryPath is the catalogbot binary built once by TestMain; it is set
// before any test runs and never changed.
var binaryPath string

func TestMain(m *testing.M) { servertest.Main(m, &binaryPath) }

// world is everything around the server: a fake GitHub with acme/catalog
// installed, the git host serving it, and an empty registry on loopback.
type world struct {
	t        testing.TB
	github   *servertest.GitHub
	fake     *githubfake.Fake
	git      *servertest.GitHost
	repo     *servertest.Repo
	registry string // host:port
	baseSHA  string
}

const policyFile = `version: 1
catalogs:
  - path: catalogs
maintainers: [maria]
newPackages: maintainers
`

// packageFile is a small valid package whose bundle image lives on the
// loopback registry (which does not have it: the images check fails fast,
// without the internet).
func packageFile(reg, pkg string, versions int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nschema: olm.package\nname: %s\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: %s\nname: stable\nentries:\n", pkg, pkg)
	for v := 1; v <= versions; v++ {
		fmt.Fprintf(&b, "  - name: %s.v1.%d.0\n", pkg, v)
		if v > 1 {
			fmt.Fprintf(&b, "    replaces: %s.v1.%d.0\n", pkg, v-1)
		}
	}
	for v := 1; v <= versions; v++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s-%d", pkg, v)))
		fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: %s\nname: %s.v1.%d.0\nimage: %s/acme/%s-bundle@sha256:%x\nproperties:\n  - type: olm.package\n    value: {packageName: %s, version: 1.%d.0}\n",
			pkg, pkg, v, reg, pkg, sum, pkg, v)
	}
	return b.String()
}

func newWorld(t testing.TB) *world {
	t.Helper()
	return newWorldWith(t, policyFile)
}

// newWorldWith is newWorld with the base branch's .catalogbot.yaml given.
func newWorldWith(t testing.TB, policy string) *world {
	t.Helper()
	w := &world{t: t}
	w.github = servertest.NewGitHub(t, githubfake.Options{AppID: appID})
	w.fake = w.github.Fake
	w.registry = servertest.NewRegistry(t)
	w.git = servertest.NewGitHost(t)
	w.repo = w.git.NewRepo(t, owner, repoName)
	w.baseSHA = w.repo.Commit("", map[string]string{
		".catalogbot.yaml":           policy,
		"catalogs/base/catalog.yaml": packageFile(w.registry, "base", 2),
	}, "base")
	w.repo.Push(w.baseSHA, "refs/heads/main")

	w.fake.AddInstallation(instID, owner)
	if err := w.fake.AddRepo(githubfake.Repo{Owner: owner, Name: repoName, Installation: instID, DefaultSHA: w.baseSHA, GitDir: w.repo.Bare()}); err != nil {
		t.Fatal(err)
	}
	return w
}

// openPR adds PR n (a new package pkgN with one bundle) and returns its head.
func (w *world) openPR(n int) string {
	w.t.Helper()
	pkg := fmt.Sprintf("pkg%d", n)
	head := w.repo.Commit(w.baseSHA, map[string]string{"catalogs/" + pkg + "/catalog.yaml": packageFile(w.registry, pkg, 1)}, "add "+pkg)
	w.repo.Push(head, fmt.Sprintf("refs/pull/%d/head", n))
	if _, err := w.fake.AddPullRequest(owner, repoName, githubfake.PR{Number: n, Author: "maria", HeadSHA: head, BaseRef: "main"}); err != nil {
		w.t.Fatal(err)
	}
	return head
}

// pushPR moves PR n to a new head with one more bundle.
func (w *world) pushPR(n int, prev string, versions int) string {
	w.t.Helper()
	pkg := fmt.Sprintf("pkg%d", n)
	head := w.repo.Commit(prev, map[string]string{"catalogs/" + pkg + "/catalog.yaml": packageFile(w.registry, pkg, versions)}, "bump "+pkg)
	w.repo.Push(head, fmt.Sprintf("refs/pull/%d/head", n))
	if err := w.fake.PushPullRequest(owner, repoName, n, head); err != nil {
		w.t.Fatal(err)
	}
	return head
}

// prPayload is the pull_request event GitHub sends for PR n at head.
func (w *world) prPayload(action string, n int, head string) []byte {
	w.t.Helper()
	body := w.github.PullRequestEvent(w.t, w.git, owner, repoName, n, action)
	if !bytes.Contains(body, []byte(w.git.CloneURL(owner, repoName))) {
		w.t.Fatalf("pull_request payload has no clone URL to replace:\n%s", body)
	}
	if !bytes.Contains(body, []byte(head)) {
		w.t.Fatalf("pull_request payload for PR %d lacks head %s", n, head)
	}
	return body
}

// runsOn counts, per check run name on sha, the completed runs, and the
// runs in progress, and says whether the latest run of every name is
// completed.
func (w *world) runsOn(sha string) (completed map[string]int, inProgress int, latestDone bool) {
	completed = map[string]int{}
	latest := map[string]string{}
	for _, r := range w.fake.CheckRuns(owner, repoName, sha) { // oldest first
		latest[r.Name] = r.Status
		if r.Status == "completed" {
			completed[r.Name]++
		} else {
			inProgress++
		}
	}
	latestDone = true
	for _, n := range runNames {
		if latest[n] != "completed" {
			latestDone = false
		}
	}
	return completed, inProgress, latestDone
}

// serverOptions is what differs between runs of the server.
type serverOptions struct {
	databaseURL string
	schema      string
	dataDir     string
	workers     int
	jobTimeout  time.Duration
	// pushTo, when set, are the rebuild's allowed push targets
	// (rebuild.allowed_images).
	pushTo []string
	// offline: no check contacts a registry (registry.offline; the images check is left out).
	offline bool
}

func (o serverOptions) withDefaults() serverOptions {
	if o.workers == 0 {
		o.workers = 4
	}
	if o.jobTimeout == 0 {
		o.jobTimeout = 10 * time.Second
	}
	return o
}

// rescueAfter is the rescue_stuck_jobs_after the replica gets: River hands a
// job back for a retry once it has been running this long (a killed
// process's jobs stay "running"). As short as the configuration allows
// with a margin, so that the scenarios see the retries.
func (o serverOptions) rescueAfter() time.Duration { return o.jobTimeout + 5*time.Second }

// newReplica prepares a server process (not started) for the world. Its log
// is shown when the test fails; CATALOGBOT_RESILIENCE_LOGS=1 shows all of
// it, also for tests that pass.
func (w *world) newReplica(name string, o serverOptions) *servertest.Replica {
	t := w.t
	t.Helper()
	dir := t.TempDir()
	if o.dataDir == "" {
		o.dataDir = filepath.Join(dir, "data")
	}
	o = o.withDefaults()
	cfg := fmt.Sprintf(`job_timeout: %s
rescue_stuck_jobs_after: %s
check_timeout: 8s
fetch_timeout: 8s
shutdown_timeout: 5s
log_level: info
database_schema: %q
registry:
  internal_hosts: [%q]
  insecure_hosts: [%q]
  offline: %v
`, o.jobTimeout, o.rescueAfter(), o.schema, w.registry, w.registry, o.offline)
	if len(o.pushTo) > 0 {
		cfg += "rebuild:\n  allowed_images:\n"
		for _, p := range o.pushTo {
			cfg += fmt.Sprintf("    - %q\n", p)
		}
	}
	env := append(w.github.Env(),
		"CATALOGBOT_WEBHOOK_SECRETS="+hookToken,
		"CATALOGBOT_DATA_DIR="+o.dataDir,
		"CATALOGBOT_GIT_CACHE_DIR="+filepath.Join(dir, "git"),
		fmt.Sprintf("CATALOGBOT_WORKERS=%d", o.workers),
	)
	if o.databaseURL != "" {
		env = append(env, "CATALOGBOT_DATABASE_URL="+o.databaseURL)
	}
	return servertest.NewReplica(t, servertest.ReplicaOptions{Name: name, Binary: binaryPath, Config: cfg, Env: env,
		FullLog: os.Getenv("CATALOGBOT_RESILIENCE_LOGS") == "1"})
}

// freshSchema names a schema for one test (the server creates it) and drops
// it afterwards.
func freshSchema(t testing.TB, dbURL string) string {
	t.Helper()
	return testpg.FreshSchema(t, dbURL, "resilience_")
}
