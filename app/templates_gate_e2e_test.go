package app

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/catalogbot/catalogbot/app/store"
)

// gateRegistry is go-containerregistry's registry on loopback, counting every request and those for the
// redis template's bundle images.
type gateRegistry struct {
	host          string
	requests      atomic.Int64
	redisRequests atomic.Int64
}

func newGateRegistry(t *testing.T) *gateRegistry {
	t.Helper()
	g := &gateRegistry{}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		if strings.Contains(r.URL.Path, "/acme/redis-bundle/") {
			g.redisRequests.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.host = strings.TrimPrefix(srv.URL, "http://")
	return g
}

// templateGatePR seeds a pull request (by bob, as every e2e pull request) in which the redis template gains
// a bundle image on host that no catalog of the base holds and no bundle directory builds, so the templates
// check can only verify it by pulling; policyExtra ends the base's policy (maintainers, images rules).
func templateGatePR(host, policyExtra string) func(w *workRepo) (string, string) {
	return func(w *workRepo) (string, string) {
		policy := "version: 1\ncatalogs:\n  - path: catalogs/v4.16\n" +
			"templates:\n  - path: templates/redis.yaml\n    catalogs: [catalogs/v4.16/redis/catalog.yaml]\n" + policyExtra
		img := func(c string) string { return host + "/acme/redis-bundle@sha256:" + strings.Repeat(c, 64) }
		tmpl := func(digests ...string) string {
			s := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: redis\n    defaultChannel: stable\n" +
				"  - schema: olm.channel\n    package: redis\n    name: stable\n    entries:\n      - name: redis.v1.0.0\n"
			if len(digests) > 1 {
				s += "      - name: redis.v1.1.0\n        replaces: redis.v1.0.0\n"
			}
			for _, d := range digests {
				s += "  - schema: olm.bundle\n    image: " + img(d) + "\n"
			}
			return s
		}
		cat := func(digests ...string) string {
			s := "---\ndefaultChannel: stable\nname: redis\nschema: olm.package\n---\nentries:\n- name: redis.v1.0.0\n"
			if len(digests) > 1 {
				s += "- name: redis.v1.1.0\n  replaces: redis.v1.0.0\n"
			}
			s += "name: stable\npackage: redis\nschema: olm.channel\n"
			for i, d := range digests {
				v := []string{"1.0.0", "1.1.0"}[i]
				s += "---\nimage: " + img(d) + "\nname: redis.v" + v + "\npackage: redis\nproperties:\n- type: olm.package\n  value:\n    packageName: redis\n    version: " + v + "\nschema: olm.bundle\n"
			}
			return s
		}
		base := w.commit(map[string]string{".catalogbot.yaml": policy, "templates/redis.yaml": tmpl("a"), "catalogs/v4.16/redis/catalog.yaml": cat("a")}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(w.t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"templates/redis.yaml": tmpl("a", "b"), "catalogs/v4.16/redis/catalog.yaml": cat("a", "b")}, "redis 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}
}

// Only allowed registries, only after the gate, through the App (issue 26.4), with the App's own checks as
// production composes them and a registry the App could reach (an internal, plain-HTTP host it is configured
// for): when the base's images.allowedRegistries does not include the template's registry, no request reaches
// it and catalogbot/templates is neutral, saying the image is outside the allowed registries; when it does but
// the author owns nothing the pull request touches, no request reaches it either and the run says the pull
// waits for an owner's approval. With both open (the author a maintainer, the registry allowed) the App does
// ask for the template's image: the two zeros are the rules at work, not a registry the App cannot reach.
func TestAppTemplatesOnlyAllowedRegistriesAfterTheGate(t *testing.T) {
	for _, tc := range []struct {
		name          string
		policy        func(host string) string
		wantRequests  bool
		wantConc      string
		wantInSummary string
	}{
		{"a registry the policy does not allow", func(string) string {
			return "maintainers: [bob]\nimages: {allowedRegistries: [quay.io/acme]}\n"
		}, false, "neutral", "outside images.allowedRegistries (quay.io/acme), so it was not contacted"},
		{"an allowed registry, an author who owns nothing", func(host string) string {
			return "maintainers: [maria]\nimages: {allowedRegistries: [\"" + host + "/acme\"]}\n"
		}, false, "neutral", "not pulled until an owner or maintainer approves"},
		{"an allowed registry, a maintainer", func(host string) string {
			return "maintainers: [bob]\nimages: {allowedRegistries: [\"" + host + "/acme\"]}\n"
		}, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newGateRegistry(t)
			e := startE2EServer(t, store.BackendSQLite, templateGatePR(reg.host, tc.policy(reg.host)), func(c *Config) {
				c.RegistryInternalHosts, c.RegistryInsecureHosts = []string{reg.host}, []string{reg.host}
			})
			e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
			runs := latestByName(e.waitRuns(t, e.headSHA, 5))
			e.waitIdle(t)
			tm, ok := runs["catalogbot/templates"]
			if !ok {
				t.Fatalf("no catalogbot/templates run: %v", keys(runs))
			}
			if !tc.wantRequests {
				if n := reg.requests.Load(); n != 0 {
					t.Errorf("%d requests reached the registry", n)
				}
				if tm.Conclusion != tc.wantConc || strings.Contains(tm.Title, "difference") {
					t.Errorf("catalogbot/templates = %s (%s), want %s without differences\n%s", tm.Conclusion, tm.Title, tc.wantConc, tm.Summary)
				}
				text := tm.Summary
				for _, a := range tm.Annotations {
					text += "\n" + a.Message
				}
				if !strings.Contains(text, tc.wantInSummary) || !strings.Contains(text, reg.host+"/acme/redis-bundle@sha256:"+strings.Repeat("b", 64)) {
					t.Errorf("catalogbot/templates does not name the image and %q:\n%s", tc.wantInSummary, text)
				}
				return
			}
			if reg.redisRequests.Load() == 0 {
				t.Errorf("the registry is allowed and the author a maintainer, yet the template's image was not asked for (templates %s %q)", tm.Conclusion, tm.Title)
			}
		})
	}
}
