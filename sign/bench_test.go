package sign

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/catalogbot/catalogbot/registry"
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

// BenchmarkPublishSignedVsUnsigned measures what signing adds to publishing one image as catalogbot does it
// (Publish: with a key, the content by digest, its signature and SLSA provenance attestation, then the tag;
// without one, the tag only). Each iteration publishes the same new image three times, to three ggcr
// registries on loopback, interleaved so that the shared machine's load falls on all alike: unsigned;
// signed and attested on a registry without the referrers API; and on one with it (the signature and
// attestation then written once more as OCI 1.1 referrers). "image" is a two-layer 128 KiB image (a bundle
// image's shape), "index" a two-platform index of them (a catalog image's shape: three manifests signed).
// It reports ms per publication, the ratios to the unsigned one and the 1-minute load average.
//
//	go test -run '^$' -bench PublishSignedVsUnsigned -benchtime 100x -count 3 ./sign/
func BenchmarkPublishSignedVsUnsigned(b *testing.B) {
	for _, kind := range []string{"image", "index"} {
		b.Run(kind, func(b *testing.B) {
			ctx := testCtx(b)
			key, _ := newKey(b)
			hostU, regU := testRegistry(b)
			hostS, regS := testRegistry(b)
			hostR, regR := testRegistry(b, ggcr.WithReferrersSupport(true))
			signS, signR := NewSigner(key, regS, nil), NewSigner(key, regR, nil)
			var unsigned, signed, referred time.Duration
			publish := func(s *Signer, reg *registry.Client, host string, i int, content remote.Taggable, digest string) time.Duration {
				write := func(ctx context.Context, ref string) error {
					r, err := reg.Reference(ref)
					if err != nil {
						return err
					}
					if idx, ok := content.(v1.ImageIndex); ok {
						return remote.WriteIndex(r, idx, reg.RemoteOptions(ctx)...)
					}
					return remote.Write(r, content.(v1.Image), reg.RemoteOptions(ctx)...)
				}
				start := time.Now()
				_, err := Publish(ctx, s, Publication{
					Digest: digest, Tags: []string{fmt.Sprintf("%s/bench/op%d:v1", host, i)},
					WriteContent: write, WriteTag: write,
					Provenance: func(context.Context) *Provenance { return testProvenance("") },
				})
				if err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				content, digest := benchContent(b, kind)
				b.StartTimer()
				unsigned += publish(nil, regU, hostU, i, content, digest)
				signed += publish(signS, regS, hostS, i, content, digest)
				referred += publish(signR, regR, hostR, i, content, digest)
			}
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / n }
			b.ReportMetric(ms(unsigned), "unsigned-ms")
			b.ReportMetric(ms(signed), "signed-ms")
			b.ReportMetric(ms(referred), "signed+referrers-ms")
			if unsigned > 0 {
				b.ReportMetric(float64(signed)/float64(unsigned), "signed/unsigned")
				b.ReportMetric(float64(referred)/float64(unsigned), "signed+referrers/unsigned")
			}
			b.ReportMetric(loadAverage(), "load1")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchContent is a new image (two 64 KiB layers) or a two-platform index of such images, and its digest.
func benchContent(b *testing.B, kind string) (remote.Taggable, string) {
	img := func() v1.Image {
		i, err := random.Image(64<<10, 2)
		if err != nil {
			b.Fatal(err)
		}
		return i
	}
	if kind == "image" {
		i := img()
		d, _ := i.Digest()
		return i, d.String()
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img(), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	d, _ := idx.Digest()
	return idx, d.String()
}
