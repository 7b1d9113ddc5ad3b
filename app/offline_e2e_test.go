package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/catalogbot/catalogbot/app/store"
)

// offlinePR seeds a pull request by bob (a maintainer) that touches each kind of content a check may want a
// registry for, every image on host: the etcd catalog gains etcd.v1.1.0 (no olm.bundle.object) replacing
// etcd.v1.0.0 (none either); a bundle directory operators/etcd/1.1.0 replaces etcd.v1.0.0 and names an operand
// image; the redis template gains a bundle image that no catalog of the base holds and no bundle directory builds.
func offlinePR(host string) func(w *workRepo) (string, string) {
	return func(w *workRepo) (string, string) {
		policy := "version: 1\ncatalogs:\n  - path: catalogs/v4.16\nbundles:\n  - path: operators\nmaintainers: [bob]\n" +
			"templates:\n  - path: templates/redis.yaml\n    catalogs: [catalogs/v4.16/redis/catalog.yaml]\n"
		etcd := func(versions ...string) string {
			s := "---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n"
			prev := ""
			for _, v := range versions {
				s += "  - name: etcd.v" + v + "\n"
				if prev != "" {
					s += "    replaces: etcd.v" + prev + "\n"
				}
				prev = v
			}
			for _, v := range versions {
				s += "---\nschema: olm.bundle\npackage: etcd\nname: etcd.v" + v + "\nimage: " + host + "/acme/etcd-bundle:v" + v +
					"\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: " + v + "}\n"
			}
			return s
		}
		img := func(c string) string { return host + "/acme/redis-bundle@sha256:" + strings.Repeat(c, 64) }
		redisTemplate := func(digests ...string) string {
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
		redisCatalog := func(digests ...string) string {
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
		base := w.commit(map[string]string{".catalogbot.yaml": policy, "catalogs/v4.16/etcd/catalog.yaml": etcd("1.0.0"),
			"templates/redis.yaml": redisTemplate("a"), "catalogs/v4.16/redis/catalog.yaml": redisCatalog("a")}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(w.t, w.dir, "checkout", "-q", "-b", "pr")
		files := e2eBundle("1.1.0", "registry+v1")
		files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] += "  replaces: etcd.v1.0.0\n  relatedImages:\n    - name: operand\n      image: " + host + "/acme/etcd:3.5\n"
		files["catalogs/v4.16/etcd/catalog.yaml"] = etcd("1.0.0", "1.1.0")
		files["templates/redis.yaml"] = redisTemplate("a", "b")
		files["catalogs/v4.16/redis/catalog.yaml"] = redisCatalog("a", "b")
		head := w.commit(files, "etcd 1.1.0 in the catalog and as a bundle directory, redis 1.1.0 in the template")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}
}

// Offline means offline through the App: with registry.offline the App's own checks (as production composes
// them) make no request to a registry on a pull request that touches a catalog, a bundle directory and a
// template with images on it; there is no catalogbot/images run, crd-safety says "CRDs not embedded, not
// compared" and templates "not verified", both neutral. Without registry.offline the same pull request reaches
// the registry (the images check, bundle images read for their CRDs, the template's image pulled).
func TestOfflineAppMakesNoRegistryRequest(t *testing.T) {
	var requests atomic.Int64
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	start := func(offline bool) *e2eEnv {
		return startE2EServer(t, store.BackendSQLite, offlinePR(host), func(c *Config) {
			c.RegistryInternalHosts, c.RegistryInsecureHosts = []string{host}, []string{host}
			c.RegistryOffline = offline
		})
	}

	e := start(true)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 4))
	e.waitIdle(t)
	if n := requests.Load(); n != 0 {
		t.Errorf("registry.offline: %d requests reached the registry", n)
	}
	if _, ok := runs["catalogbot/images"]; ok || len(runs) != 4 {
		t.Errorf("runs %v, want ownership, validate (validation and immutability), crd-safety and templates, no images", keys(runs))
	}
	for name, want := range map[string]string{
		"catalogbot/ownership": "success", "catalogbot/validate": "success",
		"catalogbot/crd-safety": "neutral", "catalogbot/templates": "neutral",
	} {
		if r := runs[name]; r.Conclusion != want {
			t.Errorf("%s = %s (%s), want %s\n%s", name, r.Conclusion, r.Title, want, r.Summary)
		}
	}
	crd := runs["catalogbot/crd-safety"]
	if crd.Title != "CRDs not embedded, not compared" || strings.Count(crd.Summary, "CRDs not embedded, not compared") < 2 {
		t.Errorf("crd-safety: title %q, want %q for both upgrades (the catalog's and the bundle directory's)\n%s", crd.Title, "CRDs not embedded, not compared", crd.Summary)
	}
	if tm := runs["catalogbot/templates"]; !strings.Contains(tm.Summary, "not verified") {
		t.Errorf("templates summary does not say not verified:\n%s", tm.Summary)
	}

	e = start(false)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs = latestByName(e.waitRuns(t, e.headSHA, 5))
	if _, ok := runs["catalogbot/images"]; !ok {
		t.Errorf("without registry.offline there is no catalogbot/images run: %v", keys(runs))
	}
	if requests.Load() == 0 {
		t.Errorf("without registry.offline no request reached the registry")
	}
}

// The policy's image rules are rules about text: with registry.offline (no images run, no registry client) a
// pull request that adds a bundle whose image is outside images.allowedRegistries and whose related image is
// referenced by tag under requireDigest fails catalogbot/validate, each finding annotated on its line, and no
// request reaches any registry.
func TestOfflineAppEnforcesImageRules(t *testing.T) {
	var requests atomic.Int64
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	policy := "version: 1\ncatalogs:\n  - path: catalogs/v4.16\nmaintainers: [bob]\nimages: {allowedRegistries: [\"" + host + "/acme\"], requireDigest: true}\n"
	digest := "@sha256:" + strings.Repeat("a", 64)
	etcd := func(bundles string) string {
		return "---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n" + bundles
	}
	blob := func(v, image, related string) string {
		s := "---\nschema: olm.bundle\npackage: etcd\nname: etcd.v" + v + "\nimage: " + image + "\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: " + v + "}\n"
		if related != "" {
			s += "relatedImages:\n  - name: operand\n    image: " + related + "\n"
		}
		return s
	}
	good := blob("1.0.0", host+"/acme/etcd-bundle"+digest, "")
	e := startE2EServer(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": policy, "catalogs/v4.16/etcd/catalog.yaml": etcd(good)}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(w.t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": strings.Replace(etcd(good), "  - name: etcd.v1.0.0\n", "  - name: etcd.v1.0.0\n  - name: etcd.v1.1.0\n    replaces: etcd.v1.0.0\n", 1) +
			blob("1.1.0", "evil.example/acme/etcd-bundle"+digest, host+"/acme/etcd:3.5")}, "etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, func(c *Config) {
		c.RegistryInternalHosts, c.RegistryInsecureHosts = []string{host}, []string{host}
		c.RegistryOffline = true
	})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 4))
	e.waitIdle(t)
	if n := requests.Load(); n != 0 {
		t.Errorf("registry.offline: %d requests reached the registry", n)
	}
	if _, ok := runs["catalogbot/images"]; ok {
		t.Errorf("registry.offline, yet an images run: %v", keys(runs))
	}
	v := runs["catalogbot/validate"]
	if v.Conclusion != "failure" {
		t.Fatalf("catalogbot/validate = %s (%s), want failure\n%s", v.Conclusion, v.Title, v.Summary)
	}
	want := map[string]int{"images.registry-not-allowed": 25, "images.not-pinned": 31}
	for _, a := range v.Annotations {
		for rule, line := range want {
			if strings.Contains(a.Title+a.Message, rule) && a.Path == "catalogs/v4.16/etcd/catalog.yaml" && a.StartLine == line {
				delete(want, rule)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("catalogbot/validate lacks annotations %v; it has %+v", want, v.Annotations)
	}
}

// An unreachable registry is "could not verify", never drift, through the App: with the registry answering
// 503 to everything, catalogbot/templates is neutral, names the template's new image and the registry's
// answer, and reports no difference.
func TestAppTemplatesUnreachableRegistryIsNeutral(t *testing.T) {
	var requests atomic.Int64
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	e := startE2EServer(t, store.BackendSQLite, offlinePR(host), func(c *Config) {
		c.RegistryInternalHosts, c.RegistryInsecureHosts = []string{host}, []string{host}
	})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 5))
	e.waitIdle(t)
	if requests.Load() == 0 {
		t.Fatal("no request reached the registry")
	}
	tm := runs["catalogbot/templates"]
	if tm.Conclusion != "neutral" || strings.Contains(tm.Title, "difference") {
		t.Errorf("catalogbot/templates = %s (%s), want neutral without differences\n%s", tm.Conclusion, tm.Title, tm.Summary)
	}
	if img := host + "/acme/redis-bundle@sha256:" + strings.Repeat("b", 64); !strings.Contains(tm.Summary, img) || !strings.Contains(tm.Summary, "503") {
		t.Errorf("the templates summary does not name the image and the registry's answer:\n%s", tm.Summary)
	}
	for _, a := range tm.Annotations {
		if a.Level == "failure" {
			t.Errorf("failure annotation with the registry down: %s %s", a.Title, a.Message)
		}
	}
}
