package registry

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ReferrersSupported is true only for a registry that answers the referrers API with an image index: ggcr's
// registry with its referrers option, not without it, and not one answering 303 (as GHCR does), 200 with
// another media type or 400; a registry that does not answer at all is an error.
func TestReferrersSupported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	quiet := ggcr.Logger(log.New(io.Discard, "", 0))
	for _, tc := range []struct {
		name string
		h    http.Handler
		want bool
	}{
		{"ggcr with the referrers API", ggcr.New(quiet, ggcr.WithReferrersSupport(true)), true},
		{"ggcr without it", ggcr.New(quiet), false},
		{"a redirect", answering(ggcr.New(quiet), func(w http.ResponseWriter) {
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusSeeOther)
		}), false},
		{"another media type", answering(ggcr.New(quiet), func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{}`))
		}), false},
		{"bad request", answering(ggcr.New(quiet), func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			c := newTestClient(t, host)
			ref, err := c.Reference(host + "/acme/op:v1")
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(ref, img, c.RemoteOptions(ctx)...); err != nil {
				t.Fatal(err)
			}
			got, err := c.ReferrersSupported(ctx, ref.Context().Digest(d.String()))
			if err != nil || got != tc.want {
				t.Fatalf("ReferrersSupported: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	t.Run("no answer", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		host := strings.TrimPrefix(srv.URL, "http://")
		srv.Close()
		c := newTestClient(t, host)
		sub, err := name.NewDigest(host+"/acme/op@"+d.String(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := c.ReferrersSupported(ctx, sub); err == nil {
			t.Fatalf("ReferrersSupported of a closed registry: %v, no error", got)
		}
	})
}

// answering serves h, except the referrers API, which answer serves.
func answering(h http.Handler, answer func(http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/referrers/") {
			answer(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}
