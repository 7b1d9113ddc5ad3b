package main

import (
	"slices"
	"strings"
	"testing"
)

func etcdBundleFiles(version, pkg, mediatype string) map[string]string {
	ann := strings.NewReplacer("registry+v1", mediatype, "package.v1: etcd", "package.v1: "+pkg).Replace(bundleAnnotations)
	csv := strings.ReplaceAll(bundleCSV, "1.0.0", version)
	return map[string]string{
		"operators/etcd/" + version + "/metadata/annotations.yaml":   ann,
		"operators/etcd/" + version + "/manifests/etcd.csv.yaml":     csv,
		"operators/etcd/" + version + "/manifests/etcd.service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: etcd-metrics\nspec:\n  ports: [{port: 8443}]\n",
	}
}

// Pull requests that add or change bundle directories in the community layout (operators/<package>/<version>/,
// owners from ci.yaml), checked through `catalog-check check` on a real git repository.
func TestCheckBundlePullRequests(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nbundles: [{path: operators, ownersFromCIYaml: true}]\nmaintainers: [alice]\n")
	write("catalogs/v4.16/.keep", "")
	write("operators/etcd/ci.yaml", "---\nupdateGraph: replaces-mode\nreviewers:\n  - bob\n")
	for name, body := range etcdBundleFiles("1.0.0", "etcd", "registry+v1") {
		write(name, body)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")

	pr := func(branch string, files map[string]string) string {
		git("checkout", "-q", "-b", branch, base)
		for name, body := range files {
			write(name, body)
		}
		git("add", "-A")
		git("commit", "-q", "-m", branch)
		return git("rev-parse", "HEAD")
	}
	added := pr("add", etcdBundleFiles("1.1.0", "etcd", "registry+v1"))
	modified := pr("modify", map[string]string{"operators/etcd/1.0.0/manifests/etcd.csv.yaml": strings.ReplaceAll(bundleCSV, "1.0.0", "1.0.0") + "  displayName: etcd\n"})
	foreign := pr("foreign", etcdBundleFiles("1.2.0", "redis", "registry+v1"))
	invalid := pr("invalid", etcdBundleFiles("1.3.0", "etcd", "helm"))

	for _, tc := range []struct {
		name, head, author string
		code               int
		want               []string // "check rule file"
	}{
		{"a ci.yaml reviewer adds a version", added, "bob", exitPass, nil},
		{"a stranger adds a version", added, "mallory", exitFail, []string{"ownership ownership.not-owner operators/etcd/1.1.0/manifests/etcd.csv.yaml"}},
		{"a released bundle directory changes", modified, "bob", exitFail, []string{"immutability immutability.bundle-modified operators/etcd/1.0.0/manifests/etcd.csv.yaml"}},
		{"the annotations name another package", foreign, "bob", exitFail, []string{"ownership ownership.new-package operators/etcd/1.2.0/manifests/etcd.csv.yaml"}},
		{"an invalid bundle", invalid, "bob", exitFail, []string{"validation bundle.mediatype operators/etcd/1.3.0/metadata/annotations.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v, out := checkJSON(t, dir, base, tc.head, tc.author, "ownership,validation,immutability")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			var got []string
			for _, r := range v.Results {
				for _, f := range r.Findings {
					if f.Severity == "error" {
						got = append(got, r.Check+" "+f.Rule+" "+f.File)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors = %q\nwant     %q\n%s", got, tc.want, out)
			}
		})
	}
}
