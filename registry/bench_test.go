package registry

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkCheckAll checks 32 tags of one repository on the in-process registry per iteration. Tags are never
// cached, so each iteration costs one handshake and 32 HEADs.
func BenchmarkCheckAll(b *testing.B) {
	reg := newTestRegistry(b, nil)
	c := newTestClient(b, reg.host)
	var refs []string
	for i := range 32 {
		ref := fmt.Sprintf("%s/org/bundle:v%d", reg.host, i)
		push(b, c, ref)
		refs = append(refs, ref)
	}
	for b.Loop() {
		for ref, res := range c.CheckAll(testCtx(b), refs) {
			if res.Kind != Exists {
				b.Fatalf("CheckAll[%s] = %v (%s), want exists", ref, res.Kind, res.Reason)
			}
		}
	}
}

// BenchmarkCheckCachedDigest is the cost of a Check answered from the digest cache.
func BenchmarkCheckCachedDigest(b *testing.B) {
	reg := newTestRegistry(b, nil)
	c := newTestClient(b, reg.host)
	ref := reg.host + "/org/bundle@" + digestOf(b, push(b, c, reg.host+"/org/bundle:v1"))
	ctx := testCtx(b)
	if res := c.Check(ctx, ref); res.Kind != Exists {
		b.Fatalf("Check = %v (%s), want exists", res.Kind, res.Reason)
	}
	for b.Loop() {
		if res := c.Check(ctx, ref); res.Requests != 0 {
			b.Fatalf("Check sent %d requests, want 0 (cached)", res.Requests)
		}
	}
}

// BenchmarkCheckAllLatency checks 500 distinct references (10 tags in each of 50 repositories) on an
// in-process registry that answers every request 20 ms late, sequentially and with the default concurrency.
// It reports the manifest HEAD requests per iteration, which must be exactly one per distinct reference.
func BenchmarkCheckAllLatency(b *testing.B) {
	const repos, tags, latency = 50, 10, 20 * time.Millisecond
	reg := newTestRegistry(b, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodHead {
				time.Sleep(latency)
			}
			h.ServeHTTP(w, r)
		})
	})
	setup := newTestClient(b, reg.host)
	var refs []string
	for i := range repos {
		img := push(b, setup, fmt.Sprintf("%s/org/op%d:v0", reg.host, i))
		for j := range tags {
			ref := fmt.Sprintf("%s/org/op%d:v%d", reg.host, i, j)
			if j > 0 {
				pushImage(b, setup, ref, img)
			}
			refs = append(refs, ref)
		}
	}
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			heads := 0
			for b.Loop() {
				c := newTestClient(b, reg.host, WithConcurrency(conc))
				before := reg.count("HEAD ")
				res := c.CheckAll(testCtx(b), refs)
				heads = reg.count("HEAD ") - before
				for ref, r := range res {
					if r.Kind != Exists {
						b.Fatalf("%s: %v (%s)", ref, r.Kind, r.Reason)
					}
				}
			}
			if heads != len(refs) {
				b.Fatalf("%d manifest HEAD requests for %d distinct references, want exactly one each", heads, len(refs))
			}
			b.ReportMetric(float64(heads)/float64(len(refs)), "HEADs/ref")
		})
	}
}
