package ghapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/policy"
	"github.com/google/go-github/v62/github"
)

func TestOpenPullRequests(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	for i := 0; i < 150; i++ {
		pr := githubfake.PR{Author: "alice", HeadSHA: githubfake.MakeSHA(fmt.Sprint(i))}
		if i == 7 {
			pr.HeadRepo, pr.Draft = "mallory/catalog", true
		}
		if _, err := e.fake.AddPullRequest(testOwner, testRepo, pr); err != nil {
			t.Fatal(err)
		}
	}
	// A merged one is not open.
	e.fake.AddPullRequest(testOwner, testRepo, githubfake.PR{Number: 500, Author: "bob", HeadSHA: githubfake.MakeSHA("m")})
	if _, _, err := c.PullRequests.Merge(ctx, testOwner, testRepo, 500, "", &github.PullRequestOptions{SHA: githubfake.MakeSHA("m")}); err != nil {
		t.Fatal(err)
	}
	refs, err := OpenPullRequests(ctx, c, testOwner, testRepo)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 150 {
		t.Fatalf("got %d open PRs, want 150", len(refs))
	}
	var fork PullRequestRef
	for _, r := range refs {
		if r.Number == 8 {
			fork = r
		}
	}
	want := PullRequestRef{Number: 8, HeadSHA: githubfake.MakeSHA("7"), BaseRef: "main", BaseSHA: fork.BaseSHA, Author: "alice", Draft: true, HeadRepoFullName: "mallory/catalog"}
	if fork != want || fork.BaseSHA == "" {
		t.Errorf("PR 8 = %+v, want %+v", fork, want)
	}
}

func TestHasCompletedChecks(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	head := githubfake.MakeSHA("head")
	rep := NewCheckRunReporter(nil)
	check := func(want bool) {
		t.Helper()
		got, err := HasCompletedChecks(ctx, c, testOwner, testRepo, head, checkNames)
		if err != nil || got != want {
			t.Errorf("HasCompletedChecks = %v (%v), want %v", got, err, want)
		}
	}
	check(false)
	ids, err := rep.Start(ctx, c, testOwner, testRepo, head, 1, "j1", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	check(false)
	for i, n := range checkNames {
		if err := rep.Complete(ctx, c, testOwner, testRepo, ids[n], okResult(), ""); err != nil {
			t.Fatal(err)
		}
		if i < len(checkNames)-1 {
			check(false)
		}
	}
	check(true)
	// A re-run in progress means the newest run is not completed.
	if _, err := rep.Start(ctx, c, testOwner, testRepo, head, 1, "j2", checkNames[:1]); err != nil {
		t.Fatal(err)
	}
	check(false)
}

func TestRedeliverFailed(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{})
	ctx := context.Background()
	now := time.Now()
	f := e.fake
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer hook.Close()
	f.SetWebhook(hook.URL, "secret")
	// Too old for GitHub (4 days). Deliveries are added in time order, as
	// GitHub's ids grow with time.
	f.AddDelivery(githubfake.Delivery{Event: "push", StatusCode: 500, DeliveredAt: now.Add(-96 * time.Hour)})
	// Failed, then redelivered successfully: nothing to do.
	a := f.AddDelivery(githubfake.Delivery{Event: "pull_request", StatusCode: 500, DeliveredAt: now.Add(-time.Hour)})
	f.AddDelivery(githubfake.Delivery{GUID: a.GUID, Event: "pull_request", StatusCode: 202, Redelivery: true, DeliveredAt: now.Add(-50 * time.Minute)})
	// Failed twice: redelivered once, the newest attempt.
	b1 := f.AddDelivery(githubfake.Delivery{Event: "check_suite", StatusCode: 503, DeliveredAt: now.Add(-40 * time.Minute)})
	b2 := f.AddDelivery(githubfake.Delivery{GUID: b1.GUID, Event: "check_suite", Status: "timed out", Redelivery: true, DeliveredAt: now.Add(-30 * time.Minute)})
	// Failed too often already.
	e1 := f.AddDelivery(githubfake.Delivery{Event: "push", StatusCode: 500, DeliveredAt: now.Add(-20 * time.Minute)})
	for i := 0; i < maxAttemptsPerDelivery-1; i++ {
		f.AddDelivery(githubfake.Delivery{GUID: e1.GUID, Event: "push", StatusCode: 500, Redelivery: true, DeliveredAt: now.Add(-19 * time.Minute)})
	}
	// Many good deliveries after, so the listing spans pages.
	for i := 0; i < 250; i++ {
		f.AddDelivery(githubfake.Delivery{Event: "pull_request", StatusCode: 202, DeliveredAt: now.Add(-time.Minute)})
	}
	n, err := RedeliverFailed(ctx, e.gh.App(), now.Add(-5*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f.Wait()
	if n != 1 {
		t.Errorf("redelivered %d, want 1", n)
	}
	var again []githubfake.Delivery
	for _, d := range f.Deliveries() {
		if d.Redelivery && d.DeliveredAt.After(now) {
			again = append(again, d)
		}
	}
	if len(again) != 1 || again[0].GUID != b2.GUID {
		t.Errorf("redeliveries = %+v, want one of guid %s", again, b2.GUID)
	}
	if pages := e.metrics.Count("GET /app/hook/deliveries OK"); pages < 3 {
		t.Errorf("listed %d pages of deliveries, want at least 3 (cursor pagination)", pages)
	}
	// The redelivery succeeded: a second sweep has nothing to do.
	n, err = RedeliverFailed(ctx, e.gh.App(), now.Add(-72*time.Hour))
	if err != nil || n != 0 {
		t.Errorf("second sweep redelivered %d (%v), want 0", n, err)
	}
}

func TestTeamResolver(t *testing.T) {
	e := newFakeEnv(t, RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	members := make([]string, 250)
	for i := range members {
		members[i] = fmt.Sprintf("user%d", i)
	}
	e.fake.SetTeam(testOwner, "catalog-admins", members)
	e.fake.SetTeam("elsewhere", "admins", []string{"x"})
	tr := NewTeamResolver(c)
	got, err := tr.TeamMembers(ctx, testOwner, "Catalog-Admins")
	if err != nil || len(got) != 250 || got[249] != "user249" {
		t.Fatalf("TeamMembers = %d members (%v), want 250", len(got), err)
	}
	for _, tc := range []struct{ org, team string }{{testOwner, "ghosts"}, {"elsewhere", "admins"}} {
		m, err := tr.TeamMembers(ctx, tc.org, tc.team)
		if !errors.Is(err, ErrTeamNotFound) || m != nil {
			t.Errorf("TeamMembers(%s/%s) = %v, %v; want ErrTeamNotFound and no members", tc.org, tc.team, m, err)
		}
	}
	// Through the policy: a team member owns, an unresolvable team is Unresolved, never No.
	p := &policy.Policy{Packages: map[string]policy.Package{}}
	pr, _ := policy.ParsePrincipal("@acme/catalog-admins")
	ghost, _ := policy.ParsePrincipal("@acme/ghosts")
	p.Packages["etcd"] = policy.Package{Owners: []policy.Principal{ghost, pr}}
	if d, err := p.IsOwner(ctx, "etcd", "USER7", tr); d != policy.Yes {
		t.Errorf("IsOwner(user7) = %v (%v), want yes", d, err)
	}
	if d, _ := p.IsOwner(ctx, "etcd", "stranger", tr); d != policy.Unresolved {
		t.Errorf("IsOwner(stranger) = %v, want unresolved (a team could not be read)", d)
	}
	// Members are listed once per resolver.
	before := e.metrics.Count("GET /orgs/{org}/teams/{team}/members")
	tr.TeamMembers(ctx, testOwner, "catalog-admins")
	if after := e.metrics.Count("GET /orgs/{org}/teams/{team}/members"); after != before {
		t.Errorf("a second lookup made %d requests, want 0", after-before)
	}
}

func okResult() checks.Result {
	return checks.Result{Conclusion: checks.Success, Summary: "ok"}
}

// checkNames are the names of catalogbot's check runs on a pull request.
var checkNames = []string{"catalogbot/ownership", "catalogbot/validate", "catalogbot/crd-safety", "catalogbot/images"}
