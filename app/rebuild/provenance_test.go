package rebuild

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/gitfs"
)

// The provenance answers from the App's records and the default branch's history only, one condition at a
// time: each case below differs from the App's own update in exactly one thing.
func TestUpdateProvenance(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			q := openTestQueue(t, backend)
			st := q.Updates()
			w := newWorkRepo(t)
			const tmpl = "templates/etcd.yaml"
			const img = "quay.io/acme/etcd-bundle@sha256:1111111111111111111111111111111111111111111111111111111111111111"
			m0 := w.commit(map[string]string{tmpl: "entries: []\n"}, "template")
			built := w.commit(map[string]string{"operators/etcd/1.1.0/metadata/annotations.yaml": "x\n"}, "etcd 1.1.0")
			m2 := w.commit(map[string]string{"README": "later\n"}, "later")
			runGit(t, w.dir, "checkout", "-q", "-b", "update")
			appCommit := w.commit(map[string]string{tmpl: "entries: []\nimage: " + img + "\n"}, "catalog update")
			foreign := w.commit(map[string]string{"README": "touch\n"}, "touch up")
			runGit(t, w.dir, "checkout", "-q", "-b", "side", m0)
			side := w.commit(map[string]string{"operators/etcd/1.2.0/metadata/annotations.yaml": "x\n"}, "not on main")
			runGit(t, w.dir, "checkout", "-q", "main")
			// main, later: the bundle added by hand, then taken out again.
			withIt := w.commit(map[string]string{tmpl: "entries: []\nimage: " + img + "\n"}, "by hand")
			takenOut := w.commit(map[string]string{tmpl: "entries: []\n"}, "held back")
			repo, err := gitfs.Open(w.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer repo.Close()
			h := func(s string) gitfs.Hash {
				v, err := repo.Resolve(s)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			if err := st.RecordBundleBuild(ctx, "acme", "catalog", store.BundleBuild{Image: img, Package: "etcd", Dir: "operators/etcd/1.1.0", Commit: built}, time.Now()); err != nil {
				t.Fatal(err)
			}
			sideImg := strings.Replace(img, "1111", "2222", 1)
			if err := st.RecordBundleBuild(ctx, "acme", "catalog", store.BundleBuild{Image: sideImg, Package: "etcd", Dir: "operators/etcd/1.2.0", Commit: side}, time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := st.RecordUpdateCommit(ctx, "acme", "catalog", store.UpdateCommit{SHA: appCommit, Package: "etcd", Base: m2, Bundles: []string{img}, Created: time.Now()}); err != nil {
				t.Fatal(err)
			}
			bot := &BotIdentity{login: "catalogbot[bot]"}
			repoJSON := &github.Repository{ID: github.Int64(1), FullName: github.String("acme/catalog"), DefaultBranch: github.String("main")}
			pull := func(mod func(*github.PullRequest)) *github.PullRequest {
				p := &github.PullRequest{
					User: &github.User{Login: github.String("catalogbot[bot]"), Type: github.String("Bot")},
					Head: &github.PullRequestBranch{Ref: github.String("catalogbot/catalog-update/etcd"), Repo: repoJSON},
					Base: &github.PullRequestBranch{Ref: github.String("main"), Repo: repoJSON},
				}
				if mod != nil {
					mod(p)
				}
				return p
			}
			prov := func(p *github.PullRequest, head, defaultHead string) *UpdateProvenance {
				return &UpdateProvenance{store: st, bot: bot, repo: repo, owner: "acme", name: "catalog", pr: p,
					defaultHead: h(defaultHead), mergeBase: h(m2), head: h(head)}
			}

			made := []struct {
				name string
				p    *github.PullRequest
				head string
				pkg  string
				want bool
			}{
				{"the App's update", pull(nil), appCommit, "etcd", true},
				{"another package", pull(nil), appCommit, "etcd-x", false},
				{"opened by a person", pull(func(p *github.PullRequest) {
					p.User.Login, p.User.Type = github.String("mallory"), github.String("User")
				}), appCommit, "etcd", false},
				{"another App's bot", pull(func(p *github.PullRequest) { p.User.Login = github.String("other[bot]") }), appCommit, "etcd", false},
				{"a look-alike branch", pull(func(p *github.PullRequest) { p.Head.Ref = github.String("catalogbot/catalog-update/etcd-x") }), appCommit, "etcd", false},
				{"a fork", pull(func(p *github.PullRequest) {
					p.Head.Repo = &github.Repository{ID: github.Int64(2), FullName: github.String("mallory/catalog")}
				}), appCommit, "etcd", false},
				{"a fork of the same name", pull(func(p *github.PullRequest) {
					p.Head.Repo = &github.Repository{ID: github.Int64(2), FullName: github.String("acme/catalog")}
				}), appCommit, "etcd", false},
				{"into another branch", pull(func(p *github.PullRequest) { p.Base.Ref = github.String("release") }), appCommit, "etcd", false},
				{"a foreign commit on top", pull(nil), foreign, "etcd", false},
			}
			for _, tc := range made {
				if got, why := prov(tc.p, tc.head, takenOut).MadeUpdate(ctx, tc.pkg); got != tc.want {
					t.Errorf("%s: MadeUpdate = %v (%s), want %v", tc.name, got, why, tc.want)
				}
			}

			recorded := []struct {
				name, image, dir, defaultHead string
				want                          bool
			}{
				{"built on main, never in the template", img, "operators/etcd/1.1.0", m2, true},
				{"never recorded", strings.Replace(img, "1111", "3333", 1), "operators/etcd/1.1.0", m2, false},
				{"recorded from another directory", img, "operators/etcd/1.0.0", m2, false},
				{"recorded for a commit off the default branch", sideImg, "operators/etcd/1.2.0", m2, false},
				{"taken out of the template later", img, "operators/etcd/1.1.0", takenOut, false},
				{"in the template now", img, "operators/etcd/1.1.0", withIt, true},
			}
			for _, tc := range recorded {
				if got, why := prov(pull(nil), appCommit, tc.defaultHead).BundleRecorded(ctx, "etcd", tmpl, tc.image, tc.dir); got != tc.want {
					t.Errorf("%s: BundleRecorded = %v (%s), want %v", tc.name, got, why, tc.want)
				}
			}
		})
	}
}

// The catalog update rows on both databases: the newest commit of each package whose update is not settled,
// the pull request recorded on a commit, and settling.
func TestUpdateStore(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			q := openTestQueue(t, backend)
			st := q.Updates()
			now := time.Now()
			for i, c := range []store.UpdateCommit{
				{SHA: strings.Repeat("a", 40), Package: "etcd", Base: strings.Repeat("1", 40), Bundles: []string{"x@sha256:1"}},
				{SHA: strings.Repeat("b", 40), Package: "etcd", Base: strings.Repeat("2", 40), Bundles: []string{"x@sha256:1", "x@sha256:2"}},
				{SHA: strings.Repeat("c", 40), Package: "redis", Base: strings.Repeat("2", 40), Bundles: []string{"r@sha256:1"}},
			} {
				c.Created = now.Add(time.Duration(i) * time.Millisecond)
				if err := st.RecordUpdateCommit(ctx, "Acme", "Catalog", c); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.SetUpdatePull(ctx, "acme", "catalog", strings.Repeat("B", 40), 7); err != nil {
				t.Fatal(err)
			}
			last, ok, err := st.LatestUpdateCommit(ctx, "acme", "catalog", "etcd")
			if err != nil || !ok || last.SHA != strings.Repeat("b", 40) || last.Pull != 7 || len(last.Bundles) != 2 || last.Settled {
				t.Fatalf("latest etcd commit: %+v %v %v", last, ok, err)
			}
			pending, err := st.PendingUpdates(ctx, "acme", "catalog")
			if err != nil || len(pending) != 2 || pending[0].SHA != strings.Repeat("b", 40) || pending[1].Package != "redis" {
				t.Fatalf("pending: %+v %v", pending, err)
			}
			if err := st.SettleUpdate(ctx, "acme", "catalog", "etcd"); err != nil {
				t.Fatal(err)
			}
			if pending, err := st.PendingUpdates(ctx, "acme", "catalog"); err != nil || len(pending) != 1 || pending[0].Package != "redis" {
				t.Fatalf("pending after settling etcd: %+v %v", pending, err)
			}
			if c, ok, err := st.UpdateCommit(ctx, "acme", "catalog", strings.Repeat("a", 40)); err != nil || !ok || !c.Settled {
				t.Errorf("an older etcd commit after settling: %+v %v %v", c, ok, err)
			}
			// A bundle build is kept with the first commit that built it.
			for _, commit := range []string{strings.Repeat("1", 40), strings.Repeat("2", 40)} {
				if err := st.RecordBundleBuild(ctx, "acme", "catalog", store.BundleBuild{Image: "x@sha256:1", Package: "etcd", Dir: "operators/etcd/1.1.0", Commit: commit}, now); err != nil {
					t.Fatal(err)
				}
			}
			if b, ok, err := st.BundleBuild(ctx, "ACME", "catalog", "x@sha256:1"); err != nil || !ok || b.Commit != strings.Repeat("1", 40) {
				t.Errorf("bundle build: %+v %v %v", b, ok, err)
			}
		})
	}
}
