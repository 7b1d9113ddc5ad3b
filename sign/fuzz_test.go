package sign

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// FuzzParseSimpleSigning: any payload is read or refused with an error, never a panic, and what is read
// back from a payload this package wrote is what it wrote.
func FuzzParseSimpleSigning(f *testing.F) {
	d, _ := name.NewDigest("quay.io/acme/x@sha256:" + strings.Repeat("ab", 32))
	good, _ := simpleSigning("quay.io/acme/x:v1", d)
	f.Add(good)
	f.Add([]byte(`{"critical":{"identity":{"docker-reference":"a"},"image":{"docker-manifest-digest":"sha256:00"},"type":"cosign container image signature"}}`))
	f.Add([]byte(`{"critical":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseSimpleSigning(b)
		if err != nil {
			return
		}
		if p.Identity == "" || !strings.HasPrefix(p.Digest, "sha256:") || len(p.Digest) != 71 {
			t.Fatalf("accepted %q as %+v", b, p)
		}
	})
}

// FuzzParseStatement: any statement is read or refused, never a panic.
func FuzzParseStatement(f *testing.F) {
	d, _ := name.NewDigest("quay.io/acme/x@sha256:" + strings.Repeat("ab", 32))
	st, err := testProvenance("quay.io/opm/base@sha256:" + strings.Repeat("cd", 32)).statement([]name.Digest{d})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(st)
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"00"}}],"predicateType":"x","predicate":{}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseStatement(b)
		if err != nil {
			return
		}
		if s.PredicateType == "" || len(s.Subjects) == 0 {
			t.Fatalf("accepted %q as %+v", b, s)
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseKey: any file is a key or an error, never a panic.
func FuzzParseKey(f *testing.F) {
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\neyJrZGYiOnt9fQ==\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseKey(b, func() ([]byte, error) { return []byte("pw"), nil })
	})
}
