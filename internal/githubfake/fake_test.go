package githubfake_test

import (
	"context"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"
)

const (
	appID  = 4242
	instID = 77
	owner  = "acme"
	repoNm = "catalog"
)

// appKey is generated once: RSA key generation is the slow part of these tests.
var appKey = sync.OnceValues(func() (*rsa.PrivateKey, error) {
	k, _, err := githubfake.GenerateAppKey()
	return k, err
})

type env struct {
	fake *githubfake.Fake
	srv  *httptest.Server
	key  *rsa.PrivateKey
	app  *github.Client // JWT
	inst *github.Client // installation token
	now  *clock
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newEnv(t *testing.T, opts ...func(*githubfake.Options)) *env {
	t.Helper()
	key, err := appKey()
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Now()}
	o := githubfake.Options{AppID: appID, PublicKey: &key.PublicKey, Now: clk.Now}
	for _, fn := range opts {
		fn(&o)
	}
	f := githubfake.New(o)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.AddInstallation(instID, owner)
	if err := f.AddRepo(githubfake.Repo{Owner: owner, Name: repoNm, Installation: instID}); err != nil {
		t.Fatal(err)
	}
	api := githubfake.APIURL(srv.URL)
	atr := ghinstallation.NewAppsTransportFromPrivateKey(http.DefaultTransport, appID, key)
	atr.BaseURL = strings.TrimSuffix(api, "/")
	appClient, err := github.NewClient(&http.Client{Transport: atr}).WithEnterpriseURLs(api, api)
	if err != nil {
		t.Fatal(err)
	}
	itr := ghinstallation.NewFromAppsTransport(atr, instID)
	itr.BaseURL = atr.BaseURL
	instClient, err := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(api, api)
	if err != nil {
		t.Fatal(err)
	}
	return &env{fake: f, srv: srv, key: key, app: appClient, inst: instClient, now: clk}
}

func statusOf(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	var rl *github.RateLimitError
	if errors.As(err, &rl) && rl.Response != nil {
		return rl.Response.StatusCode
	}
	var ae *github.AcceptedError
	if errors.As(err, &ae) {
		return http.StatusAccepted
	}
	if err == nil {
		return 0
	}
	return -1
}

func sha(s string) string { return githubfake.MakeSHA(s) }

func signJWT(t *testing.T, key *rsa.PrivateKey, iss string, iat, exp time.Time) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: iss, IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp),
	}).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func rawGet(t *testing.T, url, auth string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, _, err := e.app.Apps.Get(ctx, ""); err != nil {
		t.Fatalf("GET /app with a good JWT: %v", err)
	}
	other, _, err := githubfake.GenerateAppKey()
	if err != nil {
		t.Fatal(err)
	}
	now := e.now.Now()
	api := githubfake.APIURL(e.srv.URL)
	tests := []struct {
		name string
		url  string
		auth string
		want int
	}{
		{"no credentials", api + "app", "", 401},
		{"good JWT", api + "app", "Bearer " + signJWT(t, e.key, strconv.Itoa(appID), now.Add(-30*time.Second), now.Add(5*time.Minute)), 200},
		{"JWT of another key", api + "app", "Bearer " + signJWT(t, other, strconv.Itoa(appID), now, now.Add(5*time.Minute)), 401},
		{"JWT of another app", api + "app", "Bearer " + signJWT(t, e.key, "1", now, now.Add(5*time.Minute)), 401},
		{"JWT expiring in 11 minutes", api + "app", "Bearer " + signJWT(t, e.key, strconv.Itoa(appID), now, now.Add(11*time.Minute+time.Second)), 401},
		{"expired JWT", api + "app", "Bearer " + signJWT(t, e.key, strconv.Itoa(appID), now.Add(-10*time.Minute), now.Add(-time.Second)), 401},
		{"JWT on an installation endpoint", api + "repos/acme/catalog", "Bearer " + signJWT(t, e.key, strconv.Itoa(appID), now, now.Add(5*time.Minute)), 401},
		{"made-up token", api + "repos/acme/catalog", "token ghs_madeup", 401},
		{"unknown route", api + "nothing/here", "token x", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rawGet(t, tt.url, tt.auth); got != tt.want {
				t.Errorf("GET %s = %d, want %d", tt.url, got, tt.want)
			}
		})
	}

	// An issued token works, and stops working after an hour.
	tok, _, err := e.app.Apps.CreateInstallationToken(ctx, instID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := tok.GetExpiresAt().Sub(now); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("token lifetime = %v, want 1h", d)
	}
	if got := rawGet(t, api+"repos/acme/catalog", "token "+tok.GetToken()); got != 200 {
		t.Errorf("GET repo with the token = %d, want 200", got)
	}
	if got := rawGet(t, api+"repos/other/repo", "token "+tok.GetToken()); got != 404 {
		t.Errorf("GET a repository the installation cannot see = %d, want 404", got)
	}
	if _, _, err := e.app.Apps.CreateInstallationToken(ctx, 999, nil); statusOf(err) != 404 {
		t.Errorf("token for an unknown installation: %v, want 404", err)
	}
	e.now.Advance(time.Hour + time.Second)
	if got := rawGet(t, api+"repos/acme/catalog", "token "+tok.GetToken()); got != 401 {
		t.Errorf("GET repo with an expired token = %d, want 401", got)
	}
}

func annotations(n int, path string) []*github.CheckRunAnnotation {
	out := make([]*github.CheckRunAnnotation, n)
	for i := range out {
		out[i] = &github.CheckRunAnnotation{Path: github.String(path), StartLine: github.Int(i + 1), EndLine: github.Int(i + 1), AnnotationLevel: github.String("failure"), Message: github.String("m" + strconv.Itoa(i))}
	}
	return out
}

func TestCheckRunLimits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	head := sha("head")
	create := func(o github.CreateCheckRunOptions) (*github.CheckRun, error) {
		if o.Name == "" {
			o.Name = "catalogbot/validate"
		}
		if o.HeadSHA == "" {
			o.HeadSHA = head
		}
		cr, _, err := e.inst.Checks.CreateCheckRun(ctx, owner, repoNm, o)
		return cr, err
	}
	out := func(summary string, ann []*github.CheckRunAnnotation) *github.CheckRunOutput {
		return &github.CheckRunOutput{Title: github.String("t"), Summary: github.String(summary), Annotations: ann}
	}
	tests := []struct {
		name string
		opts github.CreateCheckRunOptions
		want int // 0: accepted
	}{
		{"50 annotations", github.CreateCheckRunOptions{Output: out("s", annotations(50, "a.yaml"))}, 0},
		{"51 annotations", github.CreateCheckRunOptions{Output: out("s", annotations(51, "a.yaml"))}, 422},
		{"summary of 65535 characters", github.CreateCheckRunOptions{Output: out(strings.Repeat("é", 65535), nil)}, 0},
		{"summary of 65536 characters", github.CreateCheckRunOptions{Output: out(strings.Repeat("a", 65536), nil)}, 422},
		{"output without summary", github.CreateCheckRunOptions{Output: &github.CheckRunOutput{Title: github.String("t")}}, 422},
		{"completed without conclusion", github.CreateCheckRunOptions{Status: github.String("completed")}, 422},
		{"unknown status", github.CreateCheckRunOptions{Status: github.String("done")}, 422},
		{"bad head sha", github.CreateCheckRunOptions{HeadSHA: "main"}, 422},
		{"columns on two lines", github.CreateCheckRunOptions{Output: out("s", []*github.CheckRunAnnotation{{Path: github.String("a"), StartLine: github.Int(1), EndLine: github.Int(2), StartColumn: github.Int(1), EndColumn: github.Int(3), AnnotationLevel: github.String("warning"), Message: github.String("m")}})}, 422},
		{"columns on one line", github.CreateCheckRunOptions{Output: out("s", []*github.CheckRunAnnotation{{Path: github.String("a"), StartLine: github.Int(2), EndLine: github.Int(2), StartColumn: github.Int(1), EndColumn: github.Int(3), AnnotationLevel: github.String("warning"), Message: github.String("m")}})}, 0},
		{"annotation level error", github.CreateCheckRunOptions{Output: out("s", []*github.CheckRunAnnotation{{Path: github.String("a"), StartLine: github.Int(1), EndLine: github.Int(1), AnnotationLevel: github.String("error"), Message: github.String("m")}})}, 422},
		{"action label of 21", github.CreateCheckRunOptions{Actions: []*github.CheckRunAction{{Label: strings.Repeat("l", 21), Description: "d", Identifier: "i"}}}, 422},
		{"action identifier of 21", github.CreateCheckRunOptions{Actions: []*github.CheckRunAction{{Label: "l", Description: "d", Identifier: strings.Repeat("i", 21)}}}, 422},
		{"action description of 41", github.CreateCheckRunOptions{Actions: []*github.CheckRunAction{{Label: "l", Description: strings.Repeat("d", 41), Identifier: "i"}}}, 422},
		{"action at the limits", github.CreateCheckRunOptions{Actions: []*github.CheckRunAction{{Label: strings.Repeat("l", 20), Description: strings.Repeat("d", 40), Identifier: strings.Repeat("i", 20)}}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := create(tt.opts)
			if got := statusOf(err); got != tt.want {
				t.Errorf("create: status %d (%v), want %d", got, err, tt.want)
			}
		})
	}
}

func TestCheckRunAnnotationsAccumulate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	head := sha("head")
	cr, _, err := e.inst.Checks.CreateCheckRun(ctx, owner, repoNm, github.CreateCheckRunOptions{
		Name: "catalogbot/validate", HeadSHA: head, Status: github.String("in_progress"), ExternalID: github.String("pr:7"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		o := github.UpdateCheckRunOptions{Name: "catalogbot/validate", Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s"), Annotations: annotations(40, "f"+strconv.Itoa(i))}}
		if i == 0 {
			o.Conclusion = github.String("failure")
		}
		got, _, err := e.inst.Checks.UpdateCheckRun(ctx, owner, repoNm, cr.GetID(), o)
		if err != nil {
			t.Fatal(err)
		}
		if n := got.GetOutput().GetAnnotationsCount(); n != 40*(i+1) {
			t.Errorf("after update %d: annotations_count = %d, want %d", i, n, 40*(i+1))
		}
	}
	runs := e.fake.CheckRuns(owner, repoNm, head)
	if len(runs) != 1 {
		t.Fatalf("got %d runs, want 1", len(runs))
	}
	r := runs[0]
	if r.Status != "completed" || r.Conclusion != "failure" || r.ExternalID != "pr:7" || len(r.Annotations) != 120 {
		t.Errorf("run = status %q conclusion %q external_id %q, %d annotations; want completed failure pr:7 120", r.Status, r.Conclusion, r.ExternalID, len(r.Annotations))
	}
	// Annotations list is paginated.
	all, resp, err := e.inst.Checks.ListCheckRunAnnotations(ctx, owner, repoNm, cr.GetID(), &github.ListOptions{PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 100 || resp.NextPage != 2 {
		t.Errorf("annotations page 1: %d items, next %d; want 100, 2", len(all), resp.NextPage)
	}
	if _, _, err := e.inst.Checks.UpdateCheckRun(ctx, owner, repoNm, 1, github.UpdateCheckRunOptions{Name: "x"}); statusOf(err) != 404 {
		t.Errorf("update of an unknown run: %v, want 404", err)
	}
}

func TestListCheckRunsForRef(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	head := sha("head")
	fork := sha("fork-head")
	e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "alice", HeadSHA: head})
	e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "mallory", HeadSHA: fork, HeadRepo: "mallory/catalog"})
	for _, s := range []string{head, head, fork} {
		if _, _, err := e.inst.Checks.CreateCheckRun(ctx, owner, repoNm, github.CreateCheckRunOptions{Name: "catalogbot/validate", HeadSHA: s}); err != nil {
			t.Fatal(err)
		}
	}
	e.fake.AddCheckRun(owner, repoNm, githubfake.CheckRun{AppID: 15368, Name: "ci", HeadSHA: head, Conclusion: "success"})

	latest, _, err := e.inst.Checks.ListCheckRunsForRef(ctx, owner, repoNm, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	if latest.GetTotal() != 2 {
		t.Errorf("filter=latest: %d runs, want 2 (one per name and app)", latest.GetTotal())
	}
	all, _, err := e.inst.Checks.ListCheckRunsForRef(ctx, owner, repoNm, head, &github.ListCheckRunsOptions{Filter: github.String("all"), CheckName: github.String("catalogbot/validate")})
	if err != nil {
		t.Fatal(err)
	}
	if all.GetTotal() != 2 {
		t.Errorf("filter=all, check_name: %d runs, want 2", all.GetTotal())
	}
	if prs := all.CheckRuns[0].PullRequests; len(prs) != 1 || prs[0].GetNumber() != 1 {
		t.Errorf("same-repo run pull_requests = %v, want PR 1", prs)
	}
	forkRuns, _, err := e.inst.Checks.ListCheckRunsForRef(ctx, owner, repoNm, fork, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prs := forkRuns.CheckRuns[0].PullRequests; len(prs) != 0 {
		t.Errorf("fork run pull_requests = %v, want none", prs)
	}
	byBranch, _, err := e.inst.Checks.ListCheckRunsForRef(ctx, owner, repoNm, "main", nil)
	if err != nil || byBranch.GetTotal() != 0 {
		t.Errorf("list for branch main: %v, %d runs; want none", err, byBranch.GetTotal())
	}
}

func TestPullPagination(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i := 0; i < 75; i++ {
		if _, err := e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "alice", HeadSHA: sha(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "bob", HeadSHA: sha("closed"), State: "open"})
	var got []int
	opt := &github.PullRequestListOptions{ListOptions: github.ListOptions{PerPage: 30}}
	pages := 0
	for {
		prs, resp, err := e.inst.PullRequests.List(ctx, owner, repoNm, opt)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, p := range prs {
			got = append(got, p.GetNumber())
		}
		if pages == 1 && resp.LastPage != 3 {
			t.Errorf("first page: last page %d, want 3", resp.LastPage)
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if len(got) != 76 || pages != 3 {
		t.Errorf("listed %d PRs in %d pages, want 76 in 3", len(got), pages)
	}
	if got[0] != 76 {
		t.Errorf("first listed PR = %d, want 76 (newest first)", got[0])
	}
	prs, _, err := e.inst.PullRequests.List(ctx, owner, repoNm, &github.PullRequestListOptions{ListOptions: github.ListOptions{PerPage: 500}})
	if err != nil || len(prs) != 76 {
		t.Errorf("per_page=500: %d PRs (%v), want 76 (capped at 100 per page)", len(prs), err)
	}
	if _, _, err := e.inst.PullRequests.Get(ctx, owner, repoNm, 999); statusOf(err) != 404 {
		t.Errorf("get unknown PR: %v, want 404", err)
	}
}

func TestMerge(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	head := sha("head")
	n, _ := e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "alice", HeadSHA: head})
	merge := func(sha string) error {
		_, _, err := e.inst.PullRequests.Merge(ctx, owner, repoNm, n, "", &github.PullRequestOptions{SHA: sha, MergeMethod: "squash"})
		return err
	}
	if err := merge(sha("older")); statusOf(err) != 409 || !strings.Contains(err.Error(), "Head branch was modified") {
		t.Errorf("merge with a stale sha: %v, want 409 Head branch was modified", err)
	}
	e.fake.SetConflicts(owner, repoNm, n, true)
	if err := merge(head); statusOf(err) != 405 {
		t.Errorf("merge with conflicts: %v, want 405", err)
	}
	e.fake.SetConflicts(owner, repoNm, n, false)
	e.fake.SetProtection(owner, repoNm, "main", &githubfake.Protection{RequiredContexts: []string{"catalogbot/validate"}, RequiredChecks: []githubfake.RequiredCheck{{Context: "ci/e2e"}}})
	if err := merge(head); statusOf(err) != 405 || !strings.Contains(err.Error(), `"catalogbot/validate" is expected`) {
		t.Errorf("merge with a required check missing: %v, want 405", err)
	}
	pr, _, _ := e.inst.PullRequests.Get(ctx, owner, repoNm, n)
	if pr.GetMergeableState() != "blocked" {
		t.Errorf("mergeable_state = %q, want blocked", pr.GetMergeableState())
	}
	e.inst.Checks.CreateCheckRun(ctx, owner, repoNm, github.CreateCheckRunOptions{Name: "catalogbot/validate", HeadSHA: head, Conclusion: github.String("success")})
	e.fake.SetStatus(owner, repoNm, head, githubfake.Status{Context: "ci/e2e", State: "failure"})
	if err := merge(head); statusOf(err) != 405 || !strings.Contains(err.Error(), `"ci/e2e" is failing`) {
		t.Errorf("merge with a failing required status: %v, want 405", err)
	}
	e.fake.SetStatus(owner, repoNm, head, githubfake.Status{Context: "ci/e2e", State: "success"})
	res, _, err := e.inst.PullRequests.Merge(ctx, owner, repoNm, n, "", &github.PullRequestOptions{SHA: head, MergeMethod: "squash"})
	if err != nil || !res.GetMerged() {
		t.Fatalf("merge: %v, %v; want merged", res, err)
	}
	pr, _, _ = e.inst.PullRequests.Get(ctx, owner, repoNm, n)
	if !pr.GetMerged() || pr.GetState() != "closed" || pr.GetMergeCommitSHA() != res.GetSHA() {
		t.Errorf("after merge: merged %v state %q merge sha %q; want true closed %q", pr.GetMerged(), pr.GetState(), pr.GetMergeCommitSHA(), res.GetSHA())
	}
	if b, _ := e.fake.BranchSHA(owner, repoNm, "main"); b != res.GetSHA() {
		t.Errorf("main = %s, want the merge commit %s", b, res.GetSHA())
	}
	if err := merge(head); statusOf(err) != 405 {
		t.Errorf("merging again: %v, want 405", err)
	}
	ms := e.fake.Merges()
	if len(ms) != 1 || ms[0].RequestSHA != head || ms[0].Method != "squash" {
		t.Errorf("Merges() = %+v, want one squash with the checked sha", ms)
	}
}

func TestMergeApprovalsAndDraft(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	head := sha("h1")
	n, _ := e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "alice", HeadSHA: head, Draft: true})
	if _, _, err := e.inst.PullRequests.Merge(ctx, owner, repoNm, n, "", &github.PullRequestOptions{SHA: head}); statusOf(err) != 405 {
		t.Errorf("merge a draft: %v, want 405", err)
	}
	e.fake.SetDraft(owner, repoNm, n, false)
	e.fake.SetProtection(owner, repoNm, "main", &githubfake.Protection{RequiredApprovals: 1, DismissStaleReviews: true})
	e.fake.AddReview(owner, repoNm, n, githubfake.Review{User: "bob", State: "approved"})
	e.fake.PushPullRequest(owner, repoNm, n, sha("h2"))
	if _, _, err := e.inst.PullRequests.Merge(ctx, owner, repoNm, n, "", &github.PullRequestOptions{SHA: sha("h2")}); statusOf(err) != 405 {
		t.Errorf("merge with only a stale approval: %v, want 405", err)
	}
	rvs, _, err := e.inst.PullRequests.ListReviews(ctx, owner, repoNm, n, nil)
	if err != nil || len(rvs) != 1 || rvs[0].GetCommitID() != head || rvs[0].GetState() != "APPROVED" {
		t.Errorf("reviews = %v (%v), want one APPROVED on %s", rvs, err, head)
	}
	e.fake.AddReview(owner, repoNm, n, githubfake.Review{User: "bob", State: "APPROVED"})
	if _, _, err := e.inst.PullRequests.Merge(ctx, owner, repoNm, n, "", &github.PullRequestOptions{SHA: sha("h2")}); err != nil {
		t.Errorf("merge with a fresh approval: %v", err)
	}
}

// Review requests as GitHub answers them: 422 for the author or a non-collaborator (the whole request), 201
// with the pull request otherwise; a submitted review fulfils the request.
func TestRequestReviewers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	n, _ := e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "alice", HeadSHA: sha("h1")})
	e.fake.SetCollaborator(owner, repoNm, "carol", "write")
	e.fake.SetCollaborator(owner, repoNm, "dave", "read")
	for _, bad := range [][]string{{"alice"}, {"carol", "mallory"}, {}} {
		if _, _, err := e.inst.PullRequests.RequestReviewers(ctx, owner, repoNm, n, github.ReviewersRequest{Reviewers: bad}); statusOf(err) != 422 {
			t.Errorf("request %v: %v, want 422", bad, err)
		}
	}
	if got, _ := e.fake.RequestedReviewers(owner, repoNm, n); len(got) != 0 {
		t.Fatalf("a refused request left reviewers %v", got)
	}
	pr, _, err := e.inst.PullRequests.RequestReviewers(ctx, owner, repoNm, n, github.ReviewersRequest{Reviewers: []string{"carol", "dave"}})
	if err != nil || len(pr.RequestedReviewers) != 2 || pr.RequestedReviewers[0].GetLogin() != "carol" {
		t.Fatalf("request: %v, %v", pr.RequestedReviewers, err)
	}
	e.fake.AddReview(owner, repoNm, n, githubfake.Review{User: "Carol", State: "APPROVED"})
	rs, _, err := e.inst.PullRequests.ListReviewers(ctx, owner, repoNm, n, nil)
	if err != nil || len(rs.Users) != 1 || rs.Users[0].GetLogin() != "dave" {
		t.Errorf("requested after carol's review = %v (%v), want dave", rs, err)
	}
}

func TestCommentsAndLabels(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	n, _ := e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "alice", HeadSHA: sha("h")})
	c, _, err := e.inst.Issues.CreateComment(ctx, owner, repoNm, n, &github.IssueComment{Body: github.String("first")})
	if err != nil {
		t.Fatal(err)
	}
	if c.GetUser().GetLogin() != "catalogbot[bot]" {
		t.Errorf("comment author = %q, want catalogbot[bot]", c.GetUser().GetLogin())
	}
	if _, _, err := e.inst.Issues.EditComment(ctx, owner, repoNm, c.GetID(), &github.IssueComment{Body: github.String("edited")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.inst.Issues.CreateComment(ctx, owner, repoNm, n, &github.IssueComment{Body: github.String(strings.Repeat("x", 65537))}); statusOf(err) != 422 {
		t.Errorf("too long comment: %v, want 422", err)
	}
	human, _ := e.fake.AddComment(owner, repoNm, n, "alice", "please merge")
	if _, _, err := e.inst.Issues.EditComment(ctx, owner, repoNm, human, &github.IssueComment{Body: github.String("x")}); statusOf(err) != 403 {
		t.Errorf("editing a human's comment: %v, want 403", err)
	}
	cs, _, err := e.inst.Issues.ListComments(ctx, owner, repoNm, n, nil)
	if err != nil || len(cs) != 2 || cs[0].GetBody() != "edited" {
		t.Errorf("comments = %v (%v), want [edited, please merge]", cs, err)
	}
	if _, err := e.inst.Issues.DeleteComment(ctx, owner, repoNm, c.GetID()); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.Comments(owner, repoNm, n); len(got) != 1 {
		t.Errorf("after delete: %d comments, want 1", len(got))
	}

	if _, _, err := e.inst.Issues.AddLabelsToIssue(ctx, owner, repoNm, n, []string{"hold", "lgtm", "hold"}); err != nil {
		t.Fatal(err)
	}
	if pr, _ := e.fake.PullRequest(owner, repoNm, n); len(pr.Labels) != 2 {
		t.Errorf("labels = %v, want hold and lgtm", pr.Labels)
	}
	if _, err := e.inst.Issues.RemoveLabelForIssue(ctx, owner, repoNm, n, "hold"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.inst.Issues.RemoveLabelForIssue(ctx, owner, repoNm, n, "hold"); statusOf(err) != 404 {
		t.Errorf("removing a missing label: %v, want 404", err)
	}
}

func TestTeamsAndProtection(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	members := make([]string, 45)
	for i := range members {
		members[i] = "user" + strconv.Itoa(i)
	}
	e.fake.SetTeam(owner, "catalog-admins", members)
	e.fake.SetTeam("elsewhere", "admins", []string{"x"})
	got, resp, err := e.inst.Teams.ListTeamMembersBySlug(ctx, owner, "catalog-admins", &github.TeamListTeamMembersOptions{ListOptions: github.ListOptions{PerPage: 20}})
	if err != nil || len(got) != 20 || resp.NextPage != 2 {
		t.Errorf("team page 1: %d members, next %d (%v); want 20, 2", len(got), resp.NextPage, err)
	}
	for _, tc := range []struct{ org, slug string }{{owner, "nobody"}, {"elsewhere", "admins"}} {
		if _, _, err := e.inst.Teams.ListTeamMembersBySlug(ctx, tc.org, tc.slug, nil); statusOf(err) != 404 {
			t.Errorf("team %s/%s: %v, want 404", tc.org, tc.slug, err)
		}
	}
	if _, _, err := e.inst.Repositories.GetRequiredStatusChecks(ctx, owner, repoNm, "main"); !errors.Is(err, github.ErrBranchNotProtected) {
		t.Errorf("required checks of an unprotected branch: %v, want 404 Branch not protected", err)
	}
	e.fake.SetProtection(owner, repoNm, "main", &githubfake.Protection{RequiredChecks: []githubfake.RequiredCheck{{Context: "ci", AppID: 15368}}, Strict: true})
	rc, _, err := e.inst.Repositories.GetRequiredStatusChecks(ctx, owner, repoNm, "main")
	if err != nil || !rc.Strict || len(*rc.Checks) != 1 || (*rc.Checks)[0].GetAppID() != 15368 {
		t.Errorf("required checks = %+v (%v), want strict with ci from app 15368", rc, err)
	}
	e.fake.DenyPermission(instID, "administration")
	if _, _, err := e.inst.Repositories.GetRequiredStatusChecks(ctx, owner, repoNm, "main"); statusOf(err) != 403 {
		t.Errorf("required checks without administration permission: %v, want 403", err)
	}
	e.fake.DenyPermission(instID, "members")
	if _, _, err := e.inst.Teams.ListTeamMembersBySlug(ctx, owner, "catalog-admins", nil); statusOf(err) != 403 {
		t.Errorf("team members without members permission: %v, want 403", err)
	}
	e.fake.SetRulesetChecks(owner, repoNm, "main", []githubfake.RequiredCheck{{Context: "catalogbot/images"}}, false)
	rules, _, err := e.inst.Repositories.GetRulesForBranch(ctx, owner, repoNm, "main")
	if err != nil || len(rules) != 1 || rules[0].Type != "required_status_checks" {
		t.Errorf("rules = %v (%v), want one required_status_checks rule", rules, err)
	}
	e.fake.SetStatus(owner, repoNm, sha("h"), githubfake.Status{Context: "a", State: "pending"})
	e.fake.SetStatus(owner, repoNm, sha("h"), githubfake.Status{Context: "a", State: "success"})
	cs, _, err := e.inst.Repositories.GetCombinedStatus(ctx, owner, repoNm, sha("h"), nil)
	if err != nil || cs.GetState() != "success" || cs.GetTotalCount() != 1 {
		t.Errorf("combined status = %v (%v), want success with 1 context", cs, err)
	}
}

func TestRateLimitAndConditionalRequests(t *testing.T) {
	e := newEnv(t, func(o *githubfake.Options) { o.RateLimit = 5 })
	ctx := context.Background()
	// The token request is charged to the App's budget, not the installation's.
	_, resp, err := e.inst.Repositories.Get(ctx, owner, repoNm)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Rate.Limit != 5 || resp.Rate.Remaining != 4 {
		t.Errorf("rate after one call = %d/%d, want 4/5", resp.Rate.Remaining, resp.Rate.Limit)
	}
	etag := resp.Header.Get("ETag")
	// A conditional request that matches is 304 and free.
	req, _ := e.inst.NewRequest(http.MethodGet, "repos/acme/catalog", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = e.inst.Do(ctx, req, nil)
	if resp == nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: %v %v, want 304", resp, err)
	}
	if resp.Rate.Remaining != 4 {
		t.Errorf("remaining after a 304 = %d, want 4", resp.Rate.Remaining)
	}
	for i := 0; i < 4; i++ {
		if _, _, err := e.inst.Repositories.Get(ctx, owner, repoNm); err != nil {
			t.Fatal(err)
		}
	}
	req, _ = http.NewRequest(http.MethodGet, githubfake.APIURL(e.srv.URL)+"repos/acme/catalog", nil)
	tok, _, _ := e.app.Apps.CreateInstallationToken(ctx, instID, nil)
	req.Header.Set("Authorization", "token "+tok.GetToken())
	raw, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw.Body.Close()
	if raw.StatusCode != 403 || raw.Header.Get("X-RateLimit-Remaining") != "0" || raw.Header.Get("X-RateLimit-Reset") == "" {
		t.Errorf("exhausted: %d remaining %q reset %q; want 403, 0 and a reset", raw.StatusCode, raw.Header.Get("X-RateLimit-Remaining"), raw.Header.Get("X-RateLimit-Reset"))
	}
	e.now.Advance(time.Hour)
	// The client's JWTs follow the real clock: sign one on the fake's clock.
	now := e.now.Now()
	treq, _ := http.NewRequest(http.MethodPost, githubfake.APIURL(e.srv.URL)+"app/installations/77/access_tokens", nil)
	treq.Header.Set("Authorization", "Bearer "+signJWT(t, e.key, strconv.Itoa(appID), now.Add(-time.Minute), now.Add(5*time.Minute)))
	tresp, err := http.DefaultClient.Do(treq)
	if err != nil {
		t.Fatal(err)
	}
	var fresh github.InstallationToken
	json.NewDecoder(tresp.Body).Decode(&fresh)
	tresp.Body.Close()
	req.Header.Set("Authorization", "token "+fresh.GetToken())
	raw, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw.Body.Close()
	if raw.StatusCode != 200 {
		t.Errorf("after the reset: %d, want 200", raw.StatusCode)
	}
}

func TestFaults(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.fake.InjectFault("GET /repos/*/*/pulls", http.StatusBadGateway, 2, nil)
	for i, want := range []int{502, 502, 0} {
		_, _, err := e.inst.PullRequests.List(ctx, owner, repoNm, nil)
		if got := statusOf(err); got != want {
			t.Errorf("call %d: %d (%v), want %d", i, got, err, want)
		}
	}
	e.fake.InjectFault("/repos/acme/catalog", http.StatusTooManyRequests, 1, nil)
	_, resp, err := e.inst.Repositories.Get(ctx, owner, repoNm)
	if statusOf(err) != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("429 fault: %v, Retry-After %q; want 429 with Retry-After 1", err, resp.Header.Get("Retry-After"))
	}
	e.fake.InjectFault("/repos/acme/catalog", http.StatusForbidden, 1, nil)
	_, _, err = e.inst.Repositories.Get(ctx, owner, repoNm)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) {
		t.Errorf("403 fault: %T %v, want a *github.RateLimitError", err, err)
	}
}

func TestDeliveries(t *testing.T) {
	type got struct {
		guid, event string
		sigOK       bool
	}
	const secret = "s3cret"
	var mu sync.Mutex
	var received []got
	fail := true
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		mu.Lock()
		defer mu.Unlock()
		received = append(received, got{r.Header.Get("X-GitHub-Delivery"), r.Header.Get("X-GitHub-Event"), r.Header.Get("X-Hub-Signature-256") == "sha256="+hex.EncodeToString(m.Sum(nil))})
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer hook.Close()
	e := newEnv(t, func(o *githubfake.Options) { o.WebhookURL, o.WebhookSecret = hook.URL, secret })
	ctx := context.Background()
	d, err := e.fake.Deliver(ctx, "pull_request", map[string]any{"action": "opened", "installation": map[string]any{"id": instID}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != "Invalid HTTP Response: 503" || d.Action != "opened" || d.InstallationID != instID {
		t.Errorf("delivery = %+v, want a 503 failure of pull_request.opened for installation %d", d, instID)
	}
	for i := 0; i < 4; i++ {
		e.fake.AddDelivery(githubfake.Delivery{Event: "push", StatusCode: 200})
	}
	var all []*github.HookDelivery
	opt := &github.ListCursorOptions{PerPage: 2}
	for pages := 0; pages < 10; pages++ {
		ds, resp, err := e.app.Apps.ListHookDeliveries(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ds...)
		if resp.Cursor == "" {
			break
		}
		opt.Cursor = resp.Cursor
	}
	if len(all) != 5 || all[4].GetGUID() != d.GUID {
		t.Fatalf("listed %d deliveries, want 5 with the failed one last (oldest)", len(all))
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	_, _, err = e.app.Apps.RedeliverHookDelivery(ctx, d.ID)
	if statusOf(err) != http.StatusAccepted {
		t.Fatalf("redeliver: %v, want 202 (*github.AcceptedError)", err)
	}
	e.fake.Wait()
	ds := e.fake.Deliveries()
	last := ds[len(ds)-1]
	if !last.Redelivery || last.GUID != d.GUID || last.Status != "OK" {
		t.Errorf("redelivery = %+v, want OK with guid %s", last, d.GUID)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(received) != 2 || received[1].guid != d.GUID || !received[1].sigOK || received[1].event != "pull_request" {
		t.Errorf("hook received %+v, want the delivery twice with the same GUID and a valid signature", received)
	}
	if _, _, err := e.app.Apps.RedeliverHookDelivery(ctx, 1); statusOf(err) != 404 {
		t.Errorf("redeliver unknown: %v, want 404", err)
	}
}

func TestEventPayloadsParse(t *testing.T) {
	e := newEnv(t)
	head := sha("head")
	n, _ := e.fake.AddPullRequest(owner, repoNm, githubfake.PR{Author: "alice", HeadSHA: head, HeadRepo: "alice/catalog"})
	rid, _ := e.fake.AddReview(owner, repoNm, n, githubfake.Review{User: "bob", State: "APPROVED"})
	runID, _ := e.fake.AddCheckRun(owner, repoNm, githubfake.CheckRun{AppID: appID, Name: "catalogbot/validate", HeadSHA: head, ExternalID: "pr:1", Conclusion: "failure"})
	build := []struct {
		event string
		data  func() ([]byte, error)
		check func(ev any) string
	}{
		{"pull_request", func() ([]byte, error) { return e.fake.PullRequestEvent(owner, repoNm, n, "opened") }, func(ev any) string {
			p := ev.(*github.PullRequestEvent)
			if p.GetAction() != "opened" || p.GetPullRequest().GetHead().GetSHA() != head || p.GetInstallation().GetID() != instID || p.GetPullRequest().GetHead().GetRepo().GetFullName() != "alice/catalog" {
				return "pull_request payload lacks action, head, installation or fork"
			}
			return ""
		}},
		{"pull_request_review", func() ([]byte, error) { return e.fake.PullRequestReviewEvent(owner, repoNm, n, rid, "submitted") }, func(ev any) string {
			p := ev.(*github.PullRequestReviewEvent)
			if p.GetReview().GetCommitID() != head || p.GetReview().GetState() != "APPROVED" {
				return "review payload lacks commit or state"
			}
			return ""
		}},
		{"check_run", func() ([]byte, error) {
			return e.fake.CheckRunEvent(owner, repoNm, runID, "requested_action", "rerun", "alice")
		}, func(ev any) string {
			p := ev.(*github.CheckRunEvent)
			if p.GetRequestedAction().Identifier != "rerun" || p.GetCheckRun().GetExternalID() != "pr:1" || len(p.GetCheckRun().PullRequests) != 0 {
				return "check_run payload lacks requested action or external_id, or lists a fork PR"
			}
			return ""
		}},
		{"check_suite", func() ([]byte, error) { return e.fake.CheckSuiteEvent(owner, repoNm, "main", head, "requested") }, func(ev any) string {
			if ev.(*github.CheckSuiteEvent).GetCheckSuite().GetHeadSHA() != head {
				return "check_suite payload lacks head sha"
			}
			return ""
		}},
		{"push", func() ([]byte, error) { return e.fake.PushEvent(owner, repoNm, "main", sha("a"), sha("b"), "bob") }, func(ev any) string {
			p := ev.(*github.PushEvent)
			if p.GetRef() != "refs/heads/main" || p.GetAfter() != sha("b") || p.GetRepo().GetDefaultBranch() != "main" {
				return "push payload lacks ref, after or default branch"
			}
			return ""
		}},
	}
	for _, b := range build {
		data, err := b.data()
		if err != nil {
			t.Fatalf("%s: %v", b.event, err)
		}
		ev, err := github.ParseWebHook(b.event, data)
		if err != nil {
			t.Fatalf("%s: go-github cannot parse the payload: %v", b.event, err)
		}
		if msg := b.check(ev); msg != "" {
			t.Errorf("%s: %s", b.event, msg)
		}
	}
}

// git runs git in dir with a fixed identity.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A repository with its git objects merges for real, as GitHub does: a merge commit with both parents, one
// squashed commit on the base authored by the pull request's author, or the pull request's commits replayed;
// in each case the base branch's files are what both sides changed together. Changes that do not merge
// cleanly are 405. The pull request's author is a Bot when it is an App's bot account.
func TestMergeWithGit(t *testing.T) {
	for _, method := range []string{"merge", "squash", "rebase"} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			work := t.TempDir()
			bare := t.TempDir()
			git(t, bare, "init", "-q", "--bare", "-b", "main")
			git(t, work, "init", "-q", "-b", "main")
			write := func(name, body string) {
				if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("a.txt", "one\n")
			write("b.txt", "two\n")
			git(t, work, "add", "-A")
			git(t, work, "commit", "-q", "-m", "base")
			base := git(t, work, "rev-parse", "HEAD")
			git(t, work, "checkout", "-q", "-b", "feature")
			write("a.txt", "one changed\n")
			git(t, work, "commit", "-q", "-am", "feature 1")
			write("c.txt", "three\n")
			git(t, work, "add", "-A")
			git(t, work, "commit", "-q", "-m", "feature 2")
			head := git(t, work, "rev-parse", "HEAD")
			git(t, work, "checkout", "-q", "main")
			write("b.txt", "two changed on main\n")
			git(t, work, "commit", "-q", "-am", "main moves")
			mainHead := git(t, work, "rev-parse", "HEAD")
			git(t, work, "checkout", "-q", "-b", "clash", base)
			write("b.txt", "two changed otherwise\n")
			git(t, work, "commit", "-q", "-am", "clash")
			clash := git(t, work, "rev-parse", "HEAD")
			git(t, work, "push", "-q", bare, "main:refs/heads/main", "feature:refs/heads/feature", "clash:refs/heads/clash")

			if err := e.fake.AddRepo(githubfake.Repo{Owner: owner, Name: "real", Installation: instID, DefaultSHA: mainHead, GitDir: bare}); err != nil {
				t.Fatal(err)
			}
			n, _ := e.fake.AddPullRequest(owner, "real", githubfake.PR{Author: "other[bot]", HeadRef: "feature", HeadSHA: head, Title: "Feature"})
			pr, _, err := e.inst.PullRequests.Get(ctx, owner, "real", n)
			if err != nil || pr.GetUser().GetType() != "Bot" || pr.GetHead().GetRepo().GetID() != pr.GetBase().GetRepo().GetID() {
				t.Fatalf("pull request: %v user %+v head repo %v base repo %v", err, pr.GetUser(), pr.GetHead().GetRepo().GetID(), pr.GetBase().GetRepo().GetID())
			}
			res, _, err := e.inst.PullRequests.Merge(ctx, owner, "real", n, "", &github.PullRequestOptions{SHA: head, MergeMethod: method})
			if err != nil {
				t.Fatal(err)
			}
			got := git(t, bare, "rev-parse", "refs/heads/main")
			if got != res.GetSHA() {
				t.Fatalf("main %s, merge answered %s", got, res.GetSHA())
			}
			for file, want := range map[string]string{"a.txt": "one changed", "b.txt": "two changed on main", "c.txt": "three"} {
				if body := git(t, bare, "show", got+":"+file); body != want {
					t.Errorf("%s after the %s: %q, want %q", file, method, body, want)
				}
			}
			parents := strings.Fields(git(t, bare, "rev-list", "--parents", "-n", "1", got))[1:]
			switch method {
			case "merge":
				if len(parents) != 2 || parents[0] != mainHead || parents[1] != head {
					t.Errorf("merge commit parents %v, want [%s %s]", parents, mainHead, head)
				}
			case "squash":
				if len(parents) != 1 || parents[0] != mainHead {
					t.Errorf("squash parents %v, want [%s]", parents, mainHead)
				}
				if a := git(t, bare, "log", "-1", "--format=%an|%cn|%s", got); a != "other[bot]|GitHub|Feature (#1)" {
					t.Errorf("squash commit %q", a)
				}
			case "rebase":
				if n := git(t, bare, "rev-list", "--count", mainHead+".."+got); n != "2" {
					t.Errorf("%s commits replayed, want 2", n)
				}
				if s := git(t, bare, "log", "-1", "--format=%s", got); s != "feature 2" {
					t.Errorf("last replayed commit %q", s)
				}
			}
			// A pull request that changes the same lines as the base: not mergeable.
			m, _ := e.fake.AddPullRequest(owner, "real", githubfake.PR{Author: "alice", HeadRef: "clash", HeadSHA: clash})
			if _, _, err := e.inst.PullRequests.Merge(ctx, owner, "real", m, "", &github.PullRequestOptions{SHA: clash, MergeMethod: method}); statusOf(err) != 405 {
				t.Errorf("merging a conflict: %v, want 405", err)
			}
			if now := git(t, bare, "rev-parse", "refs/heads/main"); now != got {
				t.Errorf("a refused merge moved main to %s", now)
			}
		})
	}
}

// POST .../git/commits as GitHub documents it: without author or committer both are the App's bot and now;
// given ones are written as given (the committer defaulting to the author); a malformed date is 422.
func TestCreateCommitIdentities(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	work, bare := t.TempDir(), t.TempDir()
	git(t, bare, "init", "-q", "--bare", "-b", "main")
	git(t, work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "-q", "-m", "base")
	base := git(t, work, "rev-parse", "HEAD")
	tree := git(t, work, "rev-parse", "HEAD^{tree}")
	git(t, work, "push", "-q", bare, "main:refs/heads/main")
	if err := e.fake.AddRepo(githubfake.Repo{Owner: owner, Name: "real", Installation: instID, DefaultSHA: base, GitDir: bare}); err != nil {
		t.Fatal(err)
	}
	create := func(c *github.Commit) (string, error) {
		c.Tree, c.Parents = &github.Tree{SHA: github.String(tree)}, []*github.Commit{{SHA: github.String(base)}}
		got, _, err := e.inst.Git.CreateCommit(ctx, owner, "real", c, nil)
		return got.GetSHA(), err
	}
	sha, err := create(&github.Commit{Message: github.String("by the App")})
	if err != nil {
		t.Fatal(err)
	}
	bot := e.fake.BotLogin()
	if got := git(t, bare, "log", "-1", "--format=%an <%ae>|%cn <%ce>", sha); got != bot+" <"+bot+"@users.noreply.github.com>|"+bot+" <"+bot+"@users.noreply.github.com>" {
		t.Errorf("default identities: %q", got)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sha, err = create(&github.Commit{Message: github.String("given"), Author: &github.CommitAuthor{Name: github.String("Ann"), Email: github.String("ann@example.com"), Date: &github.Timestamp{Time: when}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, bare, "log", "-1", "--format=%an <%ae> %aI|%cn <%ce>", sha); got != "Ann <ann@example.com> 2026-01-02T03:04:05+00:00|Ann <ann@example.com>" {
		t.Errorf("given author: %q", got)
	}
	req, _ := http.NewRequest(http.MethodPost, githubfake.APIURL(e.srv.URL)+"repos/"+owner+"/real/git/commits",
		strings.NewReader(`{"message":"x","tree":"`+tree+`","author":{"name":"a","email":"a@b","date":"yesterday"}}`))
	resp, err := e.inst.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a malformed date: %d, want 422", resp.StatusCode)
	}
}
