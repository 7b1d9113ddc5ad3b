package registry

import (
	"fmt"
	"testing"
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
