package sign

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/registry"
)

// publishWorld is a loopback registry that refuses signature images while refuse is set, a key, and an image
// to publish.
func publishWorld(t *testing.T, refuse bool) (string, *registry.Client, *Key, func(ctx context.Context, ref string) error, string) {
	t.Helper()
	h := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".sig") {
			http.Error(w, "no signatures here", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	reg, err := registry.New(registry.WithAllowedHosts(host), registry.WithInsecureHosts(host), registry.WithPushSettle(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	key, _ := newKey(t)
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	write := func(ctx context.Context, ref string) error {
		r, err := reg.Reference(ref)
		if err != nil {
			return err
		}
		return remote.Write(r, img, reg.RemoteOptions(ctx)...)
	}
	return host, reg, key, write, d.String()
}

// Publish writes the content by digest, signs it, and only then writes the tags: when the first tag is
// written the image already verifies by digest; a signing failure writes no tag and says so; without a
// Signer only the tags are written; a write-once tag naming other content stops everything before a write.
func TestPublishSignsBeforeAnyTag(t *testing.T) {
	ctx := testCtx(t)
	t.Run("signed", func(t *testing.T) {
		host, reg, key, write, digest := publishWorld(t, false)
		var steps []string
		res, err := Publish(ctx, NewSigner(key, reg, nil), Publication{
			Digest: digest, Tags: []string{host + "/acme/op:v1", host + "/acme/op:latest"},
			WriteContent: func(ctx context.Context, ref string) error {
				steps = append(steps, "content "+ref)
				return write(ctx, ref)
			},
			Provenance: func(context.Context) *Provenance { steps = append(steps, "provenance"); return testProvenance("") },
			Signed: func(_ context.Context, byDigest string, res *Result) error {
				steps = append(steps, "signed")
				return nil
			},
			WriteTag: func(ctx context.Context, ref string) error {
				if _, err := Verify(ctx, reg, key.Verifier(), host+"/acme/op@"+digest, VerifyOptions{RequireAttestation: true}); err != nil {
					t.Errorf("writing %s before the image verifies: %v", ref, err)
				}
				steps = append(steps, "tag "+strings.TrimPrefix(ref, host+"/"))
				return write(ctx, ref)
			},
		})
		want := "content " + host + "/acme/op@" + digest + "|provenance|signed|tag acme/op:v1|tag acme/op:latest"
		if err != nil || !res.Attested || strings.Join(steps, "|") != want {
			t.Fatalf("Publish: %+v, %v\nsteps %q\nwant  %q", res, err, strings.Join(steps, "|"), want)
		}
	})
	t.Run("signing fails", func(t *testing.T) {
		host, reg, key, write, digest := publishWorld(t, true)
		tagged := false
		_, err := Publish(ctx, NewSigner(key, reg, nil), Publication{
			Digest: digest, Tags: []string{host + "/acme/op:v1"}, WriteContent: write,
			WriteTag: func(context.Context, string) error { tagged = true; return nil },
		})
		var se *SigningError
		if !errors.As(err, &se) || tagged || !strings.Contains(err.Error(), "no tag was moved") {
			t.Fatalf("Publish: %v (tag written: %v)", err, tagged)
		}
	})
	t.Run("no signer", func(t *testing.T) {
		host, _, _, write, digest := publishWorld(t, false)
		var steps []string
		res, err := Publish(ctx, nil, Publication{
			Digest: digest, Tags: []string{host + "/acme/op:v1"},
			WriteContent: func(context.Context, string) error { steps = append(steps, "content"); return nil },
			WriteTag:     func(ctx context.Context, ref string) error { steps = append(steps, "tag"); return write(ctx, ref) },
		})
		if err != nil || res != nil || strings.Join(steps, "|") != "tag" {
			t.Fatalf("Publish: %+v, %v, steps %q", res, err, steps)
		}
	})
	t.Run("write-once tag taken", func(t *testing.T) {
		host, reg, key, _, digest := publishWorld(t, false)
		other := pushImage(t, reg, host+"/acme/op:v1")
		wrote := false
		_, err := Publish(ctx, NewSigner(key, reg, nil), Publication{
			Digest: digest, Tags: []string{host + "/acme/op:v1"}, WriteOnce: true,
			WriteContent: func(context.Context, string) error { wrote = true; return nil },
			WriteTag:     func(context.Context, string) error { wrote = true; return nil },
		})
		var taken *registry.TagTakenError
		if !errors.As(err, &taken) || wrote || taken.Existing != strings.SplitN(other, "@", 2)[1] {
			t.Fatalf("Publish: %v (wrote: %v)", err, wrote)
		}
	})
}
