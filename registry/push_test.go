package registry

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// racePushes runs writers concurrent PushOnce of different images to one new tag, each writer through
// clientFor(i), started together, and returns how many succeeded, how many were refused as taken, the
// digest the tag names afterwards and the winner's digest ("" unless exactly one succeeded).
func racePushes(t *testing.T, host, ref string, writers int, clientFor func(i int) *Client) (succeeded, taken int, final, winner string) {
	t.Helper()
	ctx := testCtx(t)
	imgs := make([]v1.Image, writers)
	for i := range imgs {
		img, err := random.Image(2048, 2)
		if err != nil {
			t.Fatal(err)
		}
		imgs[i] = img
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	pushed := make([]bool, writers)
	errs := make([]error, writers)
	for i := 0; i < writers; i++ {
		c := clientFor(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			pushed[i], errs[i] = c.PushOnce(ctx, ref, imgs[i])
		}()
	}
	close(start)
	wg.Wait()
	for i := range errs {
		var te *TagTakenError
		switch {
		case errs[i] == nil && pushed[i]:
			succeeded++
			winner = digestOf(t, imgs[i])
		case errors.As(errs[i], &te):
			taken++
		default:
			t.Errorf("writer %d: pushed %v, error %v; want success or *TagTakenError", i, pushed[i], errs[i])
		}
	}
	if succeeded != 1 {
		winner = ""
	}
	res := clientFor(0).Check(ctx, ref)
	return succeeded, taken, res.Digest, winner
}

// A pushed version is never replaced, under concurrency: of several pushes of different content to one new
// tag, exactly one succeeds and the tag names its image; the others are refused as taken (the tag already
// names another image, or another push wrote it at the same time). Through one client (the App: every push
// goes through its one client) and through one client per writer (separate processes: catalogbot
// build-bundle run twice), against go-containerregistry's registry on loopback.
func TestPushOnceConcurrent(t *testing.T) {
	reg := newTestRegistry(t, nil)
	shared := newTestClient(t, reg.host, WithPushSettle(100*time.Millisecond))
	for _, tc := range []struct {
		name    string
		writers int
		client  func(i int) *Client
	}{
		{"one client, 4 writers", 4, func(int) *Client { return shared }},
		{"a client per writer, 2 writers", 2, func(int) *Client { return newTestClient(t, reg.host, WithPushSettle(100*time.Millisecond)) }},
		{"a client per writer, 4 writers", 4, func(int) *Client { return newTestClient(t, reg.host, WithPushSettle(100*time.Millisecond)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const trials = 10
			for trial := 0; trial < trials; trial++ {
				clients := make([]*Client, tc.writers)
				for i := range clients {
					clients[i] = tc.client(i)
				}
				ref := fmt.Sprintf("%s/acme/etcd-bundle:v1.0.%d-%s", reg.host, trial, strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", ""), ",", ""))
				ok, taken, final, winner := racePushes(t, reg.host, ref, tc.writers, func(i int) *Client { return clients[i] })
				if ok != 1 || taken != tc.writers-1 || final != winner {
					t.Errorf("trial %d: %d succeeded, %d refused as taken; the tag names %s, the winner pushed %s; want exactly one success and the tag naming it", trial, ok, taken, final, winner)
				}
			}
		})
	}
}

// The same race against Debian's docker-registry (distribution 2.8), when installed (.ci/run installs it).
func TestPushOnceConcurrentDistribution(t *testing.T) {
	host := startPlainDistribution(t)
	for trial := 0; trial < 8; trial++ {
		clients := []*Client{newTestClient(t, host, WithPushSettle(200*time.Millisecond)), newTestClient(t, host, WithPushSettle(200*time.Millisecond))}
		ref := fmt.Sprintf("%s/acme/etcd-bundle:v2.0.%d", host, trial)
		ok, taken, final, winner := racePushes(t, host, ref, 2, func(i int) *Client { return clients[i] })
		if ok != 1 || taken != 1 || final != winner {
			t.Errorf("trial %d: %d succeeded, %d refused; the tag names %s, the winner pushed %s", trial, ok, taken, final, winner)
		}
	}
}

// startPlainDistribution runs docker-registry without authentication on 127.0.0.1; it skips when absent.
func startPlainDistribution(t *testing.T) string {
	t.Helper()
	bin := distributionBinary(t, "")
	ctx := testCtx(t)
	dir := t.TempDir()
	host := freeLoopbackAddr(t)
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog: {disabled: true}\nstorage:\n  filesystem: {rootdirectory: %q}\nhttp:\n  addr: %s\n", filepath.Join(dir, "storage"), host)
	serveDistribution(ctx, t, bin, dir, host, cfg, http.StatusOK)
	return host
}
