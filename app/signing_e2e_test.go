package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/rebuild"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
	"github.com/catalogbot/catalogbot/registry"
	"github.com/catalogbot/catalogbot/sign"
)

// writeSigningKey writes a fresh PEM PKCS#8 ECDSA P-256 key, as an operator mounts it, and returns its file
// and public key.
func writeSigningKey(t *testing.T) (string, *sign.PublicKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "sign.key")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := sign.ParsePublicKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	if err != nil {
		t.Fatal(err)
	}
	return file, pub
}

func (e *rebuildEnv) verifier() *registry.Client {
	e.t.Helper()
	c, err := registry.New(registry.WithAllowedHosts(e.reg.host), registry.WithInsecureHosts(e.reg.host))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// With rebuild.sign_key_file, a merged bundle becomes a signed bundle image and the commit's catalog image a
// signed index (each platform manifest signed too), both with a provenance attestation stating the
// repository, the commit, the directory built and the base image; the key verifies them as `catalogbot audit
// --image` does, another key does not. On SQLite and PostgreSQL.
func TestAppSignsTheImagesItPushes(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := newRebuildEnv(t, backend, bundleImagePolicy)
			keyFile, pub := writeSigningKey(t)
			e.cfg.RebuildSignKeyFile = keyFile
			e.start()
			before, sha := e.commitMain(e2eBundle("1.1.0", "registry+v1"), "merge #7: etcd 1.1.0")
			e.deliverPush(before, sha)
			run := e.waitRun(jobs.BundleImageCheckRunName, sha)
			if run.Conclusion != "success" || !strings.Contains(run.Summary, "signed, provenance attested") || strings.Contains(run.Summary, "not signed") {
				t.Fatalf("bundle-image run: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			img := e.waitImageRun(sha)
			if img.Conclusion != "success" || !strings.Contains(img.Summary, "provenance attested") || strings.Contains(img.Summary, "not signed") {
				t.Fatalf("catalog image run: %s %q\n%s", img.Conclusion, img.Title, img.Summary)
			}
			ctx := context.Background()
			reg := e.verifier()
			for _, tc := range []struct{ ref, buildType, path, base string }{
				{e.reg.host + "/acme/etcd-bundle:v1.1.0", sign.BuildTypeBundle, "operators/etcd/1.1.0", ""},
				{e.reg.host + "/acme/catalog:latest", sign.BuildTypeCatalog, "catalogs/v4.16", e.baseRef},
				{e.reg.host + "/acme/catalog:" + sha, sign.BuildTypeCatalog, "catalogs/v4.16", e.baseRef},
			} {
				v, err := sign.Verify(ctx, reg, pub, tc.ref, sign.VerifyOptions{RequireAttestation: true})
				if err != nil {
					t.Fatalf("%s: %v", tc.ref, err)
				}
				if tc.buildType == sign.BuildTypeCatalog && len(v.Manifests) < 2 {
					t.Errorf("%s: %d manifests verified, want the index and each platform", tc.ref, len(v.Manifests))
				}
				for _, m := range v.Manifests {
					p := m.Statements[0].Provenance
					if p.Repository != "acme/catalog" || p.Commit != sha || p.Path != tc.path || p.BuildType != tc.buildType || p.Ref != "refs/heads/main" {
						t.Errorf("%s %s: provenance %+v", tc.ref, m.Digest, p)
					}
					if p.BaseImage != tc.base {
						t.Errorf("%s: base %q, want %q", tc.ref, p.BaseImage, tc.base)
					}
				}
				_, other := writeSigningKey(t)
				if _, err := sign.Verify(ctx, reg, other, tc.ref, sign.VerifyOptions{}); !errors.Is(err, sign.ErrNotSigned) {
					t.Errorf("%s under another key: %v, want not signed", tc.ref, err)
				}
			}
		})
	}
}

// Without a signing key the App pushes as before and says so in both runs; the verifier refuses the images.
func TestAppWithoutSigningKeySaysNotSigned(t *testing.T) {
	e := newRebuildEnv(t, backendNames[0], bundleImagePolicy)
	e.start()
	before, sha := e.commitMain(e2eBundle("1.1.0", "registry+v1"), "merge #7: etcd 1.1.0")
	e.deliverPush(before, sha)
	for _, run := range []string{jobs.BundleImageCheckRunName, jobs.RebuildCheckRunName} {
		r := e.waitRun(run, sha)
		if r.Conclusion != "success" || !strings.Contains(r.Summary, "not signed: no signing key configured") {
			t.Errorf("%s: %s %q\n%s", run, r.Conclusion, r.Title, r.Summary)
		}
	}
	_, pub := writeSigningKey(t)
	for _, ref := range []string{e.reg.host + "/acme/etcd-bundle:v1.1.0", e.reg.host + "/acme/catalog:latest"} {
		if _, err := sign.Verify(context.Background(), e.verifier(), pub, ref, sign.VerifyOptions{}); !errors.Is(err, sign.ErrNotSigned) {
			t.Errorf("%s: %v, want not signed", ref, err)
		}
	}
}

// A signing key that is not a usable key stops the App at start, with the file named and no key bytes shown.
func TestAppRefusesAnUnusableSigningKey(t *testing.T) {
	e := newRebuildEnv(t, backendNames[0], bundleImagePolicy)
	file := filepath.Join(t.TempDir(), "sign.key")
	if err := os.WriteFile(file, []byte("-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0\n-----END RSA PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.cfg.RebuildSignKeyFile = file
	_, err := NewServer(context.Background(), e.cfg, testLogger(t), WithRebuild())
	if err == nil || !strings.Contains(err.Error(), "rebuild.sign_key_file") || !strings.Contains(err.Error(), file) || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatalf("NewServer: %v", err)
	}
}

// A bundle pull request the App merged on an owner's approval: the bundle image built from the merge commit
// states, in its signed provenance, the pull request, its merged head, who approved that head (from the
// App's merge audit), and the App's check runs on it with their conclusions.
func TestAppProvenanceNamesTheMergedPullRequest(t *testing.T) {
	e := newRebuildEnv(t, backendNames[0], func(host, baseRef string) string {
		return bundleImagePolicy(host, baseRef) + "automerge: {enabled: true}\n"
	})
	keyFile, pub := writeSigningKey(t)
	e.cfg.RebuildSignKeyFile = keyFile
	e.checks = []checks.Check{checks.Ownership{}, checks.Validation{}}
	e.start()
	base := e.main
	runGit(t, e.work.dir, "checkout", "-q", "-b", "etcd-1.1.0")
	head := e.work.commit(e2eBundle("1.1.0", "registry+v1"), "add etcd 1.1.0")
	e.work.push("HEAD", "refs/heads/etcd-1.1.0")
	e.work.push("HEAD", "refs/pull/1/head")
	number, err := e.fake.AddPullRequest("acme", "catalog", githubfake.PR{Author: "alice", HeadRef: "etcd-1.1.0", HeadSHA: head, BaseSHA: base})
	if err != nil {
		t.Fatal(err)
	}
	e.deliverPR(number, "opened")
	e.prRun("catalogbot/ownership", number, head)
	id, err := e.fake.AddReview("acme", "catalog", number, githubfake.Review{User: "bob", State: "APPROVED", CommitID: head})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := e.fake.PullRequestReviewEvent("acme", "catalog", number, id, "submitted")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.fake.Deliver(context.Background(), "pull_request_review", withCloneURL(t, ev, e.git.URL("acme", "catalog"))); err != nil || d.StatusCode != 202 {
		t.Fatalf("delivering the review: %v %+v", err, d)
	}
	merge := e.waitMergedPR(number)
	runGit(t, e.work.dir, "checkout", "-q", "main")
	e.syncMain()
	e.deliverPush(base, merge)
	if run := e.waitRun(jobs.BundleImageCheckRunName, merge); run.Conclusion != "success" {
		t.Fatalf("bundle-image run: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	v, err := sign.Verify(context.Background(), e.verifier(), pub, e.reg.host+"/acme/etcd-bundle:v1.1.0", sign.VerifyOptions{RequireAttestation: true})
	if err != nil {
		t.Fatal(err)
	}
	p := v.Manifests[0].Statements[0].Provenance
	if p.Commit != merge || len(p.PullRequests) != 1 {
		t.Fatalf("provenance: commit %s, pull requests %+v; want %s and #%d", p.Commit, p.PullRequests, merge, number)
	}
	pr := p.PullRequests[0]
	if pr.Number != number || pr.HeadSHA != head || pr.MergeCommit != merge || len(pr.Approvals) != 1 || pr.Approvals[0].User != "bob" || pr.Approvals[0].HeadSHA != head {
		t.Errorf("pull request in the provenance: %+v", pr)
	}
	runs := map[string]string{}
	for _, r := range p.CheckRuns {
		if r.HeadSHA != head {
			t.Errorf("check run %+v not on the merged head %s", r, head)
		}
		runs[r.Name] = r.Conclusion
	}
	if runs["catalogbot/ownership"] != "success" || runs["catalogbot/validate"] != "success" {
		t.Errorf("check runs in the provenance: %+v", p.CheckRuns)
	}
}

// A registry that refuses the signatures: the content was pushed by digest, but no tag names it; both runs
// fail after their tries, saying signing failed.
func TestAppSigningFailureMovesNoTag(t *testing.T) {
	e := newRebuildEnv(t, backendNames[0], bundleImagePolicy)
	keyFile, _ := writeSigningKey(t)
	e.cfg.RebuildSignKeyFile = keyFile
	e.tune = func(rb *rebuild.Rebuilder) {
		rb.Tune(func(t *rebuild.Tuning) { t.RetryWait = 50 * time.Millisecond })
	}
	e.reg.refuseSigs.Store(true)
	e.start()
	before, sha := e.commitMain(e2eBundle("1.1.0", "registry+v1"), "merge #7: etcd 1.1.0")
	e.deliverPush(before, sha)
	run := e.waitRun(jobs.BundleImageCheckRunName, sha)
	if run.Conclusion != "failure" || !strings.Contains(run.Summary, "no tag was moved") {
		t.Fatalf("bundle-image run: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
	}
	if img := e.waitImageRun(sha); img.Conclusion != "failure" || !strings.Contains(img.Summary, "no tag was moved") {
		t.Errorf("catalog image run: %s %q\n%s", img.Conclusion, img.Title, img.Summary)
	}
	reg := e.verifier()
	for _, ref := range []string{e.reg.host + "/acme/etcd-bundle:v1.1.0", e.reg.host + "/acme/catalog:latest", e.reg.host + "/acme/catalog:" + sha} {
		if res := reg.Check(context.Background(), ref); res.Kind == registry.Exists {
			t.Errorf("%s names %s although it was never signed", ref, res.Digest)
		}
	}
}
