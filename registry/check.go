package registry

import (
	"context"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// digestCacheSize bounds the cache of references by digest known to exist.
const digestCacheSize = 10000

// Check says whether ref exists, with a HEAD request (never a pull: Docker Hub does not count HEAD against
// pull limits). References by digest found to exist are remembered for the life of the client; tags are
// always asked again, since they move. The call is bounded by WithTimeout and by ctx.
func (c *Client) Check(ctx context.Context, ref string) Result {
	return c.check(ctx, ref, nil)
}

// CheckAll checks refs and returns one Result per distinct reference. Repositories are checked up to
// WithConcurrency at a time; the references of one repository are checked one after the other over one
// authentication handshake (go-containerregistry's token transport is not safe for concurrent refreshes).
func (c *Client) CheckAll(ctx context.Context, refs []string) map[string]Result {
	out := make(map[string]Result, len(refs))
	var repos []string
	byRepo := map[string][]string{}
	for _, ref := range refs {
		if _, seen := out[ref]; seen {
			continue
		}
		out[ref] = Result{Ref: ref, Kind: Unverified, Reason: "not checked"}
		r, err := c.parse(ref)
		if err != nil {
			out[ref] = Result{Ref: ref, Kind: Invalid, Reason: err.Error()}
			continue
		}
		repo := r.Context().Name()
		if _, ok := byRepo[repo]; !ok {
			repos = append(repos, repo)
		}
		byRepo[repo] = append(byRepo[repo], ref)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, c.cfg.concurrency)
	for _, repo := range repos {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// The options are fixed and valid; should NewPuller fail all the same, each check makes its own.
			puller, _ := remote.NewPuller(c.RemoteOptions(ctx)...)
			for _, ref := range byRepo[repo] {
				res := c.check(ctx, ref, puller)
				mu.Lock()
				out[ref] = res
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

func (c *Client) check(ctx context.Context, ref string, puller *remote.Puller) Result {
	r, err := c.parse(ref)
	if err != nil {
		return Result{Ref: ref, Kind: Invalid, Reason: err.Error()}
	}
	digestRef, byDigest := r.(name.Digest)
	cacheKey := ""
	if byDigest {
		cacheKey = digestRef.Context().Name() + "@" + digestRef.DigestStr()
		if res, ok := c.cache.get(cacheKey); ok {
			res.Ref, res.Requests, res.Waited, res.RetryAfter = ref, 0, 0, 0
			return res
		}
	}
	opCtx, cancel, st, early := c.start(ctx, ref, r, c.cfg.timeout)
	if early != nil {
		return *early
	}
	defer cancel()
	if puller == nil {
		if puller, err = remote.NewPuller(c.RemoteOptions(opCtx)...); err != nil {
			return classify(opCtx, ref, err, st)
		}
	}
	desc, err := puller.Head(opCtx, r)
	if err != nil {
		return classify(opCtx, ref, err, st)
	}
	res := Result{Ref: ref, Kind: Exists, Digest: desc.Digest.String(), Status: 200}
	res.Requests, res.Waited, res.RetryAfter, _ = st.snapshot()
	if byDigest {
		c.cache.put(cacheKey, res)
	}
	return res
}

// digestCache remembers results by immutable reference. When full it forgets the oldest entry.
type digestCache struct {
	mu    sync.Mutex
	size  int
	m     map[string]Result
	order []string
}

func newDigestCache(size int) *digestCache {
	return &digestCache{size: size, m: map[string]Result{}}
}

func (d *digestCache) get(key string) (Result, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.m[key]
	return r, ok
}

func (d *digestCache) put(key string, r Result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.m[key]; ok {
		return
	}
	if len(d.order) >= d.size {
		delete(d.m, d.order[0])
		d.order = d.order[1:]
	}
	d.m[key] = r
	d.order = append(d.order, key)
}
