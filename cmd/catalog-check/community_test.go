package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// etcdCatalog is a rendered catalog of etcd with the given versions in channel stable.
func etcdCatalog(versions ...string) string {
	const image = "quay.io/community-operator-pipeline-prod/etcd"
	var b strings.Builder
	b.WriteString(etcdPackage + "---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n")
	prev := ""
	for _, v := range versions {
		b.WriteString("  - name: etcd.v" + v + "\n")
		if prev != "" {
			b.WriteString("    replaces: etcd.v" + prev + "\n")
		}
		prev = v
	}
	for _, v := range versions {
		b.WriteString(etcdBundle(image, v))
	}
	return b.String()
}

func redisCatalog() string {
	return strings.ReplaceAll(etcdCatalog("2.0.0"), "etcd", "redis")
}

// communityRepo is a repository in the community layout: catalogs/v4.16 to v4.18 (the policy lists them as
// catalogs/v4.*), operators/etcd with a ci.yaml naming bob, a policy template of redis owned by carol. It
// returns the base commit and a function making a pull request branch from it.
func communityRepo(t *testing.T) (dir, base string, pr func(branch string, files map[string]string, remove ...string) string) {
	t.Helper()
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", `version: 1
catalogs:
  - path: "catalogs/v4.*"
maintainers: [alice]
packages:
  redis: {owners: [carol]}
bundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true}]
templates:
  - path: templates/redis.yaml
    catalogs: [catalogs/v4.16/redis/catalog.yaml]
`)
	write("operators/etcd/ci.yaml", "reviewers:\n  - bob\n  - dave\nfbc:\n  enabled: true\n")
	write("operators/mongo/ci.yaml", "reviewers: [erin]\n")
	write("operators/etcd/catalog-templates/basic.yaml", "schema: olm.template.basic\nentries: []\n")
	write("catalogs/v4.16/etcd/catalog.yaml", etcdCatalog("1.0.0"))
	write("catalogs/v4.17/etcd/catalog.yaml", etcdCatalog("1.0.0"))
	write("catalogs/v4.16/redis/catalog.yaml", redisCatalog())
	write("catalogs/v4.18/etcd/catalog.yaml", etcdCatalog("1.0.0"))
	write("templates/redis.yaml", "schema: olm.template.basic\nentries:\n  - {schema: olm.package, name: redis, defaultChannel: stable}\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base = git("rev-parse", "HEAD")
	pr = func(branch string, files map[string]string, remove ...string) string {
		git("checkout", "-q", "-b", branch, base)
		for name, body := range files {
			write(name, body)
		}
		for _, name := range remove {
			git("rm", "-q", "-r", name)
		}
		git("add", "-A")
		git("commit", "-q", "--allow-empty", "-m", branch)
		return git("rev-parse", "HEAD")
	}
	return dir, base, pr
}

// A package's ci.yaml reviewers own all of it, its rendered catalogs under every root included; a policy
// owner owns the package's templates; catalog roots may be patterns, resolved on the base (issue 26.5 and
// 28.1).
func TestCheckCommunityOwnership(t *testing.T) {
	dir, base, pr := communityRepo(t)
	update := pr("update", map[string]string{
		"catalogs/v4.16/etcd/catalog.yaml": etcdCatalog("1.0.0", "1.1.0"),
		"catalogs/v4.17/etcd/catalog.yaml": etcdCatalog("1.0.0", "1.1.0"),
	})
	ciYaml := pr("ci-yaml", map[string]string{"operators/etcd/ci.yaml": "reviewers: [bob, dave, erin]\n"})
	template := pr("template", map[string]string{"operators/etcd/catalog-templates/basic.yaml": "schema: olm.template.basic\nentries: [{schema: olm.package, name: etcd}]\n"})
	other := pr("other", map[string]string{"catalogs/v4.16/redis/catalog.yaml": strings.ReplaceAll(etcdCatalog("2.0.0", "2.1.0"), "etcd", "redis")})
	policyTemplate := pr("policy-template", map[string]string{"templates/redis.yaml": "schema: olm.template.basic\nentries:\n  - {schema: olm.package, name: redis, defaultChannel: fast}\n"})
	smuggle := pr("smuggle", map[string]string{"catalogs/v4.16/etcd/catalog.yaml": etcdCatalog("1.0.0") + strings.ReplaceAll(etcdBundle("quay.io/x/redis", "9.0.0"), "etcd", "redis")})

	for _, tc := range []struct {
		name, head, author string
		code               int
		want               []string // "rule file" of the ownership errors
	}{
		{"a ci.yaml reviewer updates the package's catalogs", update, "bob", exitPass, nil},
		{"another reviewer too", update, "dave", exitPass, nil},
		{"a stranger updates them", update, "mallory", exitFail, []string{
			"ownership.not-owner catalogs/v4.16/etcd/catalog.yaml", "ownership.not-owner catalogs/v4.17/etcd/catalog.yaml"}},
		{"the policy owner of another package", update, "carol", exitFail, []string{
			"ownership.not-owner catalogs/v4.16/etcd/catalog.yaml", "ownership.not-owner catalogs/v4.17/etcd/catalog.yaml"}},
		{"a reviewer changes ci.yaml", ciYaml, "bob", exitPass, nil},
		{"a stranger changes ci.yaml", ciYaml, "mallory", exitFail, []string{"ownership.not-owner operators/etcd/ci.yaml"}},
		{"a reviewer changes a template", template, "dave", exitPass, nil},
		{"a reviewer changes another package's catalog", other, "bob", exitFail, []string{"ownership.not-owner catalogs/v4.16/redis/catalog.yaml"}},
		{"its policy owner does", other, "carol", exitPass, nil},
		{"the policy owner changes the package's policy template", policyTemplate, "carol", exitPass, nil},
		{"a reviewer of another package changes it", policyTemplate, "bob", exitFail, []string{"ownership.not-owner templates/redis.yaml"}},
		{"a reviewer puts another package's blob in the package's file", smuggle, "bob", exitFail, []string{"ownership.not-owner catalogs/v4.16/etcd/catalog.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v, out := checkJSON(t, dir, base, tc.head, tc.author, "ownership")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			var got []string
			for _, r := range v.Results {
				for _, f := range r.Findings {
					if f.Severity == "error" {
						got = append(got, f.Rule+" "+f.File)
					}
				}
			}
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors = %q\nwant     %q\n%s", got, tc.want, out)
			}
		})
	}
}

// A catalog root pattern that matches nothing on the base is an error on its line, and nothing is checked.
func TestCheckCatalogPatternMatchesNothing(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\nmaintainers: [alice]\ncatalogs:\n  - path: catalogs/v4.16\n  - path: \"catalogs/v5.*\"\n")
	write("catalogs/v4.16/etcd/catalog.yaml", etcdCatalog("1.0.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), []string{"check", "--repo", dir, "--base", "HEAD", "--head", "HEAD", "--author", "alice"},
		&out, &errb, env{getenv: func(string) string { return "" }})
	if code != exitCannotRun {
		t.Errorf("exit %d, want %d\n%s%s", code, exitCannotRun, out.String(), errb.String())
	}
	if want := ".catalogbot.yaml:5:5: catalog pattern catalogs/v5.* matches no directory of this revision"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errb.String())
	}
}

// A package is new only when the repository has never held it: promoting a package to another release's
// catalog, or adding one that has only a bundle folder so far, is an ordinary change of its owners (issue 28.2).
func TestCheckNewPackageMeansNewToTheRepository(t *testing.T) {
	dir, base, pr := communityRepo(t)
	firstCatalog := pr("mongo-first-catalog", map[string]string{"catalogs/v4.16/mongo/catalog.yaml": strings.ReplaceAll(etcdCatalog("1.0.0"), "etcd", "mongo")})
	redisTo17 := pr("redis-to-v4.17", map[string]string{"catalogs/v4.17/redis/catalog.yaml": redisCatalog()})
	fresh := pr("fresh", map[string]string{"catalogs/v4.17/kafka/catalog.yaml": strings.ReplaceAll(etcdCatalog("1.0.0"), "etcd", "kafka")})
	freshFolder := pr("fresh-folder", map[string]string{"operators/kafka/ci.yaml": "reviewers: [mallory]\n", "operators/kafka/Makefile": "OPM_VERSION ?= v1.46.0\n"})
	for _, tc := range []struct {
		name, head, author string
		code               int
		want               []string
	}{
		{"the policy owner promotes a package to another catalog", redisTo17, "carol", exitPass, nil},
		{"a stranger does", redisTo17, "mallory", exitFail, []string{"ownership.not-owner catalogs/v4.17/redis/catalog.yaml"}},
		{"a ci.yaml reviewer gives the package its first catalog", firstCatalog, "erin", exitPass, nil},
		{"the folder of a package the repository never held: one finding", freshFolder, "mallory", exitFail, []string{"ownership.new-package operators/kafka/Makefile"}},
		{"a package the repository never held", fresh, "bob", exitFail, []string{"ownership.new-package catalogs/v4.17/kafka/catalog.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v, out := checkJSON(t, dir, base, tc.head, tc.author, "ownership")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			got := findingsOf(v, "ownership")
			for i := range got {
				got[i] = strings.TrimSuffix(strings.Fields(got[i])[0]+" "+strings.Split(strings.Fields(got[i])[1], ":")[0], " ")
			}
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings = %q\nwant       %q\n%s", got, tc.want, out)
			}
		})
	}
}

// A pull request that removes every file of a catalog root (git then has no such folder) is judged like any
// change: the removal is the package owners' to make, and immutability reports the released bundles it removes
// (issue 28.4; it was `open .: file does not exist`, exit 2).
func TestCheckRootEmptied(t *testing.T) {
	dir, base, pr := communityRepo(t)
	emptied := pr("remove-v4.18", nil, "catalogs/v4.18")
	for _, tc := range []struct {
		author string
		want   []string
	}{
		{"bob", []string{"immutability.bundle-removed catalogs/v4.18/etcd/catalog.yaml", "immutability.entry-removed catalogs/v4.18/etcd/catalog.yaml"}},
		{"mallory", []string{"immutability.bundle-removed catalogs/v4.18/etcd/catalog.yaml", "immutability.entry-removed catalogs/v4.18/etcd/catalog.yaml", "ownership.not-owner catalogs/v4.18/etcd/catalog.yaml"}},
	} {
		code, v, out := checkJSON(t, dir, base, emptied, tc.author, "ownership,validation,immutability,crd-safety,templates")
		if code != exitFail {
			t.Errorf("%s: exit %d, want %d\n%s", tc.author, code, exitFail, out)
		}
		var got []string
		for _, r := range v.Results {
			for _, f := range r.Findings {
				if f.Severity == "error" {
					got = append(got, f.Rule+" "+f.File)
				}
			}
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: errors = %q\nwant     %q\n%s", tc.author, got, tc.want, out)
		}
	}
}

// An operator leaving the repository takes its ci.yaml, templates and rendered catalogs with it: the
// templates its base ci.yaml mapped are gone with what they rendered, so there is no drift to report (it was
// template.drift-mapping on every template in the community replay); a template removed while its catalog
// stays is still a broken mapping.
func TestCheckOperatorRemovedWithItsTemplates(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: \"catalogs/v4.*\"}]\nmaintainers: [alice]\nbundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true}]\n")
	write("operators/etcd/ci.yaml", "reviewers: [bob]\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names: [\"v4.16\", \"v4.17\"]\n")
	write("operators/etcd/catalog-templates/basic.yaml", "schema: olm.template.basic\nentries: []\n")
	write("catalogs/v4.16/etcd/catalog.yaml", etcdCatalog("1.0.0"))
	write("catalogs/v4.17/etcd/catalog.yaml", etcdCatalog("1.0.0"))
	write("catalogs/v4.16/redis/catalog.yaml", redisCatalog())
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	branch := func(name string, remove ...string) string {
		git("checkout", "-q", "-b", name, base)
		git(append([]string{"rm", "-q", "-r"}, remove...)...)
		git("commit", "-q", "-m", name)
		return git("rev-parse", "HEAD")
	}
	gone := branch("remove-etcd", "operators/etcd", "catalogs/v4.16/etcd", "catalogs/v4.17/etcd")
	kept := branch("remove-template", "operators/etcd/catalog-templates/basic.yaml")
	keptOne := branch("remove-template-and-one-catalog", "operators/etcd/catalog-templates/basic.yaml", "catalogs/v4.16/etcd")

	code, v, out := checkJSON(t, dir, base, gone, "bob", "templates")
	if code != exitPass || len(findingsOf(v, "templates")) != 0 {
		t.Errorf("operator removed: exit %d, findings %q, want %d and none\n%s", code, findingsOf(v, "templates"), exitPass, out)
	}
	for name, head := range map[string]string{"template removed": kept, "template and one of its catalogs removed": keptOne} {
		code, v, out = checkJSON(t, dir, base, head, "bob", "templates")
		if fs := findingsOf(v, "templates"); code != exitFail || len(fs) == 0 || fs[0] != "template.drift-mapping operators/etcd/ci.yaml" {
			t.Errorf("%s: exit %d, findings %q, want %d and template.drift-mapping\n%s", name, code, fs, exitFail, out)
		}
	}
}

// Git as CI systems lay it out (issue 28.8): a clone made with --reference reads its objects through
// objects/info/alternates; a partial clone (--filter=blob:none) lacks blobs: those of files the pull request
// does not concern are left out, a needed one is "could not verify" naming it, never a pass.
func TestCheckAlternatesAndPartialClones(t *testing.T) {
	src, base, pr := communityRepo(t)
	head := pr("update", map[string]string{"catalogs/v4.16/etcd/catalog.yaml": etcdCatalog("1.0.0", "1.1.0")})
	_, git, _ := testRepo(t)
	git("-C", src, "config", "uploadpack.allowFilter", "true")
	git("-C", src, "config", "uploadpack.allowAnySHA1InWant", "true")
	clone := func(name string, args ...string) string {
		dst := t.TempDir() + "/" + name
		git(append(append([]string{"clone", "-q", "--bare", "--no-local"}, args...), "file://"+src, dst)...)
		git("-C", dst, "update-ref", "refs/heads/update", head)
		return dst
	}

	t.Run("alternates", func(t *testing.T) {
		dst := t.TempDir() + "/ref"
		git("clone", "-q", "--bare", "--reference", src, "file://"+src, dst)
		if _, err := os.Stat(dst + "/objects/info/alternates"); err != nil {
			t.Fatalf("git made no alternates file: %v", err)
		}
		if n := git("-C", dst, "count-objects"); !strings.HasPrefix(n, "0 objects") {
			t.Logf("the clone has objects of its own: %s", n)
		}
		if code, _, out := checkJSON(t, dst, base, head, "bob", "ownership,validation,immutability"); code != exitPass {
			t.Errorf("exit %d, want %d\n%s", code, exitPass, out)
		}
	})

	// fetchBlobs makes the partial clone dst fetch the blobs of rev's files, except those under skip.
	fetchBlobs := func(dst, rev string, skip ...string) {
		for line := range strings.Lines(git("-C", src, "ls-tree", "-r", rev)) {
			f := strings.Fields(line)
			if slices.ContainsFunc(skip, func(s string) bool { return strings.HasPrefix(f[3], s) }) {
				continue
			}
			git("-C", dst, "cat-file", "blob", f[2]) // a partial clone fetches what it is asked for
		}
	}
	t.Run("partial clone, unrelated blobs absent", func(t *testing.T) {
		dst := clone("partial", "--filter=blob:none")
		fetchBlobs(dst, base, "catalogs/v4.16/redis", "catalogs/v4.17", "catalogs/v4.18")
		fetchBlobs(dst, head, "catalogs/v4.16/redis", "catalogs/v4.17", "catalogs/v4.18")
		if out := git("-C", dst, "rev-list", "--objects", "--missing=print", "--all"); !strings.Contains(out, "?") {
			t.Fatal("the partial clone lacks no blob")
		}
		code, v, out := checkJSON(t, dst, base, head, "bob", "ownership,validation,immutability")
		if code != exitPass || v.Conclusion != "success" {
			t.Errorf("exit %d, want %d\n%s", code, exitPass, out)
		}
		if code, _, out := checkJSON(t, dst, base, head, "mallory", "ownership"); code != exitFail {
			t.Errorf("a stranger: exit %d, want %d\n%s", code, exitFail, out)
		}
	})
	t.Run("partial clone, a needed blob absent", func(t *testing.T) {
		dst := clone("needed", "--filter=blob:none")
		// The base side of the changed file is absent (v4.17 and v4.18 hold the same blob).
		fetchBlobs(dst, head, "catalogs/v4.17", "catalogs/v4.18")
		fetchBlobs(dst, base, "catalogs/v4.16/etcd", "catalogs/v4.17", "catalogs/v4.18")
		var stdout, stderr bytes.Buffer
		code := runEnv(context.Background(), []string{"check", "--repo", dst, "--base", base, "--head", head, "--author", "bob", "--checks", "ownership"},
			&stdout, &stderr, env{getenv: func(string) string { return "" }})
		if code != exitCannotRun {
			t.Errorf("exit %d, want %d\n%s%s", code, exitCannotRun, stdout.String(), stderr.String())
		}
		if want := "could not verify catalogs/v4.16/etcd/catalog.yaml of the base revision"; !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "partial clone") {
			t.Errorf("stderr lacks %q and the reason:\n%s", want, stderr.String())
		}
	})
	t.Run("partial clone, the package's ci.yaml absent", func(t *testing.T) {
		dst := clone("ci", "--filter=blob:none")
		fetchBlobs(dst, head, "operators/etcd/ci.yaml")
		fetchBlobs(dst, base, "operators/etcd/ci.yaml")
		var stdout, stderr bytes.Buffer
		code := runEnv(context.Background(), []string{"check", "--repo", dst, "--base", base, "--head", head, "--author", "bob", "--checks", "ownership"},
			&stdout, &stderr, env{getenv: func(string) string { return "" }})
		if code != exitCannotRun || !strings.Contains(stderr.String(), `could not verify who owns package "etcd": operators/etcd/ci.yaml`) {
			t.Errorf("exit %d, want %d naming ci.yaml\n%s%s", code, exitCannotRun, stdout.String(), stderr.String())
		}
	})
}

// Pruning (issue 28.3): the policy's removals let the package's owners remove pre-release versions and the
// entries of nightly channels; anything else removed from released content stays an immutability error, and
// a stranger's removal is the owners' to approve.
func TestCheckRemovalsThePolicyAllows(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", `version: 1
catalogs: [{path: "catalogs/*"}]
maintainers: [alice]
bundles: [{path: operators, ownersFromCIYaml: true}]
removals:
  - packages: [etcd]
    versions: [prerelease]
  - channels: ["*-nightly"]
`)
	write("operators/etcd/ci.yaml", "reviewers: [bob]\n")
	withChannel := func(versions ...string) string {
		c := etcdCatalog(versions...)
		return c + "---\nschema: olm.channel\npackage: etcd\nname: stable-nightly\nentries:\n  - name: etcd.v" + versions[0] + "\n"
	}
	write("catalogs/v4.16/etcd/catalog.yaml", withChannel("1.0.0", "1.1.0-nightly.1", "1.2.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	pr := func(branch, content string) string {
		git("checkout", "-q", "-b", branch, base)
		write("catalogs/v4.16/etcd/catalog.yaml", content)
		git("commit", "-q", "-am", branch)
		return git("rev-parse", "HEAD")
	}
	nightly := pr("prune-nightly", strings.Replace(withChannel("1.0.0", "1.2.0"), "    replaces: etcd.v1.0.0\n", "", 1))
	release := pr("remove-release", withChannel("1.0.0", "1.1.0-nightly.1"))
	entry := pr("nightly-channel-entry", etcdCatalog("1.0.0", "1.1.0-nightly.1", "1.2.0")+"---\nschema: olm.channel\npackage: etcd\nname: stable-nightly\nentries:\n  - name: etcd.v1.1.0-nightly.1\n")

	for _, tc := range []struct {
		name, head, author string
		code               int
		want               []string // "check rule" of errors and allowed removals
	}{
		{"an owner prunes a nightly build", nightly, "bob", exitPass, []string{"immutability immutability.removal-allowed", "immutability immutability.removal-allowed"}},
		{"a stranger does", nightly, "mallory", exitFail, []string{"immutability immutability.removal-allowed", "immutability immutability.removal-allowed", "ownership ownership.not-owner"}},
		{"an owner removes a release", release, "bob", exitFail, []string{"immutability immutability.bundle-removed", "immutability immutability.entry-removed"}},
		{"an owner changes a nightly channel's entries", entry, "bob", exitPass, []string{"immutability immutability.removal-allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v, out := checkJSON(t, dir, base, tc.head, tc.author, "ownership,immutability")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			var got []string
			for _, r := range v.Results {
				for _, f := range r.Findings {
					if f.Severity == "error" || f.Rule == "immutability.removal-allowed" {
						got = append(got, r.Check+" "+f.Rule)
					}
				}
			}
			slices.Sort(got)
			got, want := slices.Compact(got), slices.Compact(tc.want)
			if !slices.Equal(got, want) {
				t.Errorf("findings = %q\nwant       %q\n%s", got, want, out)
			}
		})
	}
}

// Without a policy, --catalog takes patterns too, resolved on the base.
func TestCheckCatalogFlagPattern(t *testing.T) {
	dir, git, write := testRepo(t)
	write("catalogs/v4.16/etcd/catalog.yaml", etcdCatalog("1.0.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	git("checkout", "-q", "-b", "pr")
	write("catalogs/v4.16/etcd/catalog.yaml", etcdCatalog("1.0.0", "1.1.0"))
	git("commit", "-q", "-am", "pr")
	for _, tc := range []struct {
		pattern, want string
		code          int
	}{
		{"catalogs/v4.*", "changes package \"etcd\"", exitFail}, // judged: nobody owns etcd without a policy
		{"catalogs/v5.*", "the catalog roots given: catalog pattern catalogs/v5.* matches no directory", exitCannotRun},
	} {
		var stdout, stderr bytes.Buffer
		code := runEnv(context.Background(), []string{"check", "--repo", dir, "--base", "main", "--head", "pr", "--author", "bob", "--checks", "ownership", "--catalog", tc.pattern},
			&stdout, &stderr, env{getenv: func(string) string { return "" }})
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("--catalog %s: exit %d, want %d and %q\n%s%s", tc.pattern, code, tc.code, tc.want, stdout.String(), stderr.String())
		}
	}
}

// A partial clone lacking a file whose folder does not name the package: with the file summary index of an
// earlier run (--cache-dir), the check knows the file holds blobs of the package the pull request touches and
// says it cannot verify it, naming the file.
func TestCheckPartialCloneWithSummaryIndex(t *testing.T) {
	src, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\npackages: {etcd: {owners: [bob]}}\n")
	write("catalog/etcd/catalog.yaml", etcdCatalog("1.0.0"))
	write("catalog/shared/more.yaml", "---\nschema: olm.deprecations\npackage: etcd\nentries:\n  - reference: {schema: olm.bundle, name: etcd.v1.0.0}\n    message: use 1.1.0\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	write("catalog/etcd/catalog.yaml", etcdCatalog("1.0.0", "1.1.0"))
	git("commit", "-q", "-am", "pr")
	head := git("rev-parse", "HEAD")
	git("config", "uploadpack.allowFilter", "true")
	dst := t.TempDir() + "/partial"
	git("clone", "-q", "--bare", "--no-local", "--filter=blob:none", "file://"+src, dst)
	for _, rev := range []string{base, head} {
		for line := range strings.Lines(git("ls-tree", "-r", rev)) {
			if f := strings.Fields(line); f[3] != "catalog/shared/more.yaml" {
				git("-C", dst, "cat-file", "blob", f[2])
			}
		}
	}
	cache := t.TempDir()
	run := func(repo string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := runEnv(context.Background(), []string{"check", "--repo", repo, "--base", base, "--head", head, "--author", "bob",
			"--checks", "ownership,validation", "--cache-dir", cache}, &stdout, &stderr, env{getenv: func(string) string { return "" }})
		return code, stdout.String() + stderr.String()
	}
	if code, out := run(src); code != exitPass { // a full clone: the index learns what more.yaml holds
		t.Fatalf("full clone: exit %d\n%s", code, out)
	}
	code, out := run(dst)
	if code != exitCannotRun || !strings.Contains(out, `could not verify package "etcd": catalog/shared/more.yaml holds blobs of it`) {
		t.Errorf("exit %d, want %d naming catalog/shared/more.yaml\n%s", code, exitCannotRun, out)
	}
}

// A package folder need not be named after its package (the community's operators/konflux holds package
// konflux-operator, and its catalogs are catalogs/<version>/konflux): the reviewers in a folder's ci.yaml own
// the packages that folder's bundle directories declare on the base branch, and nothing else.
func TestCheckPackageFolderNamedOtherwise(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: \"catalogs/v4.*\"}]\nmaintainers: [alice]\nbundles: [{path: operators, ownersFromCIYaml: true}]\n")
	inFolder := func(folder string, files map[string]string) map[string]string {
		out := map[string]string{}
		for name, body := range files {
			out[strings.Replace(name, "operators/etcd/", "operators/"+folder+"/", 1)] = body
		}
		return out
	}
	write("operators/kon/ci.yaml", "reviewers: [gb]\n")
	for name, body := range inFolder("kon", etcdBundleFiles("1.0.0", "etcd", "registry+v1")) {
		write(name, body)
	}
	write("operators/evil/ci.yaml", "reviewers: [mallory]\n")
	write("catalogs/v4.16/kon/catalog.yaml", etcdCatalog("1.0.0"))
	write("catalogs/v4.16/redis/catalog.yaml", redisCatalog())
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	pr := branchFrom(git, write, base)
	update := pr("update", map[string]string{"catalogs/v4.16/kon/catalog.yaml": etcdCatalog("1.0.0", "1.1.0")})
	bundleDir := pr("bundle", inFolder("kon", etcdBundleFiles("1.1.0", "etcd", "registry+v1")))
	smuggle := pr("smuggle", map[string]string{"catalogs/v4.16/kon/catalog.yaml": etcdCatalog("1.0.0") + strings.ReplaceAll(etcdBundle("quay.io/x/redis", "9.0.0"), "etcd", "redis")})
	elsewhere := pr("elsewhere", map[string]string{"catalogs/v4.16/evil/catalog.yaml": etcdCatalog("1.0.0", "1.1.0")})
	for _, tc := range []struct {
		name, head, author string
		code               int
		want               []string
	}{
		{"a reviewer of the folder updates its package's catalog", update, "gb", exitPass, nil},
		{"a stranger does", update, "mallory", exitFail, []string{"ownership.not-owner catalogs/v4.16/kon/catalog.yaml"}},
		{"a reviewer of the folder adds a bundle directory of its package", bundleDir, "gb", exitPass, nil},
		{"a reviewer of the folder puts another package's blob in its catalog", smuggle, "gb", exitFail, []string{"ownership.not-owner catalogs/v4.16/kon/catalog.yaml"}},
		{"the reviewer of a folder whose bundles do not declare the package", elsewhere, "mallory", exitFail, []string{"ownership.not-owner catalogs/v4.16/evil/catalog.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v, out := checkJSON(t, dir, base, tc.head, tc.author, "ownership")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			var got []string
			for _, f := range findingsOf(v, "ownership") {
				if fields := strings.Fields(f); len(fields) >= 2 && strings.HasPrefix(fields[0], "ownership.") {
					got = append(got, fields[0]+" "+strings.Split(fields[1], ":")[0])
				}
			}
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings = %q\nwant       %q\n%s", got, tc.want, out)
			}
		})
	}
}

// A bundle pull request that also adds the bundle to its package's template, by the tag the image pattern
// gives it (as community authors do): the catalog update has nothing left to add, so the preview renders the
// template as the pull request leaves it — the bundle once, not a second time by digest (it was
// bundle.duplicate on every such pull request of the community replay).
func TestCheckBundleAddedToItsTemplateByTheAuthor(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: \"catalogs/v4.*\"}]\nmaintainers: [alice]\n"+
		"bundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true, image: \"quay.io/x/{package}:{version}\"}]\n")
	write("catalogs/v4.16/.keep", "")
	write("operators/etcd/ci.yaml", "reviewers: [bob]\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: semver.yaml\n    type: olm.semver\n    catalog_names: [\"v4.16\"]\n")
	semver := func(versions ...string) string {
		s := "Schema: olm.semver\nGenerateMajorChannels: true\nGenerateMinorChannels: false\nCandidate:\n  Bundles:\n"
		for _, v := range versions {
			s += "  - Image: quay.io/x/etcd:" + v + "\n"
		}
		return s
	}
	write("operators/etcd/catalog-templates/semver.yaml", semver("1.0.0"))
	for name, body := range etcdBundleFiles("1.0.0", "etcd", "registry+v1") {
		write(name, body)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	git("checkout", "-q", "-b", "mixed", base)
	for name, body := range etcdBundleFiles("1.1.0", "etcd", "registry+v1") {
		write(name, body)
	}
	write("operators/etcd/catalog-templates/semver.yaml", semver("1.0.0", "1.1.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "etcd 1.1.0 and its template entry")
	head := git("rev-parse", "HEAD")

	code, v, out := checkJSON(t, dir, base, head, "bob", "validation")
	for _, f := range findingsOf(v, "validation") {
		if strings.HasPrefix(f, "bundle.duplicate") || strings.HasPrefix(f, "preview.") {
			t.Errorf("finding %s\n%s", f, out)
		}
	}
	if code != exitPass {
		t.Errorf("exit %d, want %d\n%s", code, exitPass, out)
	}
}

// A difference between a catalog and its template that the base branch already has is not the doing of a
// pull request that changes neither of them nor the package's bundles (here one that maps the template to a
// new catalog in ci.yaml): a warning saying so, not a failure; the same difference is an error in a pull
// request that changes the catalog.
func TestCheckDriftAlreadyOnTheBase(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: \"catalogs/v4.*\"}]\nmaintainers: [alice]\nbundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true}]\n")
	mapping := func(versions ...string) string {
		return "reviewers: [bob]\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names: [\"" + strings.Join(versions, "\", \"") + "\"]\n"
	}
	tmpl := "schema: olm.template.basic\nentries:\n  - {schema: olm.package, name: etcd, defaultChannel: stable}\n"
	write("operators/etcd/catalog-templates/basic.yaml", tmpl)
	var out, errb bytes.Buffer
	if code := runEnv(context.Background(), []string{"template", "render", dir + "/operators/etcd/catalog-templates/basic.yaml", "--output", "yaml"}, &out, &errb, env{getenv: func(string) string { return "" }}); code != exitPass {
		t.Fatalf("template render: exit %d: %s", code, errb.String())
	}
	rendered := out.String()
	write("operators/etcd/ci.yaml", mapping("v4.16"))
	write("catalogs/v4.16/etcd/catalog.yaml", strings.Replace(rendered, "name: etcd", "name: etcd\ndescription: edited by hand", 1))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	pr := branchFrom(git, write, base)
	promote := pr("promote", map[string]string{"operators/etcd/ci.yaml": mapping("v4.16", "v4.17"), "catalogs/v4.17/etcd/catalog.yaml": rendered})
	touch := pr("touch", map[string]string{"catalogs/v4.16/etcd/catalog.yaml": strings.Replace(rendered, "name: etcd", "name: etcd\ndescription: edited again", 1)})

	code, v, outJSON := checkJSON(t, dir, base, promote, "bob", "templates")
	if code != exitPass {
		t.Errorf("mapping a new catalog: exit %d, want %d\n%s", code, exitPass, outJSON)
	}
	if !strings.Contains(outJSON, "already so on the base branch") {
		t.Errorf("the base's difference is not reported as a warning:\n%s", outJSON)
	}
	code, v, outJSON = checkJSON(t, dir, base, touch, "bob", "templates")
	if fs := findingsOf(v, "templates"); code != exitFail || len(fs) == 0 {
		t.Errorf("changing the drifted catalog: exit %d, findings %q, want %d\n%s", code, fs, exitFail, outJSON)
	}
}

// branchFrom returns a function that makes a branch from base with files written, commits it and returns the
// commit (a pull request's head).
func branchFrom(git func(args ...string) string, write func(name, body string), base string) func(branch string, files map[string]string) string {
	return func(branch string, files map[string]string) string {
		git("checkout", "-q", "-b", branch, base)
		for name, body := range files {
			write(name, body)
		}
		git("add", "-A")
		git("commit", "-q", "-m", branch)
		return git("rev-parse", "HEAD")
	}
}
