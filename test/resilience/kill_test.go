package resilience

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// killPlan bounds one SIGKILL loop.
type killPlan struct {
	deliveries int
	kills      int
	seed       uint64
}

// planFor sizes the loop: short under -short, long with
// CATALOGBOT_RESILIENCE_LONG=1; CATALOGBOT_RESILIENCE_SEED replays a run.
func planFor(t *testing.T) killPlan {
	p := killPlan{deliveries: 30, kills: 5, seed: uint64(time.Now().UnixNano())}
	switch {
	case os.Getenv("CATALOGBOT_RESILIENCE_LONG") == "1":
		p.deliveries, p.kills = 150, 25
	case testing.Short():
		p.deliveries, p.kills = 14, 2
	}
	if s := os.Getenv("CATALOGBOT_RESILIENCE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CATALOGBOT_RESILIENCE_SEED=%q: %v", s, err)
		}
		p.seed = v
	}
	t.Logf("kill loop: %d deliveries, %d kills, seed %d (replay with CATALOGBOT_RESILIENCE_SEED=%d)", p.deliveries, p.kills, p.seed, p.seed)
	return p
}

// TestKillLoopSQLite streams deliveries into one server on an SQLite file
// and SIGKILLs it at random points, starting it again on the same file.
func TestKillLoopSQLite(t *testing.T) {
	w := newWorld(t)
	data := filepath.Join(t.TempDir(), "data")
	r := w.newReplica("sqlite", serverOptions{dataDir: data})
	runKillLoop(t, w, []*replica{r}, planFor(t), nil)
}

// TestKillLoopPostgresTwoReplicas does the same with two replicas sharing
// one PostgreSQL schema; deliveries alternate between them and a random
// one is killed each time.
func TestKillLoopPostgresTwoReplicas(t *testing.T) {
	dbURL := testPostgresURL(t)
	w := newWorld(t)
	schema := freshSchema(t, dbURL)
	rs := []*replica{
		w.newReplica("pg-a", serverOptions{databaseURL: dbURL, schema: schema}),
		w.newReplica("pg-b", serverOptions{databaseURL: dbURL, schema: schema}),
	}
	runKillLoop(t, w, rs, planFor(t), func() map[string]bool { return storedDeliveries(t, dbURL, schema) })
}

// prState is one pull request of the loop and the heads it went through.
type prState struct {
	number int
	heads  []string
}

func runKillLoop(t *testing.T, w *world, rs []*replica, p killPlan, stored func() map[string]bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(p.seed, p.seed^0x9e3779b97f4a7c15))
	for _, r := range rs { // at once, as pods of a Deployment start
		r.start()
	}
	for _, r := range rs {
		r.waitReady(60 * time.Second)
	}
	for _, r := range rs { // replicas starting together on an empty schema must all come up
		if r.exits > 0 {
			t.Errorf("%s exited %d times before becoming ready on its first start", r.name, r.exits)
		}
	}
	w.fake.SetWebhook(rs[0].url(), hookToken)

	killAt := map[int]bool{}
	for len(killAt) < p.kills && len(killAt) < p.deliveries-2 {
		killAt[1+rng.IntN(p.deliveries-2)] = true
	}
	client := &http.Client{Timeout: 10 * time.Second}
	var sent []*delivery
	var prs []*prState
	next := 0 // replica for the next delivery (round robin, as a Service)
	post := func(d *delivery) {
		r := rs[next%len(rs)]
		next++
		code, err := send(ctx, client, r.url(), d)
		d.codes = append(d.codes, code)
		if err == nil && code >= 200 && code < 300 {
			d.acked = true
		}
	}
	kills := 0
	for i := 0; i < p.deliveries; i++ {
		var d *delivery
		switch x := rng.Float64(); {
		case len(sent) > 0 && x < 0.2: // a redelivery of the same GUID
			d = sent[rng.IntN(len(sent))]
		case len(prs) > 0 && x < 0.45: // a push to an open PR
			pr := prs[rng.IntN(len(prs))]
			head := w.pushPR(pr.number, pr.heads[len(pr.heads)-1], len(pr.heads)+1)
			pr.heads = append(pr.heads, head)
			d = &delivery{guid: newGUID(), event: "pull_request", body: w.prPayload("synchronize", pr.number, head), pr: pr.number, head: head}
			sent = append(sent, d)
		default:
			n := len(prs) + 1
			head := w.openPR(n)
			prs = append(prs, &prState{number: n, heads: []string{head}})
			d = &delivery{guid: newGUID(), event: "pull_request", body: w.prPayload("opened", n, head), pr: n, head: head}
			sent = append(sent, d)
		}
		post(d)
		if killAt[i] {
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
			victim := rs[rng.IntN(len(rs))]
			t.Logf("delivery %d: SIGKILL %s", i, victim.name)
			victim.kill()
			kills++
			// Deliveries while it is down: unanswered ones are resent below,
			// as GitHub's redelivery (or our resync) would.
			if i+1 < p.deliveries {
				pr := prs[rng.IntN(len(prs))]
				head := w.pushPR(pr.number, pr.heads[len(pr.heads)-1], len(pr.heads)+1)
				pr.heads = append(pr.heads, head)
				d := &delivery{guid: newGUID(), event: "pull_request", body: w.prPayload("synchronize", pr.number, head), pr: pr.number, head: head}
				sent = append(sent, d)
				code, err := send(ctx, client, victim.url(), d)
				d.codes = append(d.codes, code)
				if err == nil && code >= 200 && code < 300 {
					t.Errorf("delivery %s to the killed %s answered %d", d.guid, victim.name, code)
				}
				i++
			}
			victim.start()
			victim.waitReady(60 * time.Second)
		}
	}
	// Resend what was never acknowledged, with the same GUID.
	for _, d := range sent {
		for try := 0; !d.acked && try < 5; try++ {
			post(d)
			if !d.acked {
				time.Sleep(200 * time.Millisecond)
			}
		}
		if !d.acked {
			t.Errorf("delivery %s (PR %d) never acknowledged: %v", d.guid, d.pr, d.codes)
		}
	}

	// Wait until every PR's current head shows four completed runs.
	final := map[int]string{}
	for _, pr := range prs {
		final[pr.number] = pr.heads[len(pr.heads)-1]
	}
	for {
		pending := 0
		for _, head := range final {
			if _, _, done := w.runsOn(head); !done {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d pull request heads still lack completed check runs at the deadline", pending, len(final))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Let late retries and rescued jobs land before counting.
	time.Sleep(2 * time.Second)

	if stored != nil {
		got := stored()
		for _, d := range sent {
			if d.acked && !got[d.guid] {
				t.Errorf("acknowledged delivery %s (PR %d, %v) is not in the delivery log: lost", d.guid, d.pr, d.codes)
			}
		}
	}
	var extra []string
	orphans := 0
	for _, pr := range prs {
		head := final[pr.number]
		completed, inProgress, _ := w.runsOn(head)
		orphans += inProgress
		for _, n := range runNames {
			if completed[n] != 1 {
				extra = append(extra, fmt.Sprintf("PR %d@%s %s: %d completed", pr.number, head[:8], n, completed[n]))
			}
		}
		for _, old := range pr.heads[:len(pr.heads)-1] {
			_, ip, _ := w.runsOn(old)
			orphans += ip
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		// A retried job reports on its own runs: one completed set per head.
		t.Errorf("%d (PR, head, check) with other than one completed run after %d kills:\n%v", len(extra), kills, extra)
	}
	merged := map[int]int{}
	for _, m := range w.fake.Merges() {
		merged[m.Number]++
	}
	for n, c := range merged {
		if c > 1 {
			t.Errorf("PR %d merged %d times", n, c)
		}
	}
	acked := 0
	for _, d := range sent {
		if d.acked {
			acked++
		}
	}
	t.Logf("%d deliveries (%d distinct GUIDs acknowledged), %d PRs, %d kills; runs left in_progress (killed attempts, superseded heads): %d",
		p.deliveries, acked, len(prs), kills, orphans)
}
