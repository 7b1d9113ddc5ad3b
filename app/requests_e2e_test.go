package app

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// requestCounts counts requests by route, most frequent first, as "N route" lines.
func requestCounts(rs []githubfake.Request) string {
	by := map[string]int{}
	for _, r := range rs {
		by[r.Route]++
	}
	var routes []string
	for r := range by {
		routes = append(routes, r)
	}
	sort.Slice(routes, func(i, j int) bool {
		return by[routes[i]] > by[routes[j]] || by[routes[i]] == by[routes[j]] && routes[i] < routes[j]
	})
	var b strings.Builder
	for _, r := range routes {
		fmt.Fprintf(&b, "  %2d %s\n", by[r], r)
	}
	return b.String()
}

// What one pull request costs in GitHub requests, as the App meets it: the owner's valid pull request is
// checked (two check runs here: ownership, and validate showing validation and immutability), evaluated and
// merged, and the push of its merge is compared with the other open pull requests (none). The check's
// requests are those up to its last check run completed; the merge's those after it, up to the push; the
// base move's those after the push. The bounds are today's counts: a change that spends more must say so here.
func TestRequestsPerCheckAndMerge(t *testing.T) {
	e := startOwnerE2E(t)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	merges := e.waitMerged(t, 30*time.Second)
	if len(merges) != 1 {
		t.Fatalf("merges = %+v, want the owner's pull request merged", merges)
	}
	e.waitIdle(t)
	time.Sleep(200 * time.Millisecond)
	e.waitIdle(t)
	beforePush := len(e.fake.Requests())
	e.moveMainTo(t, merges[0].MergeSHA)
	e.waitIdle(t)
	rs := e.fake.Requests()
	lastRun := -1
	for i, r := range rs[:beforePush] {
		if r.Route == "PATCH /repos/{owner}/{repo}/check-runs/{id}" {
			lastRun = i
		}
	}
	if lastRun < 0 {
		t.Fatal("no check run was completed")
	}
	check, merge, push := rs[:lastRun+1], rs[lastRun+1:beforePush], rs[beforePush:]
	t.Logf("GitHub requests: check %d, merge %d, base move %d\ncheck:\n%smerge:\n%sbase move:\n%s",
		len(check), len(merge), len(push), requestCounts(check), requestCounts(merge), requestCounts(push))
	if len(check) > 9 || len(merge) > 11 || len(push) > 1 {
		t.Errorf("GitHub requests: check %d (at most 9), merge %d (at most 11), base move %d (at most 1)", len(check), len(merge), len(push))
	}
}
