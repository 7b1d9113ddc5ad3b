package resilience

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/internal/servertest"
)

// TestKillLoopBundleImagesSQLite is the rebuild kill loop on a main branch whose every commit adds a bundle
// directory: besides the catalog image, each merged bundle's image is pushed and added to the package's
// catalog update pull request. At the end, whatever the kills interrupted (a push, the commit on the bot's
// branch, the pull request's opening): every bundle merged after the server started is on the registry with
// the digest its directory builds, and exactly one catalog update pull request is open, its template naming
// each of those images exactly once.
func TestKillLoopBundleImagesSQLite(t *testing.T) {
	w := newWorld(t)
	m := newBundleMainline(t, w)
	r := w.newReplica("sqlite", serverOptions{pushTo: []string{w.registry + "/acme/"}})
	runRebuildKillLoop(t, w, m, []*servertest.Replica{r}, rebuildPlanFor(t), nil, nil)

	var open []githubfake.PR
	for n := 1; n < 200; n++ {
		if p, ok := w.fake.PullRequest(owner, repoName, n); ok && p.HeadRef == "catalogbot/catalog-update/etcd" && p.State == "open" {
			open = append(open, p)
		}
	}
	if len(open) != 1 {
		t.Fatalf("%d open catalog update pull requests, want one: %+v", len(open), open)
	}
	tmpl := servertest.Git(t, w.repo.Bare(), "show", open[0].HeadSHA+":templates/etcd.yaml") + "\n" // Git trims the output
	for i := 1; i < len(m.commits); i++ {
		v := m.versions[i]
		dir := filepath.Join(w.repo.Dir, fmt.Sprintf("operators/etcd/1.%d.0", v))
		b, _, err := bundle.Load(context.Background(), os.DirFS(dir), bundle.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		img, err := image.BundleImage(context.Background(), os.DirFS(dir), b.Annotations, image.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		tag := fmt.Sprintf("%s/acme/etcd-bundle:v1.%d.0", w.registry, v)
		if got := servertest.ImageDigest(t, tag); got != d.String() {
			t.Errorf("%s is %q, its directory builds %s", tag, got, d)
		}
		ref := w.registry + "/acme/etcd-bundle@" + d.String()
		if n := strings.Count(tmpl, "image: "+ref+"\n"); n != 1 {
			t.Errorf("the catalog update's template names %s (etcd 1.%d.0, commit %d %s) %d times, want once", ref, v, i, m.commits[i], n)
		}
	}
	if t.Failed() {
		t.Logf("the branch:\n%s", servertest.Git(t, w.repo.Bare(), "log", "--format=%H %P %s", "refs/heads/catalogbot/catalog-update/etcd"))
		t.Logf("the pull request's head: %s; its template:\n%s", open[0].HeadSHA, tmpl)
	}
	t.Logf("one catalog update pull request (#%d) holding %d bundles", open[0].Number, len(m.commits)-1)
}
