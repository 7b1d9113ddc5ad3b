package resilience

import (
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/servertest"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

// killPlan bounds one SIGKILL loop: how many events (webhook deliveries or
// pushes) it sends and after how many of them it kills a server.
type killPlan struct {
	events int
	kills  int
	seed   uint64
}

// planFor sizes the delivery loop.
func planFor(t *testing.T) killPlan {
	return sizeKillLoop(t, "kill loop", "deliveries", killPlan{events: 30, kills: 5}, killPlan{events: 150, kills: 25}, killPlan{events: 14, kills: 2})
}

// sizeKillLoop picks normal, long with CATALOGBOT_RESILIENCE_LONG=1 or
// short under -short; CATALOGBOT_RESILIENCE_SEED replays a run. loop and
// noun name the loop and its events in the log.
func sizeKillLoop(t *testing.T, loop, noun string, normal, long, short killPlan) killPlan {
	t.Helper()
	p := normal
	switch {
	case os.Getenv("CATALOGBOT_RESILIENCE_LONG") == "1":
		p = long
	case testing.Short():
		p = short
	}
	p.seed = seedFromEnv(t, uint64(time.Now().UnixNano()))
	t.Logf("%s: %d %s, %d kills, seed %d (replay with CATALOGBOT_RESILIENCE_SEED=%d)", loop, p.events, noun, p.kills, p.seed, p.seed)
	return p
}

// killPoints draws up to p.kills distinct events, neither the first nor the
// last, after which a server is killed.
func (p killPlan) killPoints(rng *rand.Rand) map[int]bool {
	killAt := map[int]bool{}
	for len(killAt) < p.kills && len(killAt) < p.events-2 {
		killAt[1+rng.IntN(p.events-2)] = true
	}
	return killAt
}

// TestKillLoopSQLite streams deliveries into one server on an SQLite file
// and SIGKILLs it at random points, starting it again on the same file.
func TestKillLoopSQLite(t *testing.T) {
	w := newWorld(t)
	data := filepath.Join(t.TempDir(), "data")
	r := w.newReplica("sqlite", serverOptions{dataDir: data})
	runKillLoop(t, w, []*servertest.Replica{r}, planFor(t), nil)
}

// TestKillLoopPostgresTwoReplicas does the same with two replicas sharing
// one PostgreSQL schema; deliveries alternate between them and a random
// one is killed each time.
func TestKillLoopPostgresTwoReplicas(t *testing.T) {
	dbURL := testpg.URL(t)
	w := newWorld(t)
	schema := freshSchema(t, dbURL)
	rs := []*servertest.Replica{
		w.newReplica("pg-a", serverOptions{databaseURL: dbURL, schema: schema}),
		w.newReplica("pg-b", serverOptions{databaseURL: dbURL, schema: schema}),
	}
	runKillLoop(t, w, rs, planFor(t), func() map[string]bool { return servertest.StoredDeliveries(t, dbURL, schema) })
}

func runKillLoop(t *testing.T, w *world, rs []*servertest.Replica, p killPlan, stored func() map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(p.seed, p.seed^0x9e3779b97f4a7c15))
	for _, r := range rs { // at once, as pods of a Deployment start
		r.Start()
	}
	for _, r := range rs {
		r.WaitReady(60 * time.Second)
	}
	for _, r := range rs { // replicas starting together on an empty schema must all come up
		if r.Exits > 0 {
			t.Errorf("%s exited %d times before becoming ready on its first start", r.Name, r.Exits)
		}
	}
	w.fake.SetWebhook(rs[0].URL(), hookToken)

	killAt := p.killPoints(rng)
	client := &http.Client{Timeout: 10 * time.Second}
	tr := &traffic{w: w, rng: rng}
	next := 0 // replica for the next delivery (round robin, as a Service)
	post := func(d *delivery) (int, error) {
		r := rs[next%len(rs)]
		next++
		return deliver(ctx, client, r.URL(), d)
	}
	kills := 0
	for i := 0; i < p.events; i++ {
		var d *delivery
		switch x := rng.Float64(); {
		case len(tr.sent) > 0 && x < 0.2: // a redelivery of the same GUID
			d = tr.again()
		case len(tr.prs) > 0 && x < 0.45: // a push to an open PR
			d = tr.push()
		default:
			d = tr.open()
		}
		post(d)
		if killAt[i] {
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			victim := rs[rng.IntN(len(rs))]
			t.Logf("delivery %d: SIGKILL %s", i, victim.Name)
			victim.Kill()
			kills++
			// Deliveries while it is down: unanswered ones are resent below,
			// as GitHub's redelivery (or our resync) would.
			if i+1 < p.events {
				d := tr.push()
				code, err := servertest.Send(ctx, client, victim.URL(), hookToken, d.Delivery)
				d.codes = append(d.codes, code)
				if err == nil && code >= 200 && code < 300 {
					t.Errorf("delivery %s to the killed %s answered %d", d.GUID, victim.Name, code)
				}
				i++
			}
			victim.Start()
			victim.WaitReady(60 * time.Second)
		}
	}
	redeliver(t, tr.sent, 5, 200*time.Millisecond, post)

	// Wait until every PR's current head shows four completed runs.
	waitAllChecked(ctx, t, w, tr.current())
	// A job killed while it ran stays "running" until River's rescuer (on
	// the leader, every 30 s, for jobs older than rescue_stuck_jobs_after)
	// hands it back; its retry completes the runs it left in progress, on
	// the current head or, as superseded, on an old one. Wait for that.
	waited, left := waitNoneInProgress(ctx, w, tr.prs, rescueWindow(serverOptions{}))

	if stored != nil {
		checkStored(t, tr.sent, stored())
	}
	// Strict: exactly one completed set on every current head, and no run
	// left in progress on any head, current or superseded.
	checkOneSetEach(t, w, tr.prs)
	checkNoDoubleMerge(t, w)
	acked := 0
	for _, d := range tr.sent {
		if d.acked {
			acked++
		}
	}
	t.Logf("%d deliveries (%d distinct GUIDs acknowledged), %d PRs, %d kills; runs in progress once all heads were checked: %d, none left after %s",
		p.events, acked, len(tr.prs), kills, left, waited.Round(100*time.Millisecond))
}
