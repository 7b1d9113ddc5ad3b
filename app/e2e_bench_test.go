package app

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/store"
)

// BenchmarkDeliveryToChecks measures the time from a pull_request delivery
// to all four check runs completed, for a PR that changes one package's file
// in the community-operators-prod v4.16 catalog (18 packages, 20.7 MB, from
// ../shared). The first delivery (a cold git cache: the whole repository is
// fetched) is reported as cold-ms; each iteration then pushes a new head and
// fetches incrementally.
//
//	go test ./app -run '^$' -bench DeliveryToChecks -benchtime 5x
func BenchmarkDeliveryToChecks(b *testing.B) {
	src := filepath.Join("..", "..", "shared", "testdata", "catalogs", "community-operators-prod-v4.16")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("the community catalog is not here (%s): it comes with the team's ../shared checkout", src)
	}
	const pkgFile = "catalogs/v4.16/kube-green/catalog.yaml"
	var original []byte
	e := startE2EWith(b, store.BackendSQLite, func(w *workRepo) (string, string) {
		dst := filepath.Join(w.dir, "catalogs", "v4.16")
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
			b.Fatalf("copying the catalog: %v\n%s", err, out)
		}
		var err error
		if original, err = os.ReadFile(filepath.Join(w.dir, pkgFile)); err != nil {
			b.Fatal(err)
		}
		base := w.commit(map[string]string{".catalogbot.yaml": "version: 1\ncatalogs:\n  - path: catalogs/v4.16\nmaintainers: [bob]\n"}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(b, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{pkgFile: string(original) + "# change 0\n"}, "change 0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	})
	start := time.Now()
	e.deliver(b, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitRuns(b, e.headSHA, 4)
	cold := time.Since(start)

	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		sha := e.work.commit(map[string]string{pkgFile: fmt.Sprintf("%s# change %d\n", original, i+1)}, fmt.Sprintf("change %d", i+1))
		e.work.push("HEAD", "refs/pull/1/head")
		if err := e.fake.PushPullRequest("acme", "catalog", 1, sha); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		e.deliver(b, "pull_request", e.prEvent("synchronize", sha))
		e.waitRuns(b, sha, 4)
		total += time.Since(t0)
	}
	b.StopTimer()
	b.ReportMetric(float64(cold)/float64(time.Millisecond), "cold-ms")
	b.ReportMetric(float64(total)/float64(b.N)/float64(time.Millisecond), "warm-ms")
}
