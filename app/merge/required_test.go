package merge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// The required checks of a branch are read once per requiredTTL, per branch; a failed read is not kept.
func TestRequiredCacheReadsOncePerTTL(t *testing.T) {
	reads := map[string]int{}
	fail := false
	c := newRequiredCache()
	c.read = func(_ context.Context, _ *github.Client, owner, repo, branch string) ([]string, string, error) {
		if fail {
			return nil, "", errors.New("GitHub is away")
		}
		reads[branch]++
		return []string{"ci/" + branch}, "", nil
	}
	ctx := context.Background()
	t0 := time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
	get := func(branch string, at time.Time) []string {
		t.Helper()
		req, _, err := c.get(ctx, nil, "Acme", "catalog", branch, at)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	if r := get("main", t0); len(r) != 1 || r[0] != "ci/main" {
		t.Fatalf("required = %v", r)
	}
	get("main", t0.Add(requiredTTL-time.Second))
	if _, _, err := c.get(ctx, nil, "acme", "CATALOG", "main", t0.Add(time.Second)); err != nil || reads["main"] != 1 {
		t.Fatalf("within the TTL (owner and name in any case): %d reads, %v; want 1", reads["main"], err)
	}
	get("release", t0)
	if reads["release"] != 1 {
		t.Errorf("another branch: %d reads, want 1", reads["release"])
	}
	get("main", t0.Add(requiredTTL))
	if reads["main"] != 2 {
		t.Errorf("after the TTL: %d reads, want 2", reads["main"])
	}
	fail = true
	if _, _, err := c.get(ctx, nil, "acme", "catalog", "next", t0); err == nil {
		t.Fatal("a failed read answered without an error")
	}
	fail = false
	get("next", t0)
	if reads["next"] != 1 {
		t.Errorf("after a failed read: %d reads, want 1", reads["next"])
	}
	// A clock that went back does not make an entry from the future count.
	get("main", t0)
	if reads["main"] != 3 {
		t.Errorf("an entry read later than now: %d reads, want 3", reads["main"])
	}
}
