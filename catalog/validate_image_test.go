package catalog

import (
	"math/rand/v2"
	"testing"

	"github.com/docker/distribution/reference"
)

func TestParseImageRef(t *testing.T) {
	hex := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		ref   string
		valid bool
	}{
		{"quay.io/example/foo:v1.0.0", true},
		{"quay.io/example/foo@sha256:" + hex, true},
		{"quay.io/example/foo:v1@sha256:" + hex, true},
		{"registry.example.com:5000/a/b-c/d_e.f:latest", true},
		{"localhost:5000/foo", true},
		{"busybox", true},                    // Docker Hub, normalised
		{"library/busybox:1.36", true},       // Docker Hub
		{"quay.io/example/foo__bar:1", true}, // double underscore separator
		{"quay.io/example/foo---bar:1", true},
		{"quay.io/Example/foo:1", false}, // upper-case repository
		{"quay.io/example/foo@sha256:abc", false},
		{"quay.io/example/foo@sha256:" + hex[:63] + " ", false},
		{"quay.io/example/foo@sha256:" + hex[:32] + " " + hex[33:], false},
		{"quay.io/example/foo:", false},
		{"quay.io/example/foo:-bad", false},
		{"quay.io/example/foo@sha256:" + "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789", false},
		{hex, false}, // a bare 64-hex identifier
		{"", false},
		{"quay.io//foo", false},
		{"quay.io/foo/", false},
		{"Quay.io/foo/bar:1", true}, // the domain may have capitals
	}
	for _, tt := range tests {
		err := parseImageRef(tt.ref)
		if (err == nil) != tt.valid {
			t.Errorf("parseImageRef(%q) = %v, want valid=%v", tt.ref, err, tt.valid)
		}
		if _, err := reference.ParseNormalizedNamed(tt.ref); (err == nil) != tt.valid {
			t.Errorf("reference.ParseNormalizedNamed(%q) error = %v, the table says valid=%v", tt.ref, err, tt.valid)
		}
	}
}

// TestPlainImageRefNeverAcceptsInvalid: the quick scan accepts only what the
// grammar accepts, checked on mutations of typical references.
func TestPlainImageRefNeverAcceptsInvalid(t *testing.T) {
	seeds := []string{
		"quay.io/example/foo:v1.0.0",
		"quay.io/example/foo@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"registry.example.com:5000/a/b-c/d_e.f:latest",
		"localhost/x",
	}
	alphabet := []byte("aZ09._-:/@ A")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50000; i++ {
		b := []byte(seeds[rng.IntN(len(seeds))])
		for n := rng.IntN(3) + 1; n > 0; n-- {
			pos := rng.IntN(len(b) + 1)
			switch rng.IntN(3) {
			case 0: // insert
				b = append(b[:pos], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[pos:]...)...)
			case 1: // delete
				if pos < len(b) {
					b = append(b[:pos], b[pos+1:]...)
				}
			default: // replace
				if pos < len(b) {
					b[pos] = alphabet[rng.IntN(len(alphabet))]
				}
			}
		}
		s := string(b)
		if plainImageRef(s) {
			if _, err := reference.ParseNormalizedNamed(s); err != nil {
				t.Fatalf("plainImageRef(%q) = true, but the grammar refuses it: %v", s, err)
			}
		}
	}
}
