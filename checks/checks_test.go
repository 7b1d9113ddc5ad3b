package checks_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// gitRepo is a real git repository in a temp dir, driven by the git binary.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+r.dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *gitRepo) write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *gitRepo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

const testPolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [alice]
packages:
  etcd: { owners: [bob] }
  redis: { owners: [carol, "@acme/redis-team"] }
newPackages: maintainers
protectedPaths: [".github/**"]
`

// crdDoc is a CRD for widgets.example.com whose v1 spec has the given string fields.
func crdDoc(fields ...string) string {
	var props strings.Builder
	for _, f := range fields {
		fmt.Fprintf(&props, "                %s: {type: string}\n", f)
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
` + props.String()
}

// bundle renders an olm.bundle blob of pkg at version, replacing prev if set, carrying a CRD.
func bundle(pkg, version string, crdFields ...string) string {
	obj := base64.StdEncoding.EncodeToString([]byte(crdDoc(crdFields...)))
	return fmt.Sprintf(`---
schema: olm.bundle
package: %[1]s
name: %[1]s.v%[2]s
image: quay.io/acme/%[1]s-bundle@sha256:%[3]s
properties:
  - type: olm.package
    value: {packageName: %[1]s, version: %[2]s}
  - type: olm.bundle.object
    value: {data: %[4]s}
`, pkg, version, strings.Repeat("a", 64), obj)
}

func pkgHeader(pkg string, entries ...string) string {
	var es strings.Builder
	prev := ""
	for _, v := range entries {
		fmt.Fprintf(&es, "  - name: %s.v%s\n", pkg, v)
		if prev != "" {
			fmt.Fprintf(&es, "    replaces: %s.v%s\n", pkg, prev)
		}
		prev = v
	}
	return fmt.Sprintf(`---
schema: olm.package
name: %[1]s
defaultChannel: stable
---
schema: olm.channel
package: %[1]s
name: stable
entries:
%[2]s`, pkg, es.String())
}

// seed commits the base: policy and two valid packages.
func seed(r *gitRepo) string {
	r.write(".catalogbot.yaml", testPolicy)
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0")+bundle("etcd", "1.0.0", "size", "version"))
	r.write("catalogs/v4.16/redis/catalog.yaml", pkgHeader("redis", "2.0.0")+bundle("redis", "2.0.0", "replicas"))
	r.write("README.md", "catalog\n")
	return r.commit("base")
}

type verdict map[string]checks.Result

func buildPR(t *testing.T, r *gitRepo, base, head, author string, teams policy.TeamResolver) *checks.PullRequest {
	t.Helper()
	ctx := context.Background()
	repo, err := gitfs.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: base, Head: head, Author: author, Teams: teams, DiffFromMergeBase: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := checks.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	return pr
}

func runChecks(t *testing.T, r *gitRepo, base, head, author string, teams policy.TeamResolver) verdict {
	t.Helper()
	pr := buildPR(t, r, base, head, author, teams)
	runner := checks.NewRunner([]checks.Check{checks.Ownership{}, checks.Validation{}, checks.Immutability{}, checks.CRDSafety{}})
	out := verdict{}
	for _, res := range runner.Run(context.Background(), pr) {
		out[res.Check] = res
	}
	return out
}

func (v verdict) expect(t *testing.T, check string, want checks.Conclusion, rules ...string) {
	t.Helper()
	res, ok := v[check]
	if !ok {
		t.Fatalf("no result for %s", check)
	}
	if res.Conclusion != want {
		t.Errorf("%s: conclusion = %s, want %s; err=%q findings:\n%s", check, res.Conclusion, want, res.Err, findingsText(res.Findings))
	}
	for _, rule := range rules {
		if !hasRule(res.Findings, rule) {
			t.Errorf("%s: no %s finding among:\n%s", check, rule, findingsText(res.Findings))
		}
	}
}

func hasRule(fs []catalog.Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

func findingsText(fs []catalog.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s\n", f.Severity, f)
	}
	return b.String()
}

func TestOwnerAddsBundle(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundle("etcd", "1.0.0", "size", "version")+bundle("etcd", "1.1.0", "size", "version", "tls"))
	head := r.commit("etcd 1.1.0")
	v := runChecks(t, r, base, head, "bob", nil)
	for _, c := range []string{"ownership", "validation", "immutability", "crd-safety"} {
		v.expect(t, c, checks.Success)
	}
	if !strings.Contains(v["crd-safety"].Summary, "etcd.v1.0.0` → `etcd.v1.1.0") {
		t.Errorf("crd-safety summary does not name the compared upgrade:\n%s", v["crd-safety"].Summary)
	}
	// Logins compare case-insensitively.
	runChecks(t, r, base, head, "BOB", nil).expect(t, "ownership", checks.Success)
}

func TestNonOwnerIsRefused(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundle("etcd", "1.0.0", "size", "version")+bundle("etcd", "1.1.0", "size", "version"))
	head := r.commit("etcd 1.1.0 by a stranger")
	// bobby contains bob: a substring test would let him through.
	v := runChecks(t, r, base, head, "bobby", nil)
	v.expect(t, "ownership", checks.Failure, "ownership.not-owner")
	f := v["ownership"].Findings[0]
	if f.File != "catalogs/v4.16/etcd/catalog.yaml" || f.Line < 1 {
		t.Errorf("finding position = %s, want a line in catalogs/v4.16/etcd/catalog.yaml", f.Position)
	}
	// A maintainer may.
	runChecks(t, r, base, head, "alice", nil).expect(t, "ownership", checks.Success)
}

func TestAuthorAddsThemselfToOwners(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	r.write(".catalogbot.yaml", strings.Replace(testPolicy, "owners: [bob]", "owners: [bob, mallory]", 1))
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundle("etcd", "1.0.0", "size", "version")+bundle("etcd", "1.1.0", "size", "version"))
	head := r.commit("make me an owner")
	v := runChecks(t, r, base, head, "mallory", nil)
	v.expect(t, "ownership", checks.Failure, "ownership.not-owner", "ownership.protected-path")
}

func TestBundleHiddenInOwnFolder(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	// bob owns etcd and slips a redis bundle (and channel entry) into etcd's folder.
	r.write("catalogs/v4.16/etcd/extra.yaml", bundle("redis", "2.1.0", "replicas"))
	head := r.commit("sneak")
	v := runChecks(t, r, base, head, "bob", redisTeam)
	v.expect(t, "ownership", checks.Failure, "ownership.not-owner")
	for _, f := range v["ownership"].Findings {
		if f.Package != "redis" || f.File != "catalogs/v4.16/etcd/extra.yaml" {
			t.Errorf("finding %v: want package redis at catalogs/v4.16/etcd/extra.yaml", f)
		}
	}
}

func TestRenameOfAnotherPackagesFolder(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	r.git("mv", "catalogs/v4.16/redis", "catalogs/v4.16/redis-old")
	head := r.commit("rename")
	v := runChecks(t, r, base, head, "bob", redisTeam)
	v.expect(t, "ownership", checks.Failure, "ownership.not-owner")
	v.expect(t, "validation", checks.Success)
	v.expect(t, "immutability", checks.Success) // same content, only moved
}

func TestSymlinkOutsideRepo(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	if err := os.Symlink("../../../../../etc/passwd", filepath.Join(r.dir, "catalogs/v4.16/etcd/passwd.yaml")); err != nil {
		t.Fatal(err)
	}
	head := r.commit("link")
	v := runChecks(t, r, base, head, "bob", nil)
	v.expect(t, "validation", checks.Failure, "load.symlink")
}

func TestRemovingReleasedBundle(t *testing.T) {
	r := newGitRepo(t)
	r.write(".catalogbot.yaml", testPolicy)
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundle("etcd", "1.0.0", "size")+bundle("etcd", "1.1.0", "size"))
	r.write("catalogs/v4.16/redis/catalog.yaml", pkgHeader("redis", "2.0.0")+bundle("redis", "2.0.0", "replicas"))
	base := r.commit("base")
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.1.0")+bundle("etcd", "1.1.0", "size"))
	head := r.commit("drop 1.0.0")
	v := runChecks(t, r, base, head, "bob", nil)
	v.expect(t, "immutability", checks.Failure, "immutability.bundle-removed", "immutability.entry-removed")
	// For a maintainer the same change is a warning.
	runChecks(t, r, base, head, "alice", nil).expect(t, "immutability", checks.Success, "immutability.bundle-removed")
}

func TestModifyingReleasedBundle(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0")+strings.Replace(bundle("etcd", "1.0.0", "size", "version"), "quay.io/acme/etcd-bundle", "quay.io/acme/etcd-fixed", 1))
	head := r.commit("rewrite")
	v := runChecks(t, r, base, head, "bob", nil)
	v.expect(t, "immutability", checks.Failure, "immutability.bundle-modified")
	if msg := v["immutability"].Findings[0].Message; !strings.Contains(msg, "image") {
		t.Errorf("message %q does not name the changed key", msg)
	}
}

func TestUnsafeCRDChange(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	// 1.1.0 drops the "version" field of widgets.example.com.
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundle("etcd", "1.0.0", "size", "version")+bundle("etcd", "1.1.0", "size"))
	head := r.commit("drop a field")
	v := runChecks(t, r, base, head, "bob", nil)
	v.expect(t, "crd-safety", checks.Failure)
	f := v["crd-safety"].Findings[0]
	if !strings.Contains(f.Message, "etcd.v1.0.0 → etcd.v1.1.0") || !strings.Contains(f.Message, "version") {
		t.Errorf("message %q should name the upgrade and the removed field", f.Message)
	}
	if f.File != "catalogs/v4.16/etcd/catalog.yaml" || f.Line == 0 {
		t.Errorf("position %s should be the olm.bundle.object line of the new bundle", f.Position)
	}
}

func TestInvalidCatalog(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	// A second head: 1.1.0 does not replace 1.0.0.
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0")+"  - name: etcd.v1.1.0\n"+bundle("etcd", "1.0.0", "size", "version")+bundle("etcd", "1.1.0", "size", "version"))
	head := r.commit("two heads")
	v := runChecks(t, r, base, head, "bob", nil)
	v.expect(t, "validation", checks.Failure)
	for _, f := range v["validation"].Findings {
		if !strings.HasPrefix(f.File, "catalogs/v4.16/") {
			t.Errorf("finding %v: file should be a repository path", f)
		}
	}
}

type teams map[string][]string

// redisTeam resolves the policy's only team, without bob in it.
var redisTeam = teams{"@acme/redis-team": {"dave"}}

func (tm teams) TeamMembers(_ context.Context, org, team string) ([]string, error) {
	m, ok := tm["@"+org+"/"+team]
	if !ok {
		return nil, fmt.Errorf("team @%s/%s unknown", org, team)
	}
	return m, nil
}

func TestTeamOwnership(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/redis/catalog.yaml", pkgHeader("redis", "2.0.0", "2.1.0")+bundle("redis", "2.0.0", "replicas")+bundle("redis", "2.1.0", "replicas"))
	head := r.commit("redis 2.1.0")
	runChecks(t, r, base, head, "dave", teams{"@acme/redis-team": {"Dave"}}).expect(t, "ownership", checks.Success)
	runChecks(t, r, base, head, "dave", teams{"@acme/redis-team": {"erin"}}).expect(t, "ownership", checks.Failure, "ownership.not-owner")
	// Unresolvable team: never a pass.
	runChecks(t, r, base, head, "dave", nil).expect(t, "ownership", checks.Neutral, "ownership.cannot-verify")
}

func TestNewPackageAndOtherFiles(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/kafka/catalog.yaml", pkgHeader("kafka", "0.1.0")+bundle("kafka", "0.1.0", "topic"))
	r.write("README.md", "changed\n")
	r.write(".github/workflows/x.yml", "on: push\n")
	head := r.commit("new package")
	v := runChecks(t, r, base, head, "bob", nil)
	v.expect(t, "ownership", checks.Failure, "ownership.new-package", "ownership.outside-catalog", "ownership.protected-path")
	v.expect(t, "validation", checks.Success)
	runChecks(t, r, base, head, "alice", nil).expect(t, "ownership", checks.Success)
}
