package servertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/jackc/pgx/v5"

	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// GitHub is the fake GitHub (internal/githubfake) answering for one App over
// loopback HTTP, with the App's private key in a file, as a replica reads it.
type GitHub struct {
	Fake    *githubfake.Fake
	APIURL  string // the API's base URL, as CATALOGBOT_GITHUB_API_URL takes it
	KeyFile string // the App's private key, PEM
	appID   int64
}

// NewGitHub starts the fake GitHub for the test with o (its PublicKey is
// that of a key made here).
func NewGitHub(t testing.TB, o githubfake.Options) *GitHub {
	t.Helper()
	key, keyPEM, err := githubfake.GenerateAppKey()
	if err != nil {
		t.Fatal(err)
	}
	g := &GitHub{KeyFile: filepath.Join(t.TempDir(), "app.pem"), appID: o.AppID}
	if err := os.WriteFile(g.KeyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	o.PublicKey = &key.PublicKey
	g.Fake = githubfake.New(o)
	srv := httptest.NewServer(g.Fake)
	t.Cleanup(srv.Close)
	g.APIURL = githubfake.APIURL(srv.URL)
	return g
}

// Env is the environment that makes a replica this App on this fake:
// CATALOGBOT_APP_ID, CATALOGBOT_PRIVATE_KEY_FILE and CATALOGBOT_GITHUB_API_URL.
func (g *GitHub) Env() []string {
	return []string{
		"CATALOGBOT_APP_ID=" + strconv.FormatInt(g.appID, 10),
		"CATALOGBOT_PRIVATE_KEY_FILE=" + g.KeyFile,
		"CATALOGBOT_GITHUB_API_URL=" + g.APIURL,
	}
}

// PullRequestEvent is the fake's pull_request event with action for PR n
// of owner/name, its clone URL moved from github.com to host, where the
// server is to clone from.
func (g *GitHub) PullRequestEvent(t testing.TB, host *GitHost, owner, name string, n int, action string) []byte {
	t.Helper()
	body, err := g.Fake.PullRequestEvent(owner, name, n, action)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(body, []byte(`"https://github.com/`+owner+`/`+name+`.git"`), []byte(`"`+host.CloneURL(owner, name)+`"`))
}

// PushEvent is the fake's push event moving branch of owner/name from
// before to after, its clone URL moved from github.com to host.
func (g *GitHub) PushEvent(t testing.TB, host *GitHost, owner, name, branch, before, after, pusher string) []byte {
	t.Helper()
	body, err := g.Fake.PushEvent(owner, name, branch, before, after, pusher)
	if err != nil {
		t.Fatal(err)
	}
	moved := bytes.ReplaceAll(body, []byte(`"https://github.com/`+owner+`/`+name+`.git"`), []byte(`"`+host.CloneURL(owner, name)+`"`))
	if bytes.Equal(moved, body) {
		t.Fatalf("push payload has no clone URL to move:\n%s", body)
	}
	return moved
}

// PushBaseIndex pushes a base image for catalog images to the registry at
// host (host:port, loopback): an OCI index of two random linux images,
// amd64 and arm64, each with two layers and running as user 1001, as opm's
// images do. It returns the index's reference by digest.
func PushBaseIndex(t testing.TB, host, repo string) string {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(2048, 2)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		cf.Config.User = "1001"
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	ref, err := name.ParseReference(host+"/"+repo+":base", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return host + "/" + repo + "@" + d.String()
}

// ImageDigest is the digest ref (a tag or digest reference on a loopback
// registry) points at, or "" when it does not exist; another error fails
// the test.
func ImageDigest(t testing.TB, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	desc, err := remote.Head(r, remote.WithContext(ctx))
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		return ""
	}
	if err != nil {
		t.Fatalf("reading %s: %v", ref, err)
	}
	return desc.Digest.String()
}

// NewRegistry starts an empty in-memory OCI registry on loopback for the
// test and returns its host:port (plain HTTP: name it an insecure host).
func NewRegistry(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// StoredDeliveries reads the GUIDs in the delivery log of the replicas
// whose database is schema on dbURL (PostgreSQL).
func StoredDeliveries(t testing.TB, dbURL, schema string) map[string]bool {
	t.Helper()
	var ids []string
	Query(t, dbURL, func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, "SELECT id FROM "+pgx.Identifier{schema, "catalogbot_delivery"}.Sanitize())
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// Query runs f on a connection of its own to the PostgreSQL database at
// dbURL, under a 30 s deadline; an error fails the test.
func Query(t testing.TB, dbURL string, f func(context.Context, *pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := f(ctx, conn); err != nil {
		t.Fatal(err)
	}
}
