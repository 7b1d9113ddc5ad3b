package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/catalogbot/catalogbot/checks"
)

// checkJSON runs `catalog-check check` on two revisions and returns the exit code and the verdict.
func checkJSON(t *testing.T, dir, base, head, author, checks string) (int, verdict, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), []string{"check", "--repo", dir, "--base", base, "--head", head, "--author", author,
		"--checks", checks, "--output", "json"}, &out, &errb, env{getenv: func(string) string { return "" }})
	var v verdict
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("output is not JSON (%v):\n%s\n%s", err, out.String(), errb.String())
	}
	return code, v, out.String() + errb.String()
}

// findingsOf lists "rule file:line" of every finding of check name.
func findingsOf(v verdict, name string) []string {
	var out []string
	for _, r := range v.Results {
		if r.Check != name {
			continue
		}
		for _, f := range r.Findings {
			out = append(out, f.Rule+" "+f.File)
		}
	}
	return out
}

const redisPackage = "---\nschema: olm.package\nname: redis\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: redis\nname: stable\nentries:\n  - name: redis.v1.0.0\n---\nschema: olm.bundle\npackage: redis\nname: redis.v1.0.0\nimage: quay.io/acme/redis:v1.0.0\nproperties:\n  - type: olm.package\n    value: {packageName: redis, version: 1.0.0}\n"

// A package named in the policy is reserved before it exists: with newPackages: anyone, a stranger still may not
// add it; its listed owner may; an unlisted package stays open to anyone, and the summary does not call the
// stranger its owner.
func TestCheckReservedPackage(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\nnewPackages: anyone\npackages:\n  redis: {owners: [carol]}\n")
	write("catalog/etcd/catalog.yaml", etcdPackage+"---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n"+etcdBundle("quay.io/acme/etcd-bundle", "1.0.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	write("catalog/redis/catalog.yaml", redisPackage)
	git("add", "-A")
	git("commit", "-q", "-m", "add redis")
	head := git("rev-parse", "HEAD")

	code, v, out := checkJSON(t, dir, base, head, "mallory", "ownership")
	if code != exitFail {
		t.Errorf("mallory adding the reserved package redis: exit %d, want %d\n%s", code, exitFail, out)
	}
	if got := findingsOf(v, "ownership"); len(got) != 1 || got[0] != "ownership.not-owner catalog/redis/catalog.yaml" {
		t.Errorf("findings = %q, want one ownership.not-owner on catalog/redis/catalog.yaml", got)
	}
	if !strings.Contains(out, "reserves") || !strings.Contains(out, "@carol") {
		t.Errorf("the finding does not say the package is reserved for @carol:\n%s", out)
	}
	if code, _, out := checkJSON(t, dir, base, head, "carol", "ownership"); code != exitPass {
		t.Errorf("carol, the listed owner, adding redis: exit %d, want 0\n%s", code, out)
	}

	// An unlisted package under newPackages: anyone: allowed, and not called owned.
	git("checkout", "-q", "-b", "other", base)
	write("catalog/valkey/catalog.yaml", strings.ReplaceAll(redisPackage, "redis", "valkey"))
	git("add", "-A")
	git("commit", "-q", "-m", "add valkey")
	head2 := git("rev-parse", "HEAD")
	code, v, out = checkJSON(t, dir, base, head2, "mallory", "ownership")
	if code != exitPass {
		t.Errorf("mallory adding the unlisted valkey under newPackages: anyone: exit %d, want 0\n%s", code, out)
	}
	for _, r := range v.Results {
		if r.Check == "ownership" && (strings.Contains(r.Summary, "owns") || !strings.Contains(r.Summary, "does not make them an owner")) {
			t.Errorf("ownership summary = %q; it must not say mallory owns valkey", r.Summary)
		}
	}
}

// A catalog file the pull request brings that is larger than limits.maxFileBytes is refused before it is parsed:
// one finding on that file, the check fails. Files already in the base are not judged by the limit.
func TestCheckRefusesOversizedFile(t *testing.T) {
	for _, tc := range []struct {
		name, limit string
		size        int
	}{
		{"policy limit", "limits: {maxFileBytes: 4096}\n", 8 << 10},
		{"default limit of 16 MiB", "", 17 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, git, write := testRepo(t)
			write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\npackages:\n  etcd: {owners: [bob]}\n"+tc.limit)
			write("catalog/etcd/catalog.yaml", etcdPackage+"---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n"+etcdBundle("quay.io/acme/etcd-bundle", "1.0.0"))
			git("add", "-A")
			git("commit", "-q", "-m", "base")
			base := git("rev-parse", "HEAD")
			// A valid file made large by a long description.
			big := "---\nschema: olm.bundle\npackage: etcd\nname: etcd.v1.1.0\nimage: quay.io/acme/etcd-bundle:v1.1.0\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: 1.1.0}\n  - type: olm.bundle.object\n    value: {data: \"" + strings.Repeat("A", tc.size) + "\"}\n"
			write("catalog/etcd/big.yaml", big)
			git("add", "-A")
			git("commit", "-q", "-m", "big")
			head := git("rev-parse", "HEAD")
			code, v, out := checkJSON(t, dir, base, head, "bob", "ownership,validation")
			if code != exitFail {
				t.Errorf("exit %d, want %d", code, exitFail)
			}
			got := findingsOf(v, "validation")
			if len(got) != 1 || got[0] != "limits.file-too-large catalog/etcd/big.yaml" {
				t.Errorf("validation findings = %q, want one limits.file-too-large on catalog/etcd/big.yaml\n%s", got, out[:min(len(out), 2000)])
			}
		})
	}
}

// A stranger's pull request (the author owns none of the packages it touches) does not spend registry
// requests: crd-safety and images are skipped, said so, and nothing reaches the registry; the owner's own
// pull request runs them.
func TestCheckSkipsCostlyChecksForStrangers(t *testing.T) {
	var requests atomic.Int64
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\npackages:\n  etcd: {owners: [bob]}\n")
	image := host + "/acme/etcd-bundle"
	channel := "---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n"
	write("catalog/etcd/catalog.yaml", etcdPackage+channel+etcdBundle(image, "1.0.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	write("catalog/etcd/catalog.yaml", etcdPackage+channel+"  - name: etcd.v1.1.0\n    replaces: etcd.v1.0.0\n"+etcdBundle(image, "1.0.0")+etcdBundle(image, "1.1.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "upgrade")
	head := git("rev-parse", "HEAD")

	run := func(author string) (int, verdict) {
		var out, errb bytes.Buffer
		code := runEnv(context.Background(), []string{"check", "--repo", dir, "--base", base, "--head", head, "--author", author,
			"--insecure-registry", host, "--output", "json"}, &out, &errb, env{getenv: func(string) string { return "" }})
		var v verdict
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
		}
		return code, v
	}
	code, v := run("mallory")
	if code != exitFail {
		t.Errorf("mallory: exit %d, want %d", code, exitFail)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("a stranger's pull request sent %d registry requests, want none", n)
	}
	for _, r := range v.Results {
		if (r.Check == "crd-safety" || r.Check == "images") && r.Conclusion != checks.Skipped {
			t.Errorf("%s = %s for a stranger, want skipped", r.Check, r.Conclusion)
		}
	}
	run("bob")
	if requests.Load() == 0 {
		t.Error("the owner's pull request sent no registry request; the costly checks must run for owners")
	}
}
