package app

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
)

func bundleImagePolicy(host, baseRef string) string {
	return rebuildPolicy(host, baseRef) + fmt.Sprintf("bundles:\n  - path: operators\n    image: %s/acme/{package}-bundle:v{version}\n", host)
}

func (e *rebuildEnv) waitRun(name, sha string) githubfake.CheckRun {
	e.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, r := range e.fake.CheckRuns("acme", "catalog", sha) {
			if r.Name == name && r.Status == "completed" {
				return r
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no completed %s run on %s after 90s", name, jobs.Short(sha))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// expectedBundleDigest builds the bundle directory's image from the same files, as catalogbot build-bundle does.
func expectedBundleDigest(t *testing.T, files map[string]string, dir string) string {
	t.Helper()
	tmp := t.TempDir()
	for k, v := range files {
		p := filepath.Join(tmp, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := template.BundleImageDigest(context.Background(), os.DirFS(filepath.Join(tmp, dir)))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A merged bundle directory becomes its bundle image on the registry the policy names, reported as
// catalogbot/bundle-image on the merge commit with the digest (the same as `catalogbot build-bundle` of the
// directory); a later merge of the same version with other content is refused, and the tag keeps the
// digest it had. The catalog image of each commit is built as before. On SQLite and PostgreSQL.
func TestMergedBundleBecomesItsImage(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := newRebuildEnv(t, backend, bundleImagePolicy)
			e.start()
			files := e2eBundle("1.1.0", "registry+v1")
			want := expectedBundleDigest(t, files, "operators/etcd/1.1.0")
			before, sha := e.commitMain(files, "merge #7: etcd 1.1.0")
			e.deliverPush(before, sha)
			run := e.waitRun(jobs.BundleImageCheckRunName, sha)
			if run.Conclusion != "success" || !strings.Contains(run.Summary, want) || !strings.Contains(run.Summary, "/acme/etcd-bundle:v1.1.0") {
				t.Fatalf("bundle-image run: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			ref, err := name.ParseReference(e.reg.host+"/acme/etcd-bundle:v1.1.0", name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Head(ref)
			if err != nil {
				t.Fatal(err)
			}
			if desc.Digest.String() != want {
				t.Errorf("pushed %s, want %s", desc.Digest, want)
			}
			if img := e.waitImageRun(sha); img.Conclusion != "success" {
				t.Errorf("catalog image run: %s %q", img.Conclusion, img.Title)
			}

			// The same version again, other content: refused, the tag unchanged.
			changed := map[string]string{"operators/etcd/1.1.0/manifests/etcd.csv.yaml": files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] + "  displayName: etcd\n"}
			before, sha2 := e.commitMain(changed, "merge #8: etcd 1.1.0 changed")
			e.deliverPush(before, sha2)
			run = e.waitRun(jobs.BundleImageCheckRunName, sha2)
			if run.Conclusion != "failure" || !strings.Contains(run.Summary, "never replaced") {
				t.Errorf("second push of v1.1.0: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			if desc, err := remote.Head(ref); err != nil || desc.Digest.String() != want {
				t.Errorf("the tag moved: %v %v", desc, err)
			}
			// A commit that changes no bundle directory has no bundle-image run.
			before, sha3 := e.commitMain(map[string]string{"notes/README.md": "hello\n"}, "merge #9")
			e.deliverPush(before, sha3)
			e.waitImageRun(sha3)
			for _, r := range e.fake.CheckRuns("acme", "catalog", sha3) {
				if r.Name == jobs.BundleImageCheckRunName {
					t.Errorf("a bundle-image run on a commit without bundle changes: %+v", r)
				}
			}
		})
	}
}

// Registry down: the bundle-image run stays in progress with a note while the push is tried again, and
// succeeds once the registry is back.
func TestBundleImageRetriesRegistryFailures(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, bundleImagePolicy)
	e.tune = func(rb *rebuild.Rebuilder) { rb.Tune(func(t *rebuild.Tuning) { t.RetryWait = 500 * time.Millisecond }) }
	e.reg.down.Store(true)
	e.start()
	before, sha := e.commitMain(e2eBundle("1.2.0", "registry+v1"), "merge #10")
	e.deliverPush(before, sha)
	deadline := time.Now().Add(60 * time.Second)
	for {
		var note bool
		for _, r := range e.fake.CheckRuns("acme", "catalog", sha) {
			if r.Name == jobs.BundleImageCheckRunName && r.Status == "in_progress" && strings.Contains(r.Summary, " of 3 failed") {
				note = true
			}
		}
		if note {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no retry note: %+v", e.fake.CheckRuns("acme", "catalog", sha))
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.reg.down.Store(false)
	if run := e.waitRun(jobs.BundleImageCheckRunName, sha); run.Conclusion != "success" {
		t.Errorf("after the registry came back: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
}

// The whole way from a merged bundle to a catalog update pull request: the merge adds etcd 1.1.0
// (replacing 1.0.0); its image is pushed, the template gains it by digest with its channel entry, the
// catalog is rendered, and the pull request is opened from catalogbot/catalog-update/etcd. The App then
// checks that pull request like any: the templates check finds the catalog equal to the template's render.
func TestMergedBundleOpensACatalogUpdate(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, func(host, baseRef string) string {
		return bundleImagePolicy(host, baseRef) + "templates:\n  - path: templates/etcd.yaml\n    catalogs: [catalogs/v4.16/etcd/catalog.yaml]\nautomerge: {enabled: true}\n"
	})
	e.checks = []checks.Check{checks.Ownership{}, checks.Templates{}}
	srv, _, _ := e.start()
	v1 := e2eBundle("1.0.0", "registry+v1")
	d1 := expectedBundleDigest(t, v1, "operators/etcd/1.0.0")
	img1 := e.reg.host + "/acme/etcd-bundle@" + d1
	tmpl := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n      - name: etcdoperator.v1.0.0\n  - schema: olm.bundle\n    image: " + img1 + "\n"
	first := map[string]string{"templates/etcd.yaml": tmpl}
	for k, v := range v1 {
		first[k] = v
	}
	// The committed catalog is what the template renders (rendered here as the App would).
	first["catalogs/v4.16/etcd/catalog.yaml"] = renderForTest(t, first, "templates/etcd.yaml")
	e.commitMain(first, "etcd 1.0.0 and its template")
	v2 := e2eBundle("1.1.0", "registry+v1")
	csv := "operators/etcd/1.1.0/manifests/etcd.csv.yaml"
	v2[csv] = strings.Replace(v2[csv], "spec:\n", "spec:\n  replaces: etcdoperator.v1.0.0\n", 1)
	d2 := expectedBundleDigest(t, v2, "operators/etcd/1.1.0")
	before, sha := e.commitMain(v2, "merge #11: etcd 1.1.0")
	start := time.Now()
	firstRequest := len(e.fake.Requests())
	e.deliverPush(before, sha)
	run := e.waitRun(jobs.BundleImageCheckRunName, sha)
	if run.Conclusion != "success" || !strings.Contains(run.Summary, "opened") {
		t.Fatalf("bundle-image run: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	t.Logf("merge to catalog update pull request: %s", time.Since(start).Round(time.Millisecond))
	var pr *githubfake.PR
	for _, p := range e.pullRequests() {
		if p.HeadRef == "catalogbot/catalog-update/etcd" {
			p := p
			pr = &p
		}
	}
	if pr == nil {
		t.Fatalf("no catalog update pull request: %+v", e.pullRequests())
	}
	show := func(file string) string {
		return runGit(t, e.git.BarePath("acme", "catalog"), "show", "refs/pull/"+strconv.Itoa(pr.Number)+"/head:"+file)
	}
	if got := show("templates/etcd.yaml"); !strings.Contains(got, "image: "+e.reg.host+"/acme/etcd-bundle@"+d2) || !strings.Contains(got, "- name: etcdoperator.v1.1.0\n        replaces: etcdoperator.v1.0.0") {
		t.Errorf("template on the branch:\n%s", got)
	}
	if got := show("catalogs/v4.16/etcd/catalog.yaml"); !strings.Contains(got, "name: etcdoperator.v1.1.0\n  replaces: etcdoperator.v1.0.0") || !strings.Contains(got, d2) {
		t.Errorf("catalog on the branch:\n%s", got)
	}
	if !strings.Contains(pr.Body, "etcdoperator.v1.0.0") || !strings.Contains(pr.Body, sha) {
		t.Errorf("pull request body:\n%s", pr.Body)
	}
	// The App checks the pull request it opened: the catalog is what the template renders.
	ev, err := e.fake.PullRequestEvent("acme", "catalog", pr.Number, "opened")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.fake.Deliver(context.Background(), "pull_request", withCloneURL(t, ev, e.git.URL("acme", "catalog"))); err != nil || d.StatusCode != 202 {
		t.Fatalf("delivering: %v %+v", err, d)
	}
	tr := e.waitRun("catalogbot/templates", pr.HeadSHA)
	if tr.Conclusion != "success" {
		t.Errorf("templates on the catalog update: %s %q\n%s", tr.Conclusion, tr.Title, tr.Summary)
	}
	// Nobody owns anything here but maria: the update merges on the authorization of the bundle it derives from.
	own := e.waitRun("catalogbot/ownership", pr.HeadSHA)
	if own.Conclusion != "success" || !strings.Contains(own.Title, "derived") {
		t.Errorf("ownership on the catalog update: %s %q\n%s", own.Conclusion, own.Title, own.Summary)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p, _ := e.fake.PullRequest("acme", "catalog", pr.Number); p.Merged {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the catalog update was not merged")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("merge of the bundle to merge of its catalog update: %s", time.Since(start).Round(time.Millisecond))

	// GitHub's merge moves main to the update (a fast-forward here); the push rebuilds the catalog image,
	// which then serves the new bundle.
	bare := e.git.BarePath("acme", "catalog")
	runGit(t, bare, "update-ref", "refs/heads/main", pr.HeadSHA)
	if err := e.fake.SetBranch("acme", "catalog", "main", pr.HeadSHA); err != nil {
		t.Fatal(err)
	}
	e.deliverPush(sha, pr.HeadSHA)
	img := e.waitImageRun(pr.HeadSHA)
	if img.Conclusion != "success" {
		t.Fatalf("catalog image of the update: %s %q\n%s", img.Conclusion, img.Title, img.Summary)
	}
	t.Logf("merge of the bundle to the catalog image that serves it: %s", time.Since(start).Round(time.Millisecond))
	waitQueueIdle(t, srv.Queue())
	reqs := e.fake.Requests()[firstRequest:]
	byRoute := map[string]int{}
	for _, r := range reqs {
		byRoute[r.Route]++
	}
	t.Logf("GitHub requests for the whole path (bundle merge, bundle image, catalog update opened, checked, merged, catalog image): %d: %v", len(reqs), byRoute)
	if got := catalogFileInImage(t, e.reg.host+"/acme/catalog:"+pr.HeadSHA, "configs/etcd/catalog.yaml"); !strings.Contains(got, "name: etcdoperator.v1.1.0") || !strings.Contains(got, d2) {
		t.Errorf("the catalog image does not serve etcd 1.1.0:\n%s", got)
	}
}

// catalogFileInImage reads one file of the catalog layer of an image (the first platform of an index).
func catalogFileInImage(t *testing.T, ref, file string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) == 0 {
		t.Fatalf("index of %s: %v", ref, err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for i := len(layers) - 1; i >= 0; i-- {
		rc, err := layers[i].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if strings.TrimPrefix(h.Name, "/") == file {
				data, _ := io.ReadAll(tr)
				rc.Close()
				return string(data)
			}
		}
		rc.Close()
	}
	t.Fatalf("%s has no %s", ref, file)
	return ""
}

// renderForTest renders a template of files as the App does.
func renderForTest(t *testing.T, files map[string]string, tmpl string) string {
	t.Helper()
	dir := t.TempDir()
	for k, v := range files {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The bundle root's image pattern is the one bundleImagePolicy gives, on the registry the template names.
	host, _, _ := strings.Cut(strings.SplitN(files[tmpl], "image: ", 2)[1], "/")
	pol := &policy.Policy{Bundles: []policy.BundleRoot{{Path: "operators", Image: host + "/acme/{package}-bundle:v{version}"}}}
	pt := pkgtemplate.PackageTemplate{Template: tmpl, Catalogs: []policy.TemplateCatalog{{Path: "catalogs/v4.16/etcd/catalog.yaml", MigrateLevel: "none"}}}
	out, fs := pkgtemplate.Render(context.Background(), os.DirFS(dir), pol, pt, "etcd", []byte(files[tmpl]), catalog.Limits{})
	if out == nil {
		t.Fatalf("render: %v", fs)
	}
	return string(out["catalogs/v4.16/etcd/catalog.yaml"])
}

func withCloneURL(t *testing.T, raw []byte, clone string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["repository"].(map[string]any)["clone_url"] = clone
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *rebuildEnv) pullRequests() []githubfake.PR {
	var out []githubfake.PR
	for n := 1; n < 50; n++ {
		if p, ok := e.fake.PullRequest("acme", "catalog", n); ok {
			out = append(out, p)
		}
	}
	return out
}

// Bundles merged while their package's catalog update is open collect in that one pull request, updated in
// place: a second merge adds its bundle on top of the branch, never a second pull request.
func TestCatalogUpdatesCoalesce(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, func(host, baseRef string) string {
		return bundleImagePolicy(host, baseRef) + "templates:\n  - path: templates/etcd.yaml\n    catalogs: [catalogs/v4.16/etcd/catalog.yaml]\n"
	})
	srv, _, _ := e.start()
	v1 := e2eBundle("1.0.0", "registry+v1")
	img1 := e.reg.host + "/acme/etcd-bundle@" + expectedBundleDigest(t, v1, "operators/etcd/1.0.0")
	first := map[string]string{"templates/etcd.yaml": "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n      - name: etcdoperator.v1.0.0\n  - schema: olm.bundle\n    image: " + img1 + "\n"}
	for k, v := range v1 {
		first[k] = v
	}
	first["catalogs/v4.16/etcd/catalog.yaml"] = renderForTest(t, first, "templates/etcd.yaml")
	e.commitMain(first, "etcd 1.0.0")
	var shas []string
	for _, tc := range []struct{ version, replaces string }{{"1.1.0", "etcdoperator.v1.0.0"}, {"1.2.0", "etcdoperator.v1.1.0"}} {
		files := e2eBundle(tc.version, "registry+v1")
		csv := "operators/etcd/" + tc.version + "/manifests/etcd.csv.yaml"
		files[csv] = strings.Replace(files[csv], "spec:\n", "spec:\n  replaces: "+tc.replaces+"\n", 1)
		before, sha := e.commitMain(files, "merge etcd "+tc.version)
		e.deliverPush(before, sha)
		if run := e.waitRun(jobs.BundleImageCheckRunName, sha); run.Conclusion != "success" {
			t.Fatalf("%s: %s %q\n%s", tc.version, run.Conclusion, run.Title, run.Summary)
		}
		shas = append(shas, sha)
	}
	var updates []githubfake.PR
	for _, p := range e.pullRequests() {
		if p.HeadRef == "catalogbot/catalog-update/etcd" {
			updates = append(updates, p)
		}
	}
	if len(updates) != 1 {
		t.Fatalf("%d catalog update pull requests, want one: %+v", len(updates), updates)
	}
	pr := updates[0]
	got := runGit(t, e.git.BarePath("acme", "catalog"), "show", "refs/pull/"+strconv.Itoa(pr.Number)+"/head:catalogs/v4.16/etcd/catalog.yaml")
	for _, want := range []string{"name: etcdoperator.v1.1.0\n  replaces: etcdoperator.v1.0.0", "name: etcdoperator.v1.2.0\n  replaces: etcdoperator.v1.1.0"} {
		if !strings.Contains(got, want) {
			t.Errorf("the updated catalog lacks %q:\n%s", want, got)
		}
	}
	// The title names every bundle the update adds, the earlier one included.
	if !strings.Contains(pr.Title, "etcdoperator.v1.1.0, etcdoperator.v1.2.0") {
		t.Errorf("title %q", pr.Title)
	}
	// The update is one commit on the default branch's head, not a second commit on the first update.
	if parent := runGit(t, e.git.BarePath("acme", "catalog"), "rev-parse", pr.HeadSHA+"^"); parent != shas[1] {
		t.Errorf("the update's parent is %s, want the default branch's head %s", parent, shas[1])
	}
	if n := runGit(t, e.git.BarePath("acme", "catalog"), "rev-list", "--count", shas[1]+".."+pr.HeadSHA); n != "1" {
		t.Errorf("the update has %s commits over the default branch, want 1", n)
	}

	// Someone closes the pull request: that declines its bundles. Re-run on the second commit's bundle-image
	// run proposes that commit's bundle again, in a new pull request from the same branch.
	waitQueueIdle(t, srv.Queue()) // the job of the second merge is done (its catalog image too)
	if err := e.fake.ClosePullRequest("acme", "catalog", pr.Number); err != nil {
		t.Fatal(err)
	}
	var runID int64
	for _, r := range e.fake.CheckRuns("acme", "catalog", shas[1]) {
		if r.Name == jobs.BundleImageCheckRunName {
			runID = r.ID
		}
	}
	ev, err := e.fake.CheckRunEvent("acme", "catalog", runID, "rerequested", "", "maria")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.fake.Deliver(context.Background(), "check_run", withCloneURL(t, ev, e.git.URL("acme", "catalog"))); err != nil || d.StatusCode != 202 {
		t.Fatalf("delivering the re-run: %v %+v", err, d)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var open []githubfake.PR
		for _, p := range e.pullRequests() {
			if p.HeadRef == "catalogbot/catalog-update/etcd" && p.State == "open" {
				open = append(open, p)
			}
		}
		if len(open) == 1 {
			got := runGit(t, e.git.BarePath("acme", "catalog"), "show", open[0].HeadSHA+":templates/etcd.yaml")
			if !strings.Contains(got, "etcdoperator.v1.2.0") || strings.Contains(got, "- name: etcdoperator.v1.1.0") {
				t.Errorf("the new pull request's template does not add only 1.2.0:\n%s", got)
			}
			break
		}
		if time.Now().After(deadline) {
			var sums []string
			for _, r := range e.fake.CheckRuns("acme", "catalog", shas[1]) {
				sums = append(sums, r.Name+" "+r.Status+" "+r.Summary)
			}
			t.Fatalf("no new catalog update pull request after the re-run: %v", sums)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A template that no longer renders (it names an image nobody can resolve) gets no catalog update: the
// bundle image is pushed all the same, and catalogbot/bundle-image fails saying why, on the template's line.
func TestCatalogUpdateOfATemplateThatDoesNotRender(t *testing.T) {
	e := newRebuildEnv(t, store.BackendSQLite, func(host, baseRef string) string {
		return bundleImagePolicy(host, baseRef) + "templates:\n  - path: templates/etcd.yaml\n    catalogs: [catalogs/v4.16/etcd/catalog.yaml]\n"
	})
	e.start()
	broken := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.bundle\n    image: " + e.reg.host + "/acme/gone@sha256:" + strings.Repeat("0", 64) + "\n"
	e.commitMain(map[string]string{"templates/etcd.yaml": broken}, "a broken template")
	before, sha := e.commitMain(e2eBundle("1.1.0", "registry+v1"), "merge etcd 1.1.0")
	e.deliverPush(before, sha)
	run := e.waitRun(jobs.BundleImageCheckRunName, sha)
	if run.Conclusion != "failure" || !strings.Contains(run.Summary, "no catalog update: the template does not render") || !strings.Contains(run.Summary, "templates/etcd.yaml:7") {
		t.Errorf("bundle-image run: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	if !strings.Contains(run.Summary, "| pushed |") {
		t.Errorf("the bundle image was not pushed:\n%s", run.Summary)
	}
	for _, p := range e.pullRequests() {
		t.Errorf("a pull request was opened: %+v", p)
	}
}
