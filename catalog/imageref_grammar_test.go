package catalog

import (
	// The OCI digest package accepts only algorithms linked into the program: opm and catalogbot link SHA-384
	// and SHA-512 (through TLS), so the reference package's verdicts are compared with them linked.
	_ "crypto/sha512"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/docker/distribution/reference"
)

// sameAsDistribution fails when the grammar's verdict or error on s differs from the reference package's.
func sameAsDistribution(t *testing.T, s string) {
	t.Helper()
	_, want := reference.ParseNormalizedNamed(s)
	got := parseRefGrammar(s)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parseRefGrammar(%q) = %v; the distribution reference package says %v", s, got, want)
	}
}

var refSeeds = []string{
	"quay.io/example/foo:v1.0.0",
	"quay.io/example/foo@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	"quay.io/example/foo:v1@sha512:" + strings.Repeat("ab", 64),
	"registry.example.com:5000/a/b-c/d_e.f:latest",
	"localhost/x", "localhost:5000/foo", "busybox", "library/busybox:1.36", "kubegreen/kube-green:0.3.0",
	"index.docker.io/foo", "docker.io/foo/bar", "Quay.io/foo/bar:1", "quay.io/foo__bar---baz.q_r",
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "", "quay.io//foo", "a/b@md5:" + strings.Repeat("0", 32),
	"quay.io/foo@sha256:" + strings.Repeat("A", 64), "quay.io/foo@sha384:" + strings.Repeat("1", 96), "x@sha256:",
	"Foo/bar", "foo/Bar:1", "quay.io/" + strings.Repeat("a", 260),
}

func TestRefGrammarAgreesWithDistribution(t *testing.T) {
	for _, s := range refSeeds {
		sameAsDistribution(t, s)
	}
	alphabet := []byte("aZ09._-:/@ A_fx+")
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 30000; i++ {
		b := []byte(refSeeds[rng.IntN(len(refSeeds))])
		for n := rng.IntN(4) + 1; n > 0; n-- {
			pos := rng.IntN(len(b) + 1)
			switch rng.IntN(3) {
			case 0:
				b = append(b[:pos], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[pos:]...)...)
			case 1:
				if pos < len(b) {
					b = append(b[:pos], b[pos+1:]...)
				}
			default:
				if pos < len(b) {
					b[pos] = alphabet[rng.IntN(len(alphabet))]
				}
			}
		}
		sameAsDistribution(t, string(b))
	}
}

func FuzzRefGrammar(f *testing.F) {
	for _, s := range refSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1024 {
			return
		}
		sameAsDistribution(t, s)
		// The quick scan never accepts what the grammar refuses.
		if plainImageRef(s) && parseRefGrammar(s) != nil {
			t.Fatalf("plainImageRef(%q) accepts what the grammar refuses", s)
		}
	})
}
