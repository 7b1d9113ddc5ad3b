package store

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/testpg"
)

// The promotion records on both backends: one row per (repository, from, to, package), saved again in place
// (never a second row), names matched without case for the repository; the App's commits read back as written;
// the tracking place moved in place; and a second open of the same database (another replica, a restart)
// finds the tables as they are.
func TestPromotionRecords(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			opt := QueueOptions{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if backend == "sqlite" {
				opt.SQLitePath = filepath.Join(t.TempDir(), "q.db")
			} else {
				u := testpg.URL(t)
				opt.DatabaseURL, opt.Schema = u, testpg.FreshSchema(t, u, "promotion_")
			}
			q, err := OpenQueue(ctx, opt)
			if err != nil {
				t.Fatal(err)
			}
			s := q.Promotions()
			at := time.UnixMilli(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC).UnixMilli())
			for _, p := range []Promotion{
				{From: "v4.22", To: "v4.23", Package: "etcd", Strategy: "always", State: PromotionCommitted, Updated: at},
				{From: "v4.22", To: "v4.23", Package: "etcd", Strategy: "always", State: PromotionOpen, Pull: 7, Updated: at},
				{From: "v4.22", To: "v4.23", Package: "frozen", Strategy: "never", State: PromotionSkipped, Reason: "never", Updated: at},
				{From: "v4.21", To: "v4.22", Package: "etcd", Strategy: "always", State: PromotionMerged, Pull: 3, Updated: at},
			} {
				if err := s.SavePromotion(ctx, "Acme", "Catalog", p); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := s.Promotions(ctx, "acme", "catalog", "v4.22", "v4.23")
			if err != nil {
				t.Fatal(err)
			}
			want := []Promotion{
				{From: "v4.22", To: "v4.23", Package: "etcd", Strategy: "always", State: PromotionOpen, Pull: 7, Updated: at},
				{From: "v4.22", To: "v4.23", Package: "frozen", Strategy: "never", State: PromotionSkipped, Reason: "never", Updated: at},
			}
			if !reflect.DeepEqual(rows, want) {
				t.Errorf("rows %+v, want %+v", rows, want)
			}
			if p, ok, err := s.Promotion(ctx, "acme", "catalog", "v4.21", "v4.22", "etcd"); err != nil || !ok || p.Pull != 3 || p.State != PromotionMerged {
				t.Errorf("v4.21 → v4.22 etcd: %+v %v %v", p, ok, err)
			}
			if _, ok, err := s.Promotion(ctx, "acme", "catalog", "v4.22", "v4.23", "gizmo"); err != nil || ok {
				t.Errorf("gizmo found: %v %v", ok, err)
			}
			c := PromotionCommit{SHA: "ABCDEF0123456789abcdef0123456789abcdef01", From: "v4.22", To: "v4.23", Package: "etcd", Strategy: "always",
				Base: "1111111111111111111111111111111111111111", Tree: "2222222222222222222222222222222222222222", Files: []string{"catalogs/v4.23/etcd/catalog.yaml"}, Created: at}
			for i := 0; i < 2; i++ { // a retried job records the same commit again: one row
				if err := s.RecordPromotionCommit(ctx, "acme", "catalog", c); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := s.PromotionCommit(ctx, "ACME", "catalog", "abcdef0123456789abcdef0123456789abcdef01")
			c.SHA = "abcdef0123456789abcdef0123456789abcdef01"
			if err != nil || !ok || !reflect.DeepEqual(got, c) {
				t.Errorf("commit %+v %v %v, want %+v", got, ok, err, c)
			}
			if _, ok, _ := s.PromotionCommit(ctx, "acme", "other", c.SHA); ok {
				t.Errorf("another repository's commit found")
			}
			if _, _, ok, err := s.PromotionTracking(ctx, "acme", "catalog", "v4.22", "v4.23"); err != nil || ok {
				t.Errorf("tracking before any: %v %v", ok, err)
			}
			for _, id := range []int64{0, 99} {
				if err := s.SetPromotionTracking(ctx, "acme", "catalog", "v4.22", "v4.23", 12, id); err != nil {
					t.Fatal(err)
				}
			}
			if issue, comment, ok, err := s.PromotionTracking(ctx, "acme", "catalog", "v4.22", "v4.23"); err != nil || !ok || issue != 12 || comment != 99 {
				t.Errorf("tracking %d %d %v %v", issue, comment, ok, err)
			}
			q.Close()
			q, err = OpenQueue(ctx, opt)
			if err != nil {
				t.Fatalf("opening the database again: %v", err)
			}
			defer q.Close()
			if rows, err := q.Promotions().Promotions(ctx, "acme", "catalog", "v4.22", "v4.23"); err != nil || !reflect.DeepEqual(rows, want) {
				t.Errorf("after opening again: %+v, %v", rows, err)
			}
		})
	}
}
