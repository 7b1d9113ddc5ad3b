package sign

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// BenchmarkSigningCost measures, in one run against ggcr's registry on loopback, what signing adds to the
// push of one image (two 64 KiB layers, written by digest). Each iteration interleaves the three so that
// the shared machine's load falls on all alike: push an image and sign it (one signature), then push
// another and sign it with its provenance attestation. It reports the push's ms/image, what signing adds
// (sign-ms) and what signing with the attestation adds (sign+attest-ms), their ratios to the push, and the
// 1-minute load average.
//
//	go test -run '^$' -bench SigningCost -benchtime 100x ./sign/
func BenchmarkSigningCost(b *testing.B) {
	host, reg := testRegistry(b)
	key, _ := newKey(b)
	s := NewSigner(key, reg, nil)
	ctx := testCtx(b)
	var push, signOnly, signAttest time.Duration
	pushOne := func(i int, kind string) string {
		b.StopTimer()
		img, err := random.Image(64<<10, 2)
		if err != nil {
			b.Fatal(err)
		}
		d, _ := img.Digest()
		ref, err := reg.Reference(fmt.Sprintf("%s/bench/%s%d@%s", host, kind, i, d))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := remote.Write(ref, img, reg.RemoteOptions(ctx)...); err != nil {
			b.Fatal(err)
		}
		push += time.Since(start)
		return ref.String()
	}
	signOne := func(image string, prov *Provenance) time.Duration {
		start := time.Now()
		if _, err := s.Sign(ctx, Request{Image: image, Provenance: prov}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		signOnly += signOne(pushOne(i, "s"), nil)
		signAttest += signOne(pushOne(i, "a"), testProvenance(""))
	}
	n := float64(b.N)
	pushMs := float64(push.Microseconds()) / 1e3 / (2 * n)
	b.ReportMetric(pushMs, "push-ms")
	b.ReportMetric(float64(signOnly.Microseconds())/1e3/n, "sign-ms")
	b.ReportMetric(float64(signAttest.Microseconds())/1e3/n, "sign+attest-ms")
	if pushMs > 0 {
		b.ReportMetric(float64(signOnly.Microseconds())/1e3/n/pushMs, "sign/push")
		b.ReportMetric(float64(signAttest.Microseconds())/1e3/n/pushMs, "sign+attest/push")
	}
	b.ReportMetric(loadAverage(), "load1")
	b.ReportMetric(0, "ns/op")
}

// loadAverage is the 1-minute load average (0 where /proc/loadavg is absent).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}
