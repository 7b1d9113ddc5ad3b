package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/jobs"
)

// The head log keeps a row per change of head, on both databases; the hold fence makes a claim with a
// generation read before a hold fail.
func TestCommandStore(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			q := openTestQueue(t, backend, testConfig(t), jobHandlers{})
			s := q.Commands()
			t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
			a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
			for i, h := range []struct {
				sha string
				s   int
			}{{a, 0}, {a, 1}, {b, 2}, {b, 3}, {a, 4}, {a, 5}} {
				if err := s.SawHead(ctx, jobs.HeadSeen{Owner: "Acme", Repo: "Catalog", Number: 1, HeadSHA: h.sha}, t0.Add(time.Duration(h.s)*time.Second)); err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
			}
			log, err := s.HeadLog(ctx, "acme", "catalog", 1)
			if err != nil {
				t.Fatal(err)
			}
			var shas []string
			for _, h := range log {
				shas = append(shas, h.SHA[:1])
			}
			if strings.Join(shas, "") != "aba" || !log[1].At.Equal(t0.Add(2*time.Second)) {
				t.Errorf("head log = %v %+v, want a, b, a", shas, log)
			}

			gen, err := s.HoldGen(ctx, "acme", "catalog", 1)
			if err != nil {
				t.Fatal(err)
			}
			if since, err := s.BumpHold(ctx, "acme", "catalog", 1); err != nil || !since.IsZero() {
				t.Fatalf("bumpHold = %v, %v", since, err)
			}
			if ok, err := s.ClaimMerge(ctx, "acme", "catalog", 1, gen, t0); ok || err != nil {
				t.Fatalf("a claim with the generation before the hold = %v, %v", ok, err)
			}
			gen, _ = s.HoldGen(ctx, "acme", "catalog", 1)
			if ok, err := s.ClaimMerge(ctx, "acme", "catalog", 1, gen, t0); !ok || err != nil {
				t.Fatalf("claim = %v, %v", ok, err)
			}
			if since, err := s.BumpHold(ctx, "acme", "catalog", 1); err != nil || !since.Equal(t0) {
				t.Fatalf("bumpHold during a merge = %v, %v; want the claim's time", since, err)
			}
			if err := s.ReleaseMerge(ctx, "acme", "catalog", 1); err != nil {
				t.Fatal(err)
			}
			if since, _ := s.MergingSince(ctx, "acme", "catalog", 1); !since.IsZero() {
				t.Errorf("mergingSince after release = %v", since)
			}
		})
	}
}
