package bundle

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The optional suite operatorhub, with the validator's verdicts, each at its line.
func TestOperatorHubSuite(t *testing.T) {
	complete := strings.Replace(goodCSV, "  version: 0.9.4\n", `  version: 0.9.4
  provider: {name: CoreOS}
  maintainers: [{name: etcd team, email: etcd@example.com}]
  links: [{name: Docs, url: 'https://etcd.io/docs'}]
  icon: [{base64data: iVBORw0KGgo=, mediatype: image/png}]
`, 1)
	for _, tc := range []struct {
		name, from, to string
		rule, where    string // "" where: no finding at all
		warning        bool
	}{
		{"complete", "", "", "", "", false},
		{"no provider", "  provider: {name: CoreOS}\n", "", ruleHubProvider, "manifests/etcd.csv.yaml:8", false},
		{"maintainer without email", "email: etcd@example.com", "email: ''", ruleHubMaintainers, "manifests/etcd.csv.yaml:10", false},
		{"maintainer email not an address", "etcd@example.com", "not an address", ruleHubMaintainers, "manifests/etcd.csv.yaml:10", false},
		{"link url relative", "'https://etcd.io/docs'", "docs", ruleHubLinks, "manifests/etcd.csv.yaml:11", false},
		{"icon of another type", "image/png", "text/html", ruleHubIcon, "manifests/etcd.csv.yaml:12", false},
		{"no icon", "  icon: [{base64data: iVBORw0KGgo=, mediatype: image/png}]\n", "", ruleHubIcon, "manifests/etcd.csv.yaml:8", true},
		{"version not semver", "version: 0.9.4", "version: '0.9'", ruleHubVersion, "manifests/etcd.csv.yaml:8", false},
		{"standard categories", "  annotations:\n", "  annotations:\n    categories: 'Database, Monitoring'\n", "", "", false},
		{"a category not standard", "  annotations:\n", "  annotations:\n    categories: 'Database,Databases'\n", ruleHubCategories, "manifests/etcd.csv.yaml:6", false},
		{"categories empty", "  annotations:\n", "  annotations:\n    categories: ''\n", ruleHubCategories, "manifests/etcd.csv.yaml:6", false},
		{"capability level", "  annotations:\n", "  annotations:\n    capabilities: Deep Insights\n", "", "", false},
		{"capability not a level", "  annotations:\n", "  annotations:\n    capabilities: Basic install\n", ruleHubCapabilities, "manifests/etcd.csv.yaml:6", false},
		{"capability with a space", "  annotations:\n", "  annotations:\n    capabilities: 'Auto Pilot '\n", ruleHubCapabilities, "manifests/etcd.csv.yaml:6", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := goodBundle()
			csv := complete
			if tc.from != "" {
				csv = strings.Replace(csv, tc.from, tc.to, 1)
			}
			m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(csv)}
			b, _ := load(t, m)
			fs := OperatorHub(b)
			if n := len(RunSuites([]string{"operatorhub", "operatorframework"}, b, SuiteOptions{})); n < len(fs) {
				t.Errorf("the suites operatorhub and operatorframework give %d findings, fewer than the OperatorHub checks alone (%d)", n, len(fs))
			}
			if tc.rule == "" {
				if len(fs) != 0 {
					t.Errorf("findings %v, want none", fs)
				}
				return
			}
			found := false
			for _, f := range fs {
				if f.Rule == tc.rule && f.File+":"+itoa(f.Line) == tc.where && (f.Severity == "warning") == tc.warning {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s at %s (warning %v); findings %v", tc.rule, tc.where, tc.warning, fs)
			}
		})
	}
}

// The optional suite good-practices: its one error and its warnings, each at its line.
func TestGoodPracticesSuite(t *testing.T) {
	m := goodBundle()
	m["manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(goodCSV, "        kind: EtcdCluster\n", "        kind: EtcdCluster\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: etcd\n        spec: {template: {spec: {containers: [{name: op, image: quay.io/x/y:v1}]}}}\n      clusterPermissions:\n      - rules: [{apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [create]}]\n", 1))}
	b, _ := load(t, m)
	var got []string
	for _, f := range GoodPractices(b) {
		got = append(got, f.Rule+" "+string(f.Severity)+" "+f.File+":"+itoa(f.Line))
	}
	want := []string{
		"good-practices.resource-requests warning manifests/etcd.csv.yaml:23",
		"good-practices.crd-description warning manifests/etcd.csv.yaml:15",
		"good-practices.channel-naming warning metadata/annotations.yaml:6",
		"good-practices.crd-permissions warning manifests/etcd.csv.yaml:25",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	b, _ = load(t, goodBundle())
	if fs := GoodPractices(b); len(fs) == 0 || fs[0].Rule != ruleGPNoDeployment || fs[0].Severity != "error" {
		t.Errorf("a CSV without deployments: %v, want good-practices.no-deployment first", fs)
	}
}
