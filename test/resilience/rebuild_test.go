package resilience

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/jackc/pgx/v5"

	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/internal/servertest"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

// imageRunName is the check run of the catalog image rebuild.
const imageRunName = "catalogbot/catalog-image"

// rebuildLease is how long a build holds its repository's lease without
// renewing it (rebuild.NewRebuilder; not configurable): a build killed while
// holding it keeps every build of the repository waiting that long.
const rebuildLease = 2 * time.Minute

// rebuildPlanFor sizes the loop over pushes to the default branch.
func rebuildPlanFor(t *testing.T) killPlan {
	return sizeKillLoop(t, "rebuild kill loop", "pushes", killPlan{events: 24, kills: 4}, killPlan{events: 100, kills: 15}, killPlan{events: 10, kills: 2})
}

// TestKillLoopRebuildSQLite pushes to the catalog repository's main branch
// in a stream while SIGKILLing the one server that builds its catalog
// image, on an SQLite file.
func TestKillLoopRebuildSQLite(t *testing.T) {
	w := newWorld(t)
	m := newMainline(t, w)
	r := w.newReplica("sqlite", serverOptions{pushTo: []string{w.registry + "/acme/"}})
	runRebuildKillLoop(t, w, m, []*servertest.Replica{r}, rebuildPlanFor(t), nil, nil)
}

// TestKillLoopRebuildPostgresTwoReplicas does the same with two replicas
// on one PostgreSQL schema: they share the build lease and the queue.
func TestKillLoopRebuildPostgresTwoReplicas(t *testing.T) {
	dbURL := testpg.URL(t)
	w := newWorld(t)
	m := newMainline(t, w)
	schema := freshSchema(t, dbURL)
	o := serverOptions{databaseURL: dbURL, schema: schema, pushTo: []string{w.registry + "/acme/"}}
	rs := []*servertest.Replica{w.newReplica("pg-a", o), w.newReplica("pg-b", o)}
	leaseHeld := func() bool {
		var held bool
		servertest.Query(t, dbURL, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+pgx.Identifier{schema, "catalogbot_rebuild"}.Sanitize()+
				" WHERE lease_until > $1)", time.Now().UnixMilli()).Scan(&held)
		})
		return held
	}
	runRebuildKillLoop(t, w, m, rs, rebuildPlanFor(t), func() map[string]bool { return servertest.StoredDeliveries(t, dbURL, schema) }, leaseHeld)
}

// mainline is the default branch of the world's repository once its
// policy names a catalog image: every commit the test puts on it, and the
// catalog each one holds.
type mainline struct {
	w       *world
	image   string // repository of the catalog image, without tag
	tag     string // the image's configured tag
	baseRef string // the base index, by digest
	commits []string
	// versions[i] is how many bundles the package of commits[i] has: its
	// catalog, and so its image, differs from every other commit's.
	versions []int
	// bundles: every commit also adds the bundle directory operators/etcd/1.<v>.0, whose image the App
	// pushes and adds to the template templates/etcd.yaml in a catalog update pull request.
	bundles bool
}

// newMainline pushes the base index to the registry and puts a commit on
// main whose .catalogbot.yaml has the catalogs built into an image on the
// registry, on that base. No push delivery is sent for it.
func newMainline(t *testing.T, w *world) *mainline {
	t.Helper()
	m := &mainline{w: w, image: w.registry + "/acme/catalog-index", tag: "latest",
		baseRef: servertest.PushBaseIndex(t, w.registry, "opm/base")}
	m.advance()
	return m
}

// newBundleMainline is newMainline whose commits also add bundle directories.
func newBundleMainline(t *testing.T, w *world) *mainline {
	t.Helper()
	m := &mainline{w: w, image: w.registry + "/acme/catalog-index", tag: "latest",
		baseRef: servertest.PushBaseIndex(t, w.registry, "opm/base"), bundles: true}
	m.advance()
	return m
}

func (m *mainline) policy() string {
	p := fmt.Sprintf(`version: 1
catalogs:
  - path: catalogs
    image: %s:%s
    baseImage: %s
maintainers: [maria]
newPackages: maintainers
`, m.image, m.tag, m.baseRef)
	if m.bundles {
		p += fmt.Sprintf(`bundles:
  - path: operators
    image: %s/acme/{package}-bundle:v{version}
templates:
  - path: templates/etcd.yaml
    catalogs: [rendered/etcd/catalog.yaml]
`, m.w.registry)
	}
	return p
}

// bundleFiles are the files of the bundle directory of version 1.<v>.0 of etcd, replacing 1.<v-1>.0.
func bundleFiles(v int) map[string]string {
	dir := fmt.Sprintf("operators/etcd/1.%d.0/", v)
	csv := fmt.Sprintf("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcd.v1.%d.0\nspec:\n  version: 1.%d.0\n  replaces: etcd.v1.%d.0\n", v, v, v-1)
	return map[string]string{
		dir + "metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n" +
			"  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n" +
			"  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
		dir + "manifests/etcd.csv.yaml": csv,
	}
}

// catalogFiles are the files of the catalog directory of a commit with v
// bundles, relative to the directory.
func (m *mainline) catalogFiles(v int) map[string]string {
	return map[string]string{"base/catalog.yaml": packageFile(m.w.registry, "base", v)}
}

// advance commits one more bundle on main, pushes it to the git host and
// moves GitHub's view of the branch, as a merge does; it returns the
// commit before and the new head.
func (m *mainline) advance() (before, after string) {
	w := m.w
	w.t.Helper()
	before, v := w.baseSHA, 3
	if n := len(m.commits); n > 0 {
		before, v = m.commits[n-1], m.versions[n-1]+1
	}
	files := map[string]string{".catalogbot.yaml": m.policy()}
	for p, c := range m.catalogFiles(v) {
		files["catalogs/"+p] = c
	}
	if m.bundles {
		for p, c := range bundleFiles(v) {
			files[p] = c
		}
		if len(m.commits) == 0 {
			files["templates/etcd.yaml"] = "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries: []\n"
		}
	}
	after = w.repo.Commit(before, files, fmt.Sprintf("release base v1.%d.0", v))
	w.repo.Push(after, "refs/heads/main")
	if err := w.fake.SetBranch(owner, repoName, "main", after); err != nil {
		w.t.Fatal(err)
	}
	m.commits, m.versions = append(m.commits, after), append(m.versions, v)
	return before, after
}

func (m *mainline) head() string { return m.commits[len(m.commits)-1] }

// imageRuns are the catalog image runs on sha, oldest first.
func (m *mainline) imageRuns(sha string) []githubfake.CheckRun {
	var out []githubfake.CheckRun
	for _, r := range m.w.fake.CheckRuns(owner, repoName, sha) {
		if r.Name == imageRunName {
			out = append(out, r)
		}
	}
	return out
}

// inProgress lists the commits with an image run in progress.
func (m *mainline) inProgress() []string {
	var out []string
	for i, sha := range m.commits {
		for _, r := range m.imageRuns(sha) {
			if r.Status != "completed" {
				out = append(out, fmt.Sprintf("commit %d (%s): run %d %s %q", i, sha[:8], r.ID, r.Status, r.Title))
			}
		}
	}
	return out
}

// localDigest builds, in the test process, the image of a catalog with v
// bundles on the base, from files written here (other mtimes, another file
// system than the server's git objects), and returns its digest.
func (m *mainline) localDigest(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := image.Build(ctx, m.baseRef, os.DirFS(dir), image.Limits{})
	if err != nil {
		t.Fatalf("building the catalog of %s here: %v", dir, err)
	}
	d, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// digestsByCommit builds every commit's image here: digest → commit index.
func (m *mainline) digestsByCommit(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for i, v := range m.versions {
		dir := filepath.Join(t.TempDir(), "catalogs")
		for p, c := range m.catalogFiles(v) {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d := m.localDigest(t, dir)
		if j, dup := out[d]; dup {
			t.Fatalf("commits %d and %d build the same image %s: the scenario needs a distinct catalog per commit", j, i, d)
		}
		out[d] = i
	}
	return out
}

// tagWatch samples what the image's tag points at while the scenario runs.
type tagWatch struct {
	mu   sync.Mutex
	seen []string // digests in the order the tag pointed at them
	n    int      // samples taken
}

func watchTag(ctx context.Context, t *testing.T, ref string) (*tagWatch, func()) {
	t.Helper()
	tw := &tagWatch{}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			desc, err := remote.Head(r, remote.WithContext(rctx))
			rcancel()
			tw.mu.Lock()
			tw.n++
			if err == nil && (len(tw.seen) == 0 || tw.seen[len(tw.seen)-1] != desc.Digest.String()) {
				tw.seen = append(tw.seen, desc.Digest.String())
			}
			tw.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return tw, func() { cancel(); <-done }
}

// runRebuildKillLoop is the scenario; stored, when set, reads the delivery
// log, and leaseHeld says whether a build lease is held right now (read
// after each kill: a killed build keeps it for a whole lease).
func runRebuildKillLoop(t *testing.T, w *world, m *mainline, rs []*servertest.Replica, p killPlan, stored func() map[string]bool, leaseHeld func() bool) {
	// A build killed while it holds the lease blocks the repository for a
	// whole lease; after that, its job waits for River's rescue.
	ctx, cancel := context.WithTimeout(context.Background(), rebuildLease+rescueWindow(serverOptions{})+90*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(p.seed, p.seed^0x9e3779b97f4a7c15))
	start := time.Now()
	for _, r := range rs {
		r.Start()
	}
	for _, r := range rs {
		r.WaitReady(60 * time.Second)
	}
	w.fake.SetWebhook(rs[0].URL(), hookToken)
	var stopOnce sync.Once
	tw, stopW := watchTag(ctx, t, m.image+":"+m.tag)
	stopWatch := func() { stopOnce.Do(stopW) }
	defer stopWatch()

	killAt := p.killPoints(rng)
	client := &http.Client{Timeout: 10 * time.Second}
	var sent []*delivery
	push := func() *delivery {
		before, after := m.advance()
		d := &delivery{Delivery: servertest.Delivery{GUID: servertest.NewGUID(), Event: "push",
			Body: w.github.PushEvent(t, w.git, owner, repoName, "main", before, after, "maria")}, head: after}
		sent = append(sent, d)
		return d
	}
	next := 0
	post := func(d *delivery) (int, error) {
		r := rs[next%len(rs)]
		next++
		return deliver(ctx, client, r.URL(), d)
	}
	kills, resent, heldAtKill := 0, 0, 0
	for i := 0; i < p.events; i++ {
		if len(sent) > 0 && rng.Float64() < 0.2 {
			post(sent[rng.IntN(len(sent))]) // GitHub sends a push again under its GUID
			resent++
		}
		post(push())
		if killAt[i] {
			// Builds take a few hundred milliseconds: kill at any point of one.
			time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
			victim := rs[rng.IntN(len(rs))]
			t.Logf("push %d: SIGKILL %s", i, victim.Name)
			victim.Kill()
			kills++
			if leaseHeld != nil && leaseHeld() {
				// By the killed build (then the next build waits out the
				// lease) or by the other replica's.
				heldAtKill++
				t.Logf("push %d: a build lease is held right after the kill", i)
			}
			if i+1 < p.events { // a push while it is down, resent below
				d := push()
				code, err := servertest.Send(ctx, client, victim.URL(), hookToken, d.Delivery)
				d.codes = append(d.codes, code)
				if err == nil && code >= 200 && code < 300 {
					t.Errorf("push %s to the killed %s answered %d", d.GUID, victim.Name, code)
				}
				i++
			}
			victim.Start()
			victim.WaitReady(60 * time.Second)
		} else {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
	}
	streamed := time.Since(start)
	redeliver(t, sent, 5, 200*time.Millisecond, post)

	// The end: every pushed commit has a completed run (a build, or
	// superseded: each acknowledged push has a job that reports one), and no
	// commit has a run in progress.
	final := m.head()
	for {
		var unreported []string
		for i, sha := range m.commits[1:] {
			done := false
			for _, r := range m.imageRuns(sha) {
				done = done || r.Status == "completed"
			}
			if !done {
				unreported = append(unreported, fmt.Sprintf("commit %d (%s)", i+1, sha[:8]))
			}
		}
		left := m.inProgress()
		if len(unreported) == 0 && len(left) == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("at the deadline: without a completed run: %s; runs in progress:\n%s", strings.Join(unreported, ", "), strings.Join(left, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	settled := time.Since(start)
	time.Sleep(time.Second) // a late second run would show now
	stopWatch()

	if stored != nil {
		checkStored(t, sent, stored())
	}
	// The final head: exactly one completed run, a success.
	runs := m.imageRuns(final)
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "success" {
		t.Errorf("final head %s: want one completed %s run concluding success, have %s", final[:8], imageRunName, describeRuns(runs))
	}
	// Superseded commits: one run each, completed, neutral (superseded) or
	// a success (built while it was the head). The first commit, on main
	// before the server started, had no push and has no run.
	var built, superseded, twice int
	if runs := m.imageRuns(m.commits[0]); len(runs) > 0 {
		t.Errorf("commit 0 (%s), pushed before the server started, has runs: %s", m.commits[0][:8], describeRuns(runs))
	}
	for i := 1; i < len(m.commits)-1; i++ {
		sha := m.commits[i]
		runs := m.imageRuns(sha)
		if builtThenSuperseded(runs) {
			// A job killed after its build reported, before River stored it
			// as done, must leave the commit's verdict alone on retry.
			twice++
			t.Errorf("commit %d (%s): built, then reported superseded by a retry: %s", i, sha[:8], describeRuns(runs))
			runs = runs[:1]
		}
		if len(runs) != 1 {
			t.Errorf("commit %d (%s): %d runs, want one: %s", i, sha[:8], len(runs), describeRuns(runs))
		}
		for _, r := range runs {
			switch {
			case r.Status != "completed":
				t.Errorf("commit %d (%s): run %d left %s", i, sha[:8], r.ID, r.Status)
			case r.Conclusion == "success":
				built++
			case r.Conclusion == "neutral" && strings.HasPrefix(r.Title, "Superseded"):
				superseded++
			default:
				t.Errorf("commit %d (%s): run concluded %s %q, want success or superseded\n%s", i, sha[:8], r.Conclusion, r.Title, r.Summary)
			}
		}
	}

	// The registry: the tag and the final SHA name the image of the final
	// commit's catalog, as built here from the work tree.
	want := m.localDigest(t, filepath.Join(w.repo.Dir, "catalogs"))
	tagged := servertest.ImageDigest(t, m.image+":"+m.tag)
	bySHA := servertest.ImageDigest(t, m.image+":"+final)
	if tagged != want || bySHA != want {
		t.Errorf("%s:%s is %q and %s:%s is %q; the final commit's catalog builds %s", m.image, m.tag, tagged, m.image, final[:8], bySHA, want)
	}
	// Every digest the tag pointed at is a commit's image, and the commits
	// only ever move forward.
	byDigest := m.digestsByCommit(t)
	if byDigest[want] != len(m.commits)-1 {
		t.Errorf("the final commit's catalog from the work tree builds %s, from written files commit %d's", want, byDigest[want])
	}
	tw.mu.Lock()
	seen, samples := append([]string(nil), tw.seen...), tw.n
	tw.mu.Unlock()
	last := -1
	var path []string
	for _, d := range seen {
		i, ok := byDigest[d]
		if !ok {
			t.Errorf("%s:%s pointed at %s, no commit's image", m.image, m.tag, d)
			continue
		}
		path = append(path, fmt.Sprint(i))
		if i <= last {
			t.Errorf("%s:%s went back from commit %d's image to commit %d's", m.image, m.tag, last, i)
		}
		last = i
	}
	// A commit whose image was pushed has its SHA tag on that image.
	for i, sha := range m.commits {
		if d := servertest.ImageDigest(t, m.image+":"+sha); d != "" && byDigest[d] != i {
			t.Errorf("%s:%s names commit %d's image, not its own", m.image, sha[:8], byDigest[d])
		}
	}
	acked := 0
	for _, d := range sent {
		if d.acked {
			acked++
		}
	}
	t.Logf("%d commits pushed (%d deliveries acknowledged, %d resends of a GUID), %d kills; %d built (success), %d superseded, %d built then reported superseded by a retry; the tag went through commits %s (%d samples); %d kills with a build lease held; stream %s, all settled %s after the start",
		len(m.commits)-1, acked, resent, kills, built+1, superseded, twice, strings.Join(path, " "), samples, heldAtKill, streamed.Round(100*time.Millisecond), settled.Round(100*time.Millisecond))
}

// builtThenSuperseded: a success, then a completed "Superseded".
func builtThenSuperseded(runs []githubfake.CheckRun) bool {
	return len(runs) == 2 && runs[0].Status == "completed" && runs[0].Conclusion == "success" &&
		runs[1].Status == "completed" && runs[1].Conclusion == "neutral" && strings.HasPrefix(runs[1].Title, "Superseded")
}

func describeRuns(runs []githubfake.CheckRun) string {
	if len(runs) == 0 {
		return "none"
	}
	var parts []string
	for _, r := range runs {
		parts = append(parts, fmt.Sprintf("#%d %s/%s %q", r.ID, r.Status, r.Conclusion, r.Title))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
