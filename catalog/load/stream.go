package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// The stream strategy (Stream): files parsed in order on lim.Concurrency workers, at most a window of
// bytes ahead of the consumer, so that ValidateFS holds the packages being judged, not the catalog.

// streamAheadBytes bounds, per worker, the bytes of files parsed ahead of
// the file being taken (one file is always allowed, whatever its size).
const streamAheadBytes = 4 << 20

// StreamAhead parses files in order on lim.Concurrency workers, at most
// streamAheadBytes per worker ahead of the file the consumer takes.
type StreamAhead struct {
	r      *Reader
	files  []CatalogFile
	lim    Limits
	window int64
	total  atomic.Int64

	mu     sync.Mutex
	cond   *sync.Cond
	next   int       // the next file for a worker
	taken  int       // files the consumer took
	ahead  int64     // bytes of files given to workers and not taken
	peak   int64     // most bytes ahead
	parsed []*Result // by file, until taken
	err    error
}

var errStreamStopped = errors.New("stopped")

func NewStreamAhead(r *Reader) *StreamAhead {
	files, lim := r.Set.Files, r.Lim
	a := &StreamAhead{r: r, files: files, lim: lim, parsed: make([]*Result, len(files)),
		window: int64(max(lim.Concurrency, 1)) * streamAheadBytes}
	a.cond = sync.NewCond(&a.mu)
	return a
}

// Start runs the workers; the returned func stops them and waits for them.
func (a *StreamAhead) Start(ctx context.Context) (stop func()) {
	var wg sync.WaitGroup
	for range min(a.lim.Concurrency, len(a.files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.work(ctx)
		}()
	}
	return func() {
		a.fail(errStreamStopped)
		wg.Wait()
	}
}

func (a *StreamAhead) fail(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.cond.Broadcast()
	a.mu.Unlock()
}

func (a *StreamAhead) work(ctx context.Context) {
	var buf []byte
	for {
		a.mu.Lock()
		for a.err == nil && a.next < len(a.files) && a.next > a.taken && a.ahead+a.files[a.next].Size > a.window {
			a.cond.Wait()
		}
		if a.err != nil || a.next >= len(a.files) {
			a.mu.Unlock()
			return
		}
		i := a.next
		a.next++
		a.ahead += a.files[i].Size
		a.peak = max(a.peak, a.ahead)
		a.mu.Unlock()
		if err := ctx.Err(); err != nil {
			a.fail(err)
			return
		}
		r, spare, err := a.r.ReadFile(a.files[i], 0, &a.total, buf)
		buf = spare
		if err != nil {
			a.fail(err)
			return
		}
		a.mu.Lock()
		a.parsed[i] = &r
		a.cond.Broadcast()
		a.mu.Unlock()
	}
}

// Take waits for file i's parse; files are taken in order.
func (a *StreamAhead) Take(i int) (*Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.parsed[i] == nil && a.err == nil {
		a.cond.Wait()
	}
	if a.err != nil {
		return nil, a.err
	}
	r := a.parsed[i]
	a.parsed[i] = nil
	a.taken = i + 1
	a.ahead -= a.files[i].Size
	a.cond.Broadcast()
	return r, nil
}

// Peak is the most bytes of files parsed ahead and not yet taken; read it once the workers are stopped.
func (a *StreamAhead) Peak() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}
