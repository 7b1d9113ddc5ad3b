package app

import (
	"context"
	"testing"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// BenchmarkRenderCheckRun renders a result with as many findings as one run annotates.
func BenchmarkRenderCheckRun(b *testing.B) {
	res := checks.Result{Conclusion: checks.Failure, Summary: "## Validation", Findings: findings(ghapp.MaxAnnotationsPerRun, "operators/etcd/catalog.yaml")}
	b.ReportAllocs()
	for b.Loop() {
		ghapp.RenderCheckRun(res, "")
	}
}

// BenchmarkCompleteCheckRun reports 120 annotations (three requests) to the
// fake GitHub over loopback HTTP.
func BenchmarkCompleteCheckRun(b *testing.B) {
	e := newFakeEnv(b, ghapp.RetryPolicy{})
	ctx := context.Background()
	c, err := e.gh.Installation(ctx, testInstID)
	if err != nil {
		b.Fatal(err)
	}
	rep := ghapp.NewCheckRunReporter(nil)
	res := checks.Result{Conclusion: checks.Failure, Findings: findings(120, "operators/etcd/catalog.yaml")}
	head := githubfake.MakeSHA("bench")
	ids, err := rep.Start(ctx, c, testOwner, testRepo, head, 1, "j1", []string{"catalogbot/validate"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := rep.Complete(ctx, c, testOwner, testRepo, ids["catalogbot/validate"], res, ""); err != nil {
			b.Fatal(err)
		}
	}
}
