package load

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/jackc/pgx/v5"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/internal/servertest"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

const (
	appID    = 7201
	instID   = 6161
	secret   = "load-webhook-secret"
	owner    = "acme"
	repoName = "catalog"
	// concurrentPRs are checked at once; refPRs one at a time, before them.
	concurrentPRs = 50
	// sinkPR receives the sustained stream: synchronize deliveries for heads
	// it no longer has, so each is recorded and enqueued and its job drops it
	// after one GitHub request (the case of a burst of pushes).
	sinkPR = 999
)

var runNames = []string{"catalogbot/ownership", "catalogbot/validate", "catalogbot/crd-safety", "catalogbot/images"}

// binaryPath is built once by TestMain, before any test runs.
var binaryPath string

func TestMain(m *testing.M) {
	if os.Getenv("CATALOGBOT_LOAD") != "1" {
		fmt.Println("test/load: skipped; set CATALOGBOT_LOAD=1 to measure (minutes, two processes, PostgreSQL)")
		os.Exit(0)
	}
	servertest.Main(m, &binaryPath)
}

// sharedCatalog finds ../shared/testdata/catalogs/<name> beside the
// repository, or skips.
func sharedCatalog(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "testdata", "catalogs", name)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("%s is absent (it ships only beside the project's own checkouts): %v", dir, err)
	}
	return dir
}

// world is the fake GitHub with acme/catalog installed, the git host serving
// it with the v4.16 catalog on main, and a loopback registry holding the one
// bundle image every new bundle names.
type world struct {
	t      *testing.T
	github *servertest.GitHub
	fake   *githubfake.Fake
	reg    string
	git    *servertest.GitHost
	repo   *servertest.Repo
	base   string
	heads  map[int]string // PR number → head
}

func newWorld(t *testing.T, catalogDir string, prs []int) *world {
	t.Helper()
	w := &world{t: t, heads: map[int]string{}}
	// GitHub's 5,000 requests an hour would stop the stream after a minute;
	// the budget is not what is measured here.
	w.github = servertest.NewGitHub(t, githubfake.Options{AppID: appID, RateLimit: 10_000_000})
	w.fake = w.github.Fake
	w.reg = servertest.NewRegistry(t)
	image := w.pushBundleImage()

	w.git = servertest.NewGitHost(t)
	w.repo = w.git.NewRepo(t, owner, repoName)
	root := filepath.Join(w.repo.Dir, "catalogs", "v4.16")
	if err := os.CopyFS(root, os.DirFS(catalogDir)); err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf("version: 1\ncatalogs:\n  - path: catalogs/v4.16\nmaintainers: [maria]\nimages:\n  allowedRegistries: [%s]\n", w.reg)
	w.base = w.repo.Commit("", map[string]string{".catalogbot.yaml": policy}, "base: community v4.16")
	w.repo.Push(w.base, "refs/heads/main")

	adds := newBundles(t, catalogDir, image)
	for i, n := range prs {
		a := adds[i%len(adds)]
		file, content := a(n)
		head := w.repo.Commit(w.base, map[string]string{filepath.ToSlash(filepath.Join("catalogs", "v4.16", file)): content}, "PR "+strconv.Itoa(n))
		w.repo.Push(head, fmt.Sprintf("refs/pull/%d/head", n))
		w.heads[n] = head
	}
	w.repo.Push(w.base, fmt.Sprintf("refs/pull/%d/head", sinkPR))
	w.fake.AddInstallation(instID, owner)
	if err := w.fake.AddRepo(githubfake.Repo{Owner: owner, Name: repoName, Installation: instID, DefaultSHA: w.base}); err != nil {
		t.Fatal(err)
	}
	return w
}

// open opens pull requests on the fake GitHub. They are opened only when
// the test is about to send their deliveries: the resync run when a leader
// is elected checks every open pull request it finds.
func (w *world) open(prs ...int) {
	w.t.Helper()
	for _, n := range prs {
		head := w.heads[n]
		if n == sinkPR {
			head = w.base
		}
		if _, err := w.fake.AddPullRequest(owner, repoName, githubfake.PR{Number: n, Author: "maria", HeadSHA: head, BaseRef: "main"}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// pushBundleImage pushes a small random image to the loopback registry and
// returns its reference by digest.
func (w *world) pushBundleImage() string {
	w.t.Helper()
	img, err := random.Image(1024, 1)
	if err != nil {
		w.t.Fatal(err)
	}
	tag, err := name.NewTag(w.reg+"/acme/bundles:load", name.Insecure)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
		w.t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		w.t.Fatal(err)
	}
	return w.reg + "/acme/bundles@" + d.String()
}

// newBundles returns, per package of the catalog that has a default channel
// head carrying its manifests, a maker of the file a pull request adds: a
// new bundle (a copy of that head, CRDs included, with a new version and the
// loopback image) on a new channel replacing the head. A pull request touches
// one package.
func newBundles(t *testing.T, catalogDir, image string) []func(pr int) (file, content string) {
	t.Helper()
	cat, err := catalog.LoadDir(context.Background(), catalogDir, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var out []func(int) (string, string)
	for _, p := range cat.Packages {
		if !p.Declared {
			continue
		}
		headName, err := cat.ChannelHead(p.Name, p.DefaultChannel)
		if err != nil {
			continue
		}
		hb := p.Bundle(headName)
		if hb == nil || !hb.HasObjects() {
			continue
		}
		blob, err := json.Marshal(hb.Value)
		if err != nil {
			t.Fatal(err)
		}
		pkg, dir := p.Name, filepath.Dir(filepath.FromSlash(hb.Pos.File))
		out = append(out, func(pr int) (string, string) {
			var m map[string]any
			if err := json.Unmarshal(blob, &m); err != nil {
				t.Fatal(err)
			}
			version := fmt.Sprintf("999.0.%d", pr)
			bundle := pkg + ".v" + version
			m["name"] = bundle
			m["image"] = image
			delete(m, "relatedImages")
			props, _ := m["properties"].([]any)
			for _, prop := range props {
				if pm, ok := prop.(map[string]any); ok && pm["type"] == "olm.package" {
					pm["value"] = map[string]any{"packageName": pkg, "version": version}
				}
			}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := json.Marshal(map[string]any{"schema": "olm.channel", "package": pkg, "name": fmt.Sprintf("load-%d", pr),
				"entries": []any{map[string]any{"name": bundle, "replaces": headName}}})
			if err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, fmt.Sprintf("load-%d.json", pr)), string(b) + "\n" + string(ch) + "\n"
		})
	}
	if len(out) == 0 {
		t.Skip("no package of the catalog has a default channel head with manifests")
	}
	return out
}

// prPayload is the pull_request event for PR n, pointing at the git host;
// head, when set, replaces the PR's head SHA in it.
func (w *world) prPayload(action string, n int, head string) []byte {
	w.t.Helper()
	body := w.github.PullRequestEvent(w.t, w.git, owner, repoName, n, action)
	if head != "" {
		cur := w.heads[n]
		if n == sinkPR {
			cur = w.base
		}
		body = bytes.ReplaceAll(body, []byte(`"`+cur+`"`), []byte(`"`+head+`"`))
	}
	return body
}

// done says whether every run name on sha has a completed run, and gives
// the conclusions.
func (w *world) done(sha string) (bool, map[string]string) {
	got := map[string]string{}
	for _, r := range w.fake.CheckRuns(owner, repoName, sha) {
		if r.Status == "completed" {
			got[r.Name] = r.Conclusion
		}
	}
	for _, n := range runNames {
		if got[n] == "" {
			return false, got
		}
	}
	return true, got
}

func newReplica(t *testing.T, w *world, name, dbURL, schema string) *servertest.Replica {
	cfg := fmt.Sprintf(`database_schema: %q
log_level: warn
resync_interval: 24h
registry:
  internal_hosts: [%q]
  insecure_hosts: [%q]
`, schema, w.reg, w.reg)
	dir := t.TempDir()
	return servertest.NewReplica(t, servertest.ReplicaOptions{Name: name, Binary: binaryPath, Config: cfg, Env: append(w.github.Env(),
		"CATALOGBOT_WEBHOOK_SECRETS="+secret,
		"CATALOGBOT_DATA_DIR="+filepath.Join(dir, "data"),
		"CATALOGBOT_DATABASE_URL="+dbURL,
	)})
}

// latencies summarises acknowledgement times.
type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func (l latencies) String() string {
	return fmt.Sprintf("p50 %s, p99 %s, max %s", l.quantile(0.50).Round(10*time.Microsecond),
		l.quantile(0.99).Round(10*time.Microsecond), l.quantile(1).Round(10*time.Microsecond))
}

func mib(kib int64) string { return fmt.Sprintf("%.0f MiB", float64(kib)/1024) }

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// TestLoad measures, with replicas on one PostgreSQL schema:
//
//  1. one pull request checked alone on a fresh pair of replicas, cold
//     (clone, whole catalog parsed) then warm (the references);
//  2. 50 pull requests at once on another fresh pair (cold), then 50 more on
//     the same pair (warm): time until all have four completed runs, and the
//     memory of each replica;
//  3. a sustained stream of deliveries split between the two replicas: the
//     rate and the acknowledgement latency, against a bare HMAC-checking
//     handler as the reference, and that none is lost.
//
// It fails only when a delivery is lost, a check does not finish or a check
// of the fixture does not pass; the figures are logged.
func TestLoad(t *testing.T) {
	catalogDir := sharedCatalog(t, "community-operators-prod-v4.16")
	dbURL := testpg.URL(t)
	schema := testpg.FreshSchema(t, dbURL, "load_")
	stream := 30 * time.Second
	if s := os.Getenv("CATALOGBOT_LOAD_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("CATALOGBOT_LOAD_SECONDS=%q: want a positive number of seconds", s)
		}
		stream = time.Duration(n) * time.Second
	}
	t.Logf("machine: %d CPUs (GOMAXPROCS %d), load average %s at the start; the load generator, the fake GitHub, the git server and PostgreSQL share them",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAvg())

	refs := []int{101, 102}
	var cold, warm []int
	for n := 1; n <= concurrentPRs; n++ {
		cold = append(cold, n)
		warm = append(warm, 200+n)
	}
	setup := time.Now()
	w := newWorld(t, catalogDir, slices.Concat(refs, cold, warm))
	t.Logf("world ready in %s: %d pull request heads on the v4.16 catalog", time.Since(setup).Round(time.Millisecond), len(w.heads))

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var guids []string // every acknowledged delivery
	var guidMu sync.Mutex
	send := func(r *servertest.Replica, d servertest.Delivery) (time.Duration, bool) {
		start := time.Now()
		code, err := servertest.Send(ctx, client, r.URL(), secret, d)
		lat := time.Since(start)
		if err != nil || code < 200 || code > 299 {
			return lat, false
		}
		guidMu.Lock()
		guids = append(guids, d.GUID)
		guidMu.Unlock()
		return lat, true
	}
	startReplicas := func(names ...string) []*servertest.Replica {
		var rs []*servertest.Replica
		for _, n := range names {
			rs = append(rs, newReplica(t, w, n, dbURL, schema))
		}
		for _, r := range rs { // at once, as the pods of a Deployment
			r.Start()
		}
		for _, r := range rs {
			r.WaitReady(90 * time.Second)
			if r.Exits > 0 {
				t.Errorf("%s exited %d times before becoming ready", r.Name, r.Exits)
			}
		}
		return rs
	}
	// checkAtOnce sends the opened deliveries of prs at once, alternating
	// between the replicas, and waits until every head has four completed
	// runs, sampling the replicas' resident memory meanwhile.
	checkAtOnce := func(rs []*servertest.Replica, prs []int) (acks latencies, took time.Duration, maxRSS []int64) {
		requestsBefore := len(w.fake.Requests())
		maxRSS = make([]int64, len(rs))
		sample := func() {
			for i, r := range rs {
				maxRSS[i] = max(maxRSS[i], r.Memory().RSS)
			}
		}
		w.open(prs...)
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for i, n := range prs {
			r := rs[i%len(rs)]
			body := w.prPayload("opened", n, "")
			wg.Go(func() {
				lat, ok := send(r, servertest.Delivery{GUID: servertest.NewGUID(), Event: "pull_request", Body: body})
				if !ok {
					t.Errorf("the delivery of PR %d was not acknowledged", n)
				}
				mu.Lock()
				acks = append(acks, lat)
				mu.Unlock()
			})
		}
		wg.Wait()
		conclusions := map[string]int{}
		for {
			sample()
			pending := 0
			clear(conclusions)
			for _, n := range prs {
				ok, got := w.done(w.heads[n])
				if !ok {
					pending++
				}
				for name, c := range got {
					conclusions[name+"="+c]++
				}
			}
			if pending == 0 {
				break
			}
			if time.Since(start) > 15*time.Minute {
				t.Fatalf("%d of %d pull requests lack four completed check runs after 15 minutes", pending, len(prs))
			}
			time.Sleep(50 * time.Millisecond)
		}
		took = time.Since(start)
		sample()
		// Let the merge evaluations the checks asked for finish, then count
		// what the pull requests cost in GitHub requests.
		for settle := time.Now(); ; time.Sleep(100 * time.Millisecond) {
			if active, _ := jobStates(t, dbURL, schema); active == 0 {
				break
			}
			if time.Since(settle) > 2*time.Minute {
				t.Fatal("the jobs of the pull requests did not finish within 2 minutes of their check runs")
			}
		}
		t.Logf("%d pull request(s): %.1f GitHub API requests each (installation token, pull request, check runs, merge evaluation)",
			len(prs), float64(len(w.fake.Requests())-requestsBefore)/float64(len(prs)))
		for k, c := range conclusions {
			if !strings.HasSuffix(k, "=success") {
				t.Errorf("%d runs %s, want success: the fixture must pass", c, k)
			}
		}
		return acks, took, maxRSS
	}

	// 1. The references: one pull request alone on one fresh replica, cold
	// then warm.
	ref := startReplicas("ref")
	waitResync(t, dbURL, schema, 1) // run when a leader is elected; let it pass before the pull requests are opened
	idle := ref[0].Memory().RSS
	_, refCold, _ := checkAtOnce(ref, refs[:1])
	refPeak := ref[0].Memory().Peak
	_, refWarm, _ := checkAtOnce(ref, refs[1:])
	t.Logf("reference, one pull request alone on one replica: cold (clone, whole catalog parsed) %s, warm %s; RSS idle %s, peak after the cold check %s",
		refCold.Round(time.Millisecond), refWarm.Round(time.Millisecond), mib(idle), mib(refPeak))
	ref[0].Stop()

	// 2. 50 at once on a fresh pair, then 50 more once it is warm.
	rs := startReplicas("load-a", "load-b")
	waitResync(t, dbURL, schema, 2)
	acks, coldTook, coldRSS := checkAtOnce(rs, cold)
	t.Logf("%d pull requests at once, cold: acknowledged in %s; four runs completed on all after %s (%.1f× one cold check)",
		len(cold), acks, coldTook.Round(time.Millisecond), float64(coldTook)/float64(refCold))
	for i, r := range rs {
		m := r.Memory()
		t.Logf("%s: peak RSS (VmHWM) %s, sampled %s; %.1f× the peak of one cold check, %.1f× idle",
			r.Name, mib(m.Peak), mib(coldRSS[i]), float64(m.Peak)/float64(refPeak), float64(m.Peak)/float64(idle))
	}
	acks, warmTook, warmRSS := checkAtOnce(rs, warm)
	t.Logf("%d pull requests at once, warm: acknowledged in %s; four runs completed on all after %s (%.1f× one warm check); highest sampled RSS %s and %s",
		len(warm), acks, warmTook.Round(time.Millisecond), float64(warmTook)/float64(refWarm), mib(warmRSS[0]), mib(warmRSS[1]))

	// 3. The sustained stream, first against a bare handler (the reference:
	// loopback HTTP, the signature, the load generator itself), then split
	// between the two replicas.
	bare := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if !hmac.Equal([]byte(r.Header.Get("X-Hub-Signature-256")), []byte(servertest.Sign(secret, body))) {
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		rw.WriteHeader(http.StatusAccepted)
	}))
	defer bare.Close()
	const senders = 8
	w.open(sinkPR)
	template := w.prPayload("synchronize", sinkPR, "")
	streamTo := func(urls []string, d time.Duration) (acked, failed int64, lat latencies, ids []string) {
		var mu sync.Mutex
		var okN, failN atomic.Int64
		end := time.Now().Add(d)
		var g sync.WaitGroup
		for s := range senders {
			g.Go(func() {
				var mine latencies
				var mineIDs []string
				for i := 0; time.Now().Before(end); i++ {
					dl := servertest.Delivery{GUID: servertest.NewGUID(), Event: "pull_request",
						Body: bytes.ReplaceAll(template, []byte(`"`+w.base+`"`), []byte(`"`+randomSHA()+`"`))}
					start := time.Now()
					code, err := servertest.Send(ctx, client, urls[(s+i)%len(urls)], secret, dl)
					mine = append(mine, time.Since(start))
					if err == nil && code >= 200 && code <= 299 {
						okN.Add(1)
						mineIDs = append(mineIDs, dl.GUID)
					} else {
						failN.Add(1)
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				ids = append(ids, mineIDs...)
				mu.Unlock()
			})
		}
		g.Wait()
		return okN.Load(), failN.Load(), lat, ids
	}
	refDur := min(stream, 5*time.Second)
	bareOK, bareFail, bareLat, _ := streamTo([]string{bare.URL}, refDur)
	bareRate := float64(bareOK) / refDur.Seconds()
	t.Logf("reference, a bare HMAC-checking handler in the test process, %d senders, %s: %.0f deliveries/s, %s, %d failed",
		senders, refDur, bareRate, bareLat, bareFail)

	t.Logf("stream starts; load average %s", loadAvg())
	streamStart := time.Now()
	acked, failed, lat, ids := streamTo([]string{rs[0].URL(), rs[1].URL()}, stream)
	rate := float64(acked) / stream.Seconds()
	t.Logf("catalogbot, 2 replicas on PostgreSQL, %d senders, %s: %d acknowledged, %.0f deliveries/s (%.3f× the bare handler), %s; %d refused or failed",
		senders, stream, acked, rate, rate/bareRate, lat, failed)
	guidMu.Lock()
	guids = append(guids, ids...)
	guidMu.Unlock()

	// The same at a steady pace well below that rate (open loop: a
	// delivery leaves every 1/pace seconds whatever the answers), for the
	// latency of an acknowledgement when the replicas are not saturated.
	const pace = 100
	paced := min(stream, 15*time.Second)
	var plat latencies
	var pfail atomic.Int64
	var pmu sync.Mutex
	var pg sync.WaitGroup
	tick := time.NewTicker(time.Second / pace)
	for i, end := 0, time.Now().Add(paced); time.Now().Before(end); i++ {
		<-tick.C
		r := rs[i%len(rs)]
		pg.Go(func() {
			dl := servertest.Delivery{GUID: servertest.NewGUID(), Event: "pull_request",
				Body: bytes.ReplaceAll(template, []byte(`"`+w.base+`"`), []byte(`"`+randomSHA()+`"`))}
			lat, ok := send(r, dl)
			if !ok {
				pfail.Add(1)
			}
			pmu.Lock()
			plat = append(plat, lat)
			pmu.Unlock()
		})
	}
	tick.Stop()
	pg.Wait()
	t.Logf("catalogbot, 2 replicas, a steady %d deliveries/s for %s: %d sent, %s; %d refused or failed",
		pace, paced, len(plat), plat, pfail.Load())

	// 4. A flood of strangers: 24 connections at once posting 25 MiB unsigned bodies as fast as loopback
	// goes, for a while, against one replica, while genuine deliveries keep coming. The replica answers
	// most of the flood 429/503 without reading it and its resident memory stays near the admission budget
	// (64 MiB of bodies), where it grew by the bodies of every connection before.
	floodRSSBefore := rs[0].Memory().RSS
	floodFor := min(stream, 10*time.Second)
	junk := bytes.Repeat([]byte("x"), 25<<20)
	var codes sync.Map
	var fg sync.WaitGroup
	floodEnd := time.Now().Add(floodFor)
	for range 24 {
		fg.Go(func() {
			for time.Now().Before(floodEnd) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rs[0].URL(), bytes.NewReader(junk))
				req.Header.Set("X-GitHub-Event", "pull_request")
				req.Header.Set("X-GitHub-Delivery", servertest.NewGUID())
				req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
				code := 0
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				n, _ := codes.LoadOrStore(code, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		})
	}
	var floodPeak int64
	var genuineOK, genuineFail int
	for time.Now().Before(floodEnd) {
		floodPeak = max(floodPeak, rs[0].Memory().RSS)
		dl := servertest.Delivery{GUID: servertest.NewGUID(), Event: "pull_request",
			Body: bytes.ReplaceAll(template, []byte(`"`+w.base+`"`), []byte(`"`+randomSHA()+`"`))}
		if _, ok := send(rs[0], dl); ok {
			genuineOK++
		} else {
			genuineFail++
		}
		time.Sleep(100 * time.Millisecond)
	}
	fg.Wait()
	var answers []string
	codes.Range(func(k, v any) bool {
		answers = append(answers, fmt.Sprintf("%d×%d", v.(*atomic.Int64).Load(), k))
		return true
	})
	sort.Strings(answers)
	t.Logf("flood, 24 connections posting 25 MiB unsigned bodies for %s: answers %s; RSS %s before, peak sampled %s; genuine deliveries meanwhile: %d acknowledged, %d refused (GitHub's redelivery covers those)",
		floodFor, strings.Join(answers, ", "), mib(floodRSSBefore), mib(floodPeak), genuineOK, genuineFail)
	if floodPeak-floodRSSBefore > 512<<10 { // KiB: half a GiB over the start
		t.Errorf("the flood grew the replica's RSS by %s, want it bounded by the admission budget", mib(floodPeak-floodRSSBefore))
	}

	// No loss: every acknowledged delivery is in the delivery log, and
	// every job finishes (the stream's jobs drop their superseded heads).
	stored := servertest.StoredDeliveries(t, dbURL, schema)
	lost := 0
	for _, g := range guids {
		if !stored[g] {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged deliveries are not in the delivery log: lost", lost, len(guids))
	}
	drainStart := time.Now()
	shown := false
	for {
		active, discarded := jobStates(t, dbURL, schema)
		if active == 0 {
			if discarded > 0 {
				t.Errorf("%d jobs were discarded", discarded)
			}
			break
		}
		if !shown && time.Since(drainStart) > 5*time.Minute {
			shown = true
			t.Logf("jobs still to run 5 minutes after the stream:\n%s", activeJobs(t, dbURL, schema))
		}
		if time.Since(drainStart) > 10*time.Minute {
			t.Fatalf("%d jobs still waiting or running 10 minutes after the stream", active)
		}
		time.Sleep(200 * time.Millisecond)
	}
	jobs := streamJobs(t, dbURL, schema)
	worked := time.Since(streamStart)
	t.Logf("no loss: %d acknowledged deliveries all stored; the queue drained %s after the streams ended: %d jobs of the streams in %s, %.0f jobs/s (each one GitHub request, then dropped); load average %s",
		len(guids), time.Since(drainStart).Round(time.Millisecond), jobs, worked.Round(time.Millisecond), float64(jobs)/worked.Seconds(), loadAvg())
}

func randomSHA() string {
	b := make([]byte, 20)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// jobStates counts the jobs still to run and the discarded ones.
func jobStates(t *testing.T, dbURL, schema string) (active, discarded int64) {
	t.Helper()
	servertest.Query(t, dbURL, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'pending')),
		count(*) FILTER (WHERE state = 'discarded')
		FROM `+schema+`.river_job WHERE kind <> 'catalogbot_resync' AND kind <> 'catalogbot_redeliver'`).Scan(&active, &discarded)
	})
	return active, discarded
}

// activeJobs lists the jobs still to run, with their errors (a diagnosis
// when the queue does not drain).
func activeJobs(t *testing.T, dbURL, schema string) string {
	t.Helper()
	var b strings.Builder
	servertest.Query(t, dbURL, func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT id, kind, state, attempt, scheduled_at, errors::text, args::text FROM `+schema+`.river_job
		WHERE state IN ('available', 'scheduled', 'retryable', 'running', 'pending') ORDER BY id LIMIT 20`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var kind, state string
			var attempt int
			var at time.Time
			var errs, args *string
			if err := rows.Scan(&id, &kind, &state, &attempt, &at, &errs, &args); err != nil {
				return err
			}
			e, a := "", ""
			if errs != nil {
				e = *errs
			}
			if args != nil {
				a = *args
			}
			fmt.Fprintf(&b, "job %d %s %s attempt %d scheduled %s args %.300s errors %.600s\n", id, kind, state, attempt, at.Format(time.RFC3339), a, e)
		}
		return rows.Err()
	})
	return b.String()
}

// waitResync waits until n resync jobs are done (one runs whenever a leader
// is elected).
func waitResync(t *testing.T, dbURL, schema string, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var done int
		servertest.Query(t, dbURL, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.river_job WHERE kind = 'catalogbot_resync' AND state = 'completed'`).Scan(&done)
		})
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d resync runs not completed within 2 minutes", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// streamJobs counts the finished check jobs of the sink pull request.
func streamJobs(t *testing.T, dbURL, schema string) int64 {
	t.Helper()
	var n int64
	servertest.Query(t, dbURL, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.river_job WHERE kind = 'catalogbot_check_pr' AND state = 'completed' AND args->>'number' = $1`,
			strconv.Itoa(sinkPR)).Scan(&n)
	})
	return n
}
