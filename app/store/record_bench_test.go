package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

// BenchmarkRecordDelivery measures what acknowledging a delivery costs the database: the transaction of a
// pull_request.synchronize (the delivery row, the repository, the head log and the check job) written by 8
// concurrent callers, as the webhook writes it, on PostgreSQL with synchronous_commit on (the default) and
// off, and on SQLite; "no-head-log" leaves out the head log row (added with the comment commands) and
// "no-repo-row" the upsert of the repository's row (every delivery of a repository updates the same row) to show
// their shares. It reports deliveries/s and the p50 and p99 of one Record.
//
//	go test ./app/store -run '^$' -bench BenchmarkRecordDelivery -benchtime 3000x
func BenchmarkRecordDelivery(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := func(b *testing.B, opt QueueOptions, headLog, repoRow bool) {
		ctx := context.Background()
		opt.River, opt.Log = &river.Config{}, log
		q, err := OpenQueue(ctx, opt)
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		var mu sync.Mutex
		var lat []time.Duration
		b.SetParallelism(4) // 4 × GOMAXPROCS callers: 8 on 2 cores
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var mine []time.Duration
			for i := 0; pb.Next(); i++ {
				id := make([]byte, 16)
				_, _ = rand.Read(id)
				sha := hex.EncodeToString(id) + "01234567"
				n := 1 + i%100
				d := jobs.Delivery{ID: hex.EncodeToString(id), Event: "pull_request", Action: "synchronize", InstallationID: 1,
					Repo: "acme/catalog", ReceivedAt: time.Now()}
				p := jobs.Plan{
					Jobs: []river.InsertManyParams{{Args: jobs.CheckPRArgs{InstallationID: 1, Owner: "acme", Repo: "catalog",
						Number: n, HeadSHA: sha, Reason: "pull_request.synchronize"}}},
					UpsertRepos: []jobs.InstalledRepo{{InstallationID: 1, Owner: "acme", Name: "catalog", CloneURL: "https://github.com/acme/catalog.git"}},
					Heads:       []jobs.HeadSeen{{Owner: "acme", Repo: "catalog", Number: n, HeadSHA: sha}},
				}
				if !headLog {
					p.Heads = nil
				}
				if !repoRow {
					p.UpsertRepos = nil
				}
				start := time.Now()
				if _, err := q.Record(ctx, d, p); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
		b.StopTimer()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[len(lat)*99/100])/float64(time.Millisecond), "p99-ms")
			b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "p50-ms")
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
	}
	for _, sync := range []string{"on", "off"} {
		for _, v := range []struct {
			name             string
			headLog, repoRow bool
		}{{"", true, true}, {"/no-head-log", false, true}, {"/no-repo-row", true, false}} {
			b.Run("postgres/synchronous_commit="+sync+v.name, func(b *testing.B) {
				u := testpg.URL(b)
				sep := "?"
				if strings.Contains(u, "?") {
					sep = "&"
				}
				run(b, QueueOptions{DatabaseURL: u + sep + "synchronous_commit=" + sync, Schema: testpg.FreshSchema(b, u, "bench_")}, v.headLog, v.repoRow)
			})
		}
	}
	b.Run("sqlite", func(b *testing.B) {
		run(b, QueueOptions{SQLitePath: filepath.Join(b.TempDir(), fmt.Sprintf("bench-%d.db", b.N))}, true, true)
	})
}
