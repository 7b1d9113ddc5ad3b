package checks_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/policy"
)

// BenchmarkPreview measures what the catalog preview adds to a bundle pull request on the shared test data's
// largest templated package with bundle directories, rabbitmq-cluster-operator (nine basic templates, three
// mapped into five OpenShift catalogs, four bundle directories): a pull request adding 2.22.4 (2.22.3 renamed,
// a spec field dropped). "preview" is the preview alone (bundle image built in memory for its digest, the
// templates rendered with it, the rendered catalogs validated, the rendered channels read); "checks" is the
// validation and crd-safety checks on the same pull request, preview included; "checks-no-templates" is the
// same pull request in a repository whose ci.yaml maps no template (the cost without a preview). Files are
// in memory, as the App's git cache serves them. cpu-ms/op is the process's CPU time per operation, which
// the load of a shared machine does not inflate as it inflates wall time.
func BenchmarkPreview(b *testing.B) {
	td := sharedTestdata(b)
	base := fstest.MapFS{}
	addTree(base, filepath.Join(td, "bundles", rmqPkg), "operators/"+rmqPkg)
	var roots []policy.Catalog
	for _, v := range []string{"v4.18", "v4.19", "v4.20", "v4.21", "v4.22"} {
		addTree(base, filepath.Join(td, "templates", "catalogs", v, rmqPkg), "catalogs/"+v+"/"+rmqPkg)
		roots = append(roots, policy.Catalog{Path: "catalogs/" + v})
	}
	head := fstest.MapFS{}
	for k, v := range base {
		head[k] = v
	}
	var files []checks.FileChange
	for k, v := range base {
		if !strings.HasPrefix(k, "operators/"+rmqPkg+"/2.22.3/") {
			continue
		}
		data := string(v.Data)
		if strings.HasSuffix(k, "clusterserviceversion.yaml") {
			data = strings.Replace(data, "name: rabbitmq-cluster-operator.v2.22.3", "name: rabbitmq-cluster-operator.v2.22.4", 1)
			data = strings.Replace(data, "\n  version: 2.22.3\n", "\n  version: 2.22.4\n", 1)
			data = replacesOf("rabbitmq-cluster-operator.v2.22.3")(data)
		}
		if strings.HasSuffix(k, "rabbitmq.com_rabbitmqcluster.yaml") {
			data = withoutField("delayStartSeconds")(data)
		}
		name := strings.Replace(k, "/2.22.3/", "/2.22.4/", 1)
		head[name] = &fstest.MapFile{Data: []byte(data)}
		files = append(files, checks.FileChange{Path: name, Status: checks.FileAdded})
	}
	pol := policy.Default()
	pol.Catalogs = roots
	pol.Bundles = []policy.BundleRoot{{Path: "operators", TemplatesFromCIYaml: true, CIYamlOwners: true, Image: "quay.io/community-operator-pipeline-prod/{package}:{version}"}}
	noTemplates := *pol
	noTemplates.Bundles = []policy.BundleRoot{{Path: "operators", CIYamlOwners: true, Image: pol.Bundles[0].Image}}
	ctx := context.Background()
	newPR := func(p *policy.Policy) *checks.PullRequest {
		return &checks.PullRequest{Author: "Zerpet", Policy: p,
			Base: checks.Revision{SHA: "base", FS: base}, Head: checks.Revision{SHA: "head", FS: head}, Files: files}
	}
	b.Run("preview", func(b *testing.B) {
		cpu := processCPU()
		defer func() { b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op") }()
		for i := 0; i < b.N; i++ {
			pr := newPR(pol)
			if err := checks.Prepare(ctx, pr); err != nil {
				b.Fatal(err)
			}
			p := checks.Preview(ctx, pr)
			if pp := p.Package(rmqPkg); pp == nil || len(pp.Catalogs) != 5 || pp.Unverified != "" {
				b.Fatalf("preview: %+v", pp)
			}
		}
	})
	for _, c := range []struct {
		name string
		pol  *policy.Policy
	}{{"checks", pol}, {"checks-no-templates", &noTemplates}} {
		b.Run(c.name, func(b *testing.B) {
			cpu := processCPU()
			defer func() { b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op") }()
			for i := 0; i < b.N; i++ {
				pr := newPR(c.pol)
				if err := checks.Prepare(ctx, pr); err != nil {
					b.Fatal(err)
				}
				res, err := checks.CRDSafety{}.Run(ctx, pr)
				if err != nil || res.Conclusion != checks.Failure {
					b.Fatalf("crd-safety %s %v: %s", res.Conclusion, err, res.Summary)
				}
				if _, err := (checks.Validation{}).Run(ctx, pr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
