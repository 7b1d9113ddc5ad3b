package resilience

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/servertest"
)

// What the scenarios share: the stream of pull requests and deliveries they
// make, and the waits and checks at their end.

// prState is one pull request of a scenario and the heads it went through.
type prState struct {
	number int
	heads  []string
}

// delivery is one webhook as GitHub would send it, under one GUID, and
// what became of it.
type delivery struct {
	servertest.Delivery
	pr   int
	head string
	// acked is set once a 2xx answer came back for this GUID.
	acked bool
	codes []int
}

// traffic makes the pull requests of a scenario and their deliveries;
// every delivery it makes is in sent.
type traffic struct {
	w    *world
	rng  *rand.Rand
	prs  []*prState
	sent []*delivery
}

// open opens the next pull request and returns its opened delivery.
func (tr *traffic) open() *delivery {
	n := len(tr.prs) + 1
	head := tr.w.openPR(n)
	tr.prs = append(tr.prs, &prState{number: n, heads: []string{head}})
	return tr.add("opened", n, head)
}

// push moves a pull request picked at random to a new head and returns its
// synchronize delivery.
func (tr *traffic) push() *delivery {
	pr := tr.prs[tr.rng.IntN(len(tr.prs))]
	head := tr.w.pushPR(pr.number, pr.heads[len(pr.heads)-1], len(pr.heads)+1)
	pr.heads = append(pr.heads, head)
	return tr.add("synchronize", pr.number, head)
}

// again picks a delivery already made, for GitHub to send it again under
// the same GUID.
func (tr *traffic) again() *delivery { return tr.sent[tr.rng.IntN(len(tr.sent))] }

func (tr *traffic) add(action string, n int, head string) *delivery {
	d := &delivery{Delivery: servertest.Delivery{GUID: servertest.NewGUID(), Event: "pull_request", Body: tr.w.prPayload(action, n, head)}, pr: n, head: head}
	tr.sent = append(tr.sent, d)
	return d
}

// current maps each pull request to its current head.
func (tr *traffic) current() map[int]string {
	final := map[int]string{}
	for _, pr := range tr.prs {
		final[pr.number] = pr.heads[len(pr.heads)-1]
	}
	return final
}

// deliver posts d, signed, to url and notes the answer on d: its status
// (0 when there was none) and, on a 2xx, that it was acknowledged.
func deliver(ctx context.Context, client *http.Client, url string, d *delivery) (int, error) {
	code, err := servertest.Send(ctx, client, url, hookToken, d.Delivery)
	d.codes = append(d.codes, code)
	if err == nil && code >= 200 && code < 300 {
		d.acked = true
	}
	return code, err
}

// redeliver sends each delivery of sent that was never acknowledged again,
// with the same GUID, as GitHub's redelivery (or the resync) would: up to
// tries times, pause apart. One still not acknowledged fails the test.
func redeliver(t *testing.T, sent []*delivery, tries int, pause time.Duration, post func(*delivery) (int, error)) {
	t.Helper()
	for _, d := range sent {
		for try := 0; !d.acked && try < tries; try++ {
			post(d)
			if !d.acked {
				time.Sleep(pause)
			}
		}
		if !d.acked {
			t.Errorf("delivery %s (PR %d) never acknowledged in %d redeliveries: %v", d.GUID, d.pr, tries, d.codes)
		}
	}
}

// waitAllChecked waits until every PR head in final shows its four runs completed.
func waitAllChecked(ctx context.Context, t *testing.T, w *world, final map[int]string) {
	t.Helper()
	for {
		pending := 0
		for _, head := range final {
			if _, _, done := w.runsOn(head); !done {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d pull request heads still lack completed check runs at the deadline", pending, len(final))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// rescueWindow bounds how long after the last kill a job that was killed
// while running takes to be retried: River's rescuer runs every 30 s (not
// configurable) and hands back jobs running for longer than
// rescue_stuck_jobs_after; the retry then needs up to a job timeout.
func rescueWindow(o serverOptions) time.Duration {
	o = o.withDefaults()
	return 30*time.Second + o.rescueAfter() + o.jobTimeout + 5*time.Second
}

// waitNoneInProgress waits, up to within, until no head of prs has a run
// in progress. It returns how long it waited and how many runs were in
// progress when it began; what is still left is for the caller's checks.
func waitNoneInProgress(ctx context.Context, w *world, prs []*prState, within time.Duration) (waited time.Duration, atStart int) {
	start := time.Now()
	atStart = auditRuns(w, prs).inProgress
	for left := atStart; left > 0 && time.Since(start) < within && ctx.Err() == nil; left = auditRuns(w, prs).inProgress {
		time.Sleep(200 * time.Millisecond)
	}
	return time.Since(start), atStart
}

// runAudit is what the fake's check runs say about the heads of the pull
// requests at the end of a scenario.
type runAudit struct {
	notOneSet   []string // a check of a current head with other than one completed run
	leftCurrent []string // current heads with runs left in progress
	leftOld     []string // superseded heads with runs left in progress
	inProgress  int      // runs left in progress on all heads
}

func auditRuns(w *world, prs []*prState) runAudit {
	var a runAudit
	for _, pr := range prs {
		head := pr.heads[len(pr.heads)-1]
		completed, inProgress, _ := w.runsOn(head)
		for _, n := range runNames {
			if completed[n] != 1 {
				a.notOneSet = append(a.notOneSet, fmt.Sprintf("PR %d@%s %s: %d completed", pr.number, head[:8], n, completed[n]))
			}
		}
		if inProgress > 0 {
			a.leftCurrent = append(a.leftCurrent, fmt.Sprintf("PR %d@%s: %d runs left in progress", pr.number, head[:8], inProgress))
		}
		a.inProgress += inProgress
		for _, sha := range pr.heads[:len(pr.heads)-1] {
			if _, ip, _ := w.runsOn(sha); ip > 0 {
				a.leftOld = append(a.leftOld, fmt.Sprintf("PR %d@%s (superseded): %d runs left in progress", pr.number, sha[:8], ip))
				a.inProgress += ip
			}
		}
	}
	return a
}

// settle lets late retries land before the runs are counted: it waits at
// least lateRetries (a duplicate set would show by then), then until no run
// is left in progress on any head, for at most settleLimit. A job retried
// after a fault lands after River's backoff, which a loaded machine (the
// race detector, CI) stretches past a fixed pause; what is still in
// progress after the limit is reported by checkOneSetEach.
func settle(ctx context.Context, w *world, prs []*prState) {
	time.Sleep(lateRetries)
	deadline := time.Now().Add(settleLimit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if a := auditRuns(w, prs); len(a.leftOld) == 0 && len(a.leftCurrent) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

const (
	lateRetries = 2 * time.Second
	settleLimit = 30 * time.Second
)

// checkOneSetEach checks exactly one completed run of each name on every
// PR's current head and none left in progress there, and no run left in
// progress on superseded heads.
func checkOneSetEach(t *testing.T, w *world, prs []*prState) {
	t.Helper()
	a := auditRuns(w, prs)
	report := func(what string, bad []string) {
		if len(bad) == 0 {
			return
		}
		sort.Strings(bad)
		t.Errorf("%d %s:\n%s", len(bad), what, strings.Join(bad, "\n"))
	}
	report("current heads without exactly one completed set of check runs", append(a.notOneSet, a.leftCurrent...))
	report("superseded heads with runs left in progress", a.leftOld)
}

func checkNoDoubleMerge(t *testing.T, w *world) {
	t.Helper()
	merged := map[int]int{}
	for _, m := range w.fake.Merges() {
		merged[m.Number]++
	}
	for n, c := range merged {
		if c > 1 {
			t.Errorf("PR %d merged %d times", n, c)
		}
	}
}

// checkStored checks that every acknowledged delivery of sent is in the
// delivery log read as stored.
func checkStored(t *testing.T, sent []*delivery, stored map[string]bool) {
	t.Helper()
	for _, d := range sent {
		if d.acked && !stored[d.GUID] {
			t.Errorf("acknowledged delivery %s (PR %d, %v) is not in the delivery log: lost", d.GUID, d.pr, d.codes)
		}
	}
}

// seedFromEnv returns CATALOGBOT_RESILIENCE_SEED when set (to replay a run), else def.
func seedFromEnv(t *testing.T, def uint64) uint64 {
	t.Helper()
	s := os.Getenv("CATALOGBOT_RESILIENCE_SEED")
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("CATALOGBOT_RESILIENCE_SEED=%q: %v", s, err)
	}
	return v
}
