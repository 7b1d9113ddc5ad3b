package app

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"
)

// BenchmarkWebhookAck measures the acknowledgement of signed pull_request
// deliveries over loopback HTTP: each one is verified, stored and its job
// enqueued in one transaction before the answer. One iteration is 1,000
// deliveries from 16 concurrent senders, each about a different head.
//
//	go test ./app -run '^$' -bench WebhookAck -benchtime 1x
func BenchmarkWebhookAck(b *testing.B) {
	const deliveries, senders = 1000, 16
	for _, backend := range backendNames {
		b.Run(backend, func(b *testing.B) {
			wh, q, _ := newTestWebhook(b, backend, "bench-secret")
			srv := httptest.NewServer(wh)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}, Timeout: 30 * time.Second}
			var lat []time.Duration
			var mu sync.Mutex
			var failed int
			total := time.Duration(0)
			b.ResetTimer()
			for iter := range b.N {
				bodies := make([][]byte, deliveries)
				for i := range bodies {
					h := sha1.Sum(fmt.Appendf(nil, "%d-%d", iter, i))
					bodies[i] = prPayload("synchronize", 1+i%50, hex.EncodeToString(h[:]), nil)
				}
				next := make(chan int)
				var wg sync.WaitGroup
				start := time.Now()
				for range senders {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range next {
							body := bodies[i]
							req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
							req.Header.Set("X-Hub-Signature-256", Sign([]byte("bench-secret"), body))
							req.Header.Set("X-GitHub-Event", "pull_request")
							req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bench-%d-%d", iter, i))
							t0 := time.Now()
							resp, err := client.Do(req)
							d := time.Since(t0)
							mu.Lock()
							if err != nil || resp.StatusCode != http.StatusAccepted {
								failed++
							} else {
								lat = append(lat, d)
							}
							mu.Unlock()
							if err == nil {
								resp.Body.Close()
							}
						}
					}()
				}
				for i := range deliveries {
					next <- i
				}
				close(next)
				wg.Wait()
				total += time.Since(start)
			}
			b.StopTimer()
			if failed > 0 {
				b.Fatalf("%d deliveries were not acknowledged with 202", failed)
			}
			if got, want := countRows(b, q, "river_job"), int64(deliveries*b.N); got != want {
				b.Fatalf("jobs = %d, want %d", got, want)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(deliveries*b.N)/total.Seconds(), "deliveries/s")
		})
	}
}
