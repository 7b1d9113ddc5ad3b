package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// findingSites lists "rule file:line" of every finding of check name (line 0 when it has none).
func findingSites(v verdict, name string) []string {
	var out []string
	for _, r := range v.Results {
		if r.Check != name {
			continue
		}
		for _, f := range r.Findings {
			out = append(out, fmt.Sprintf("%s %s:%d", f.Rule, f.File, f.Line))
		}
	}
	slices.Sort(out)
	return out
}

// Every way of changing what opm loads touches the packages whose content appears or disappears: ownership
// applies to them, immutability to released content that vanishes, and the findings sit on the changed line
// of the file that caused it. bob owns etcd; redis belongs to carol; the base catalog loads both.
func TestCheckChangesToWhatOpmLoads(t *testing.T) {
	etcd := etcdPackage + "---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n" + etcdBundle("quay.io/acme/etcd-bundle", "1.0.0")
	for _, tc := range []struct {
		name string
		base map[string]string // files beside the policy, etcd and redis
		pr   func(dir string, write func(name, body string))
		want []string // ownership and immutability findings, "rule file:line"
	}{
		{
			name: "an .indexignore added at the catalog root hides a package",
			pr: func(_ string, write func(string, string)) {
				write("catalog/.indexignore", "# hide it\nredis/\n")
			},
			want: []string{"immutability.bundle-removed catalog/.indexignore:1", "immutability.entry-removed catalog/.indexignore:1", "ownership.not-owner catalog/.indexignore:1"},
		},
		{
			name: "an .indexignore added deep in the package hides its file",
			pr: func(_ string, write func(string, string)) {
				write("catalog/redis/.indexignore", "catalog.yaml\n")
			},
			want: []string{"immutability.bundle-removed catalog/redis/.indexignore:1", "immutability.entry-removed catalog/redis/.indexignore:1", "ownership.not-owner catalog/redis/.indexignore:1"},
		},
		{
			name: "an edited .indexignore lets hidden content in",
			base: map[string]string{"catalog/.indexignore": "README.md\nredis/extra.yaml\n", "catalog/redis/extra.yaml": "---\nschema: olm.bundle\npackage: redis\nname: redis.v0.9.0\nimage: quay.io/acme/redis:v0.9.0\nproperties:\n  - type: olm.package\n    value: {packageName: redis, version: 0.9.0}\n"},
			pr: func(_ string, write func(string, string)) {
				write("catalog/.indexignore", "README.md\n")
			},
			want: []string{"ownership.not-owner catalog/.indexignore:1"},
		},
		{
			name: "a removed .indexignore lets hidden content in",
			base: map[string]string{"catalog/redis/.indexignore": "extra.yaml\n", "catalog/redis/extra.yaml": "---\nschema: olm.bundle\npackage: redis\nname: redis.v0.9.0\nimage: quay.io/acme/redis:v0.9.0\nproperties:\n  - type: olm.package\n    value: {packageName: redis, version: 0.9.0}\n"},
			pr: func(dir string, _ func(string, string)) {
				os.Remove(filepath.Join(dir, "catalog/redis/.indexignore"))
			},
			want: []string{"ownership.not-owner catalog/redis/.indexignore:0"},
		},
		{
			name: "a rename into an ignored folder",
			base: map[string]string{"catalog/.indexignore": "attic/\n"},
			pr: func(dir string, _ func(string, string)) {
				os.MkdirAll(filepath.Join(dir, "catalog/attic"), 0o755)
				os.Rename(filepath.Join(dir, "catalog/redis/catalog.yaml"), filepath.Join(dir, "catalog/attic/redis.yaml"))
			},
			want: []string{"immutability.bundle-removed catalog/redis/catalog.yaml:0", "immutability.entry-removed catalog/redis/catalog.yaml:0", "ownership.not-owner catalog/redis/catalog.yaml:0"},
		},
		{
			name: "a rename out of an ignored folder",
			base: map[string]string{"catalog/.indexignore": "attic/\n", "catalog/attic/redis-old.yaml": "---\nschema: olm.bundle\npackage: redis\nname: redis.v0.9.0\nimage: quay.io/acme/redis:v0.9.0\nproperties:\n  - type: olm.package\n    value: {packageName: redis, version: 0.9.0}\n"},
			pr: func(dir string, _ func(string, string)) {
				os.Rename(filepath.Join(dir, "catalog/attic/redis-old.yaml"), filepath.Join(dir, "catalog/redis/old.yaml"))
			},
			want: []string{"ownership.not-owner catalog/redis/old.yaml:2"},
		},
		{
			name: "a file becomes a directory",
			pr: func(dir string, write func(string, string)) {
				body, _ := os.ReadFile(filepath.Join(dir, "catalog/redis/catalog.yaml"))
				os.Remove(filepath.Join(dir, "catalog/redis/catalog.yaml"))
				write("catalog/redis/catalog.yaml/index.yaml", string(body))
			},
			want: []string{"ownership.not-owner catalog/redis/catalog.yaml/index.yaml:2", "ownership.not-owner catalog/redis/catalog.yaml:0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, git, write := testRepo(t)
			write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\npackages:\n  etcd: {owners: [bob]}\n  redis: {owners: [carol]}\n")
			write("catalog/etcd/catalog.yaml", etcd)
			write("catalog/redis/catalog.yaml", redisPackage)
			for name, body := range tc.base {
				write(name, body)
			}
			git("add", "-A")
			git("commit", "-q", "-m", "base")
			base := git("rev-parse", "HEAD")
			tc.pr(dir, write)
			git("add", "-A")
			git("commit", "-q", "-m", "pr")
			head := git("rev-parse", "HEAD")
			code, v, out := checkJSON(t, dir, base, head, "bob", "ownership,immutability")
			if code != exitFail {
				t.Errorf("exit %d, want %d (bob does not own redis)", code, exitFail)
			}
			got := append(findingSites(v, "ownership"), findingSites(v, "immutability")...)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings = %q\nwant       %q\n%s", got, tc.want, out)
			}
			if strings.Contains(tc.name, "indexignore") && !strings.Contains(out, "loaded by opm") {
				t.Errorf("no finding says which file made the content appear or disappear:\n%s", out)
			}
		})
	}
}
