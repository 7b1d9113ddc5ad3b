package checks_test

import (
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/checks"
)

// With bundle images not read, an upgrade whose CRDs are embedded is compared and one whose are not is "not
// embedded, not compared": the check is neutral and says which, never a pass.
func TestCRDSafetySomeCRDsNotEmbedded(t *testing.T) {
	r := newGitRepo(t)
	r.write(".catalogbot.yaml", testPolicy)
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0")+bundle("etcd", "1.0.0", "size"))
	r.write("catalogs/v4.16/redis/catalog.yaml", pkgHeader("redis", "1.0.0")+bundleWithImages("redis", "1.0.0", "quay.io/acme/redis-bundle:v1.0.0"))
	base := r.commit("base")
	r.git("checkout", "-q", "-b", "pr")
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0", "1.1.0")+bundle("etcd", "1.0.0", "size")+bundle("etcd", "1.1.0", "size"))
	r.write("catalogs/v4.16/redis/catalog.yaml", pkgHeader("redis", "1.0.0", "1.1.0")+
		bundleWithImages("redis", "1.0.0", "quay.io/acme/redis-bundle:v1.0.0")+bundleWithImages("redis", "1.1.0", "quay.io/acme/redis-bundle:v1.1.0"))
	head := r.commit("etcd and redis 1.1.0")

	v := runChecksWith(t, r, base, head, "alice", checks.CRDSafety{})
	v.expect(t, "crd-safety", checks.Neutral, "crd-safety.no-source")
	res := v["crd-safety"]
	if res.Title != "Some CRDs not embedded, not compared" {
		t.Errorf("title %q, want %q", res.Title, "Some CRDs not embedded, not compared")
	}
	for _, want := range []string{"`etcd.v1.0.0` → `etcd.v1.1.0` (replaces, channel `stable`): safe", "`redis.v1.1.0`: not compared with the 1 bundle it upgrades from: CRDs not embedded, not compared", "1 upgrade was not compared: CRDs not embedded"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, res.Summary)
		}
	}
}
