package registry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TagTakenError: the tag already names another image, and PushOnce does not move it.
type TagTakenError struct {
	Ref, Existing, Refused string // the tag, the digest it names, the digest that was not pushed
	// Concurrent: another push wrote the tag while this one was writing it; the tag names the other image.
	Concurrent bool
}

func (e *TagTakenError) Error() string {
	if e.Concurrent {
		return fmt.Sprintf("%s was written by another push at the same time and names %s; the image built now, %s, is not what it names, and a pushed version is never replaced: give the new content a new version", e.Ref, e.Existing, e.Refused)
	}
	return fmt.Sprintf("%s already names %s; the image built now is %s, and a pushed version is never replaced: give the new content a new version", e.Ref, e.Existing, e.Refused)
}

// DefaultPushSettle is how long PushOnce waits after writing a tag before reading it back.
const DefaultPushSettle = 500 * time.Millisecond

// tagLocks serialises the pushes of one client to one tag.
type tagLocks struct {
	mu    sync.Mutex
	locks map[string]*tagLock
}

type tagLock struct {
	mu    sync.Mutex
	users int
}

func (t *tagLocks) lock(key string) func() {
	t.mu.Lock()
	if t.locks == nil {
		t.locks = map[string]*tagLock{}
	}
	l := t.locks[key]
	if l == nil {
		l = &tagLock{}
		t.locks[key] = l
	}
	l.users++
	t.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		t.mu.Lock()
		if l.users--; l.users == 0 {
			delete(t.locks, key)
		}
		t.mu.Unlock()
	}
}

// PushOnce writes img under the tag ref unless the tag exists. A tag that names the same digest is left as it
// is (pushed is false); one that names another digest is a *TagTakenError, since whoever resolved the tag
// already holds the other content. When the registry cannot say whether the tag exists, nothing is pushed.
//
// Registries offer no "create this tag only if absent", so the write is made as narrow as it can be and then
// verified: pushes of one client to one tag are serialised; the image is uploaded by digest first (no tag
// moves), the tag is looked up again and written only if still absent (a manifest PUT, the only racing step),
// and read back after a short settle: if another push wrote the tag meanwhile and it names the other image,
// this push reports a *TagTakenError (Concurrent), never success. Two writers therefore both succeed only if
// one writes its tag after the other has read it back — a look-up-to-write gap longer than the settle time. A
// registry that makes tags immutable (quay, Harbor, ECR) refuses the second write, which reads as the tag
// being taken.
func (c *Client) PushOnce(ctx context.Context, ref string, img v1.Image) (pushed bool, err error) {
	d, err := img.Digest()
	if err != nil {
		return false, err
	}
	r, err := c.parse(ref)
	if err != nil {
		return false, err
	}
	tag, ok := r.(name.Tag)
	if !ok {
		return false, fmt.Errorf("%s is not a reference by tag", ref)
	}
	unlock := c.pushLocks.lock(tag.Context().Name() + ":" + tag.TagStr())
	defer unlock()

	taken := func() (bool, error) {
		switch res := c.Check(ctx, ref); res.Kind {
		case Exists:
			if res.Digest == d.String() {
				return true, nil
			}
			return true, &TagTakenError{Ref: ref, Existing: res.Digest, Refused: d.String()}
		case Missing:
			return false, nil
		default:
			return true, fmt.Errorf("cannot tell whether %s already exists (%s: %s); nothing was pushed", ref, res.Kind, res.Reason)
		}
	}
	if done, err := taken(); done {
		return false, err
	}
	if why := c.refusedUpFront(r.Context().Registry); why != "" {
		return false, fmt.Errorf("%s", why)
	}
	// The content first, by digest: nothing a tag names changes yet.
	if err := remote.Write(tag.Context().Digest(d.String()), img, c.RemoteOptions(ctx)...); err != nil {
		return false, fmt.Errorf("pushing %s: %w", ref, err)
	}
	if done, err := taken(); done {
		return false, err
	}
	if err := remote.Tag(tag, img, c.RemoteOptions(ctx)...); err != nil {
		// A registry with immutable tags refuses to move one that another push has just written.
		if done, terr := taken(); done && terr != nil {
			return false, terr
		}
		return false, fmt.Errorf("tagging %s: %w", ref, err)
	}
	settle := c.cfg.pushSettle
	select {
	case <-ctx.Done():
		return false, fmt.Errorf("%s was written, but could not be read back: %w", ref, ctx.Err())
	case <-time.After(settle):
	}
	switch res := c.Check(ctx, ref); {
	case res.Kind == Exists && res.Digest == d.String():
		return true, nil
	case res.Kind == Exists:
		return false, &TagTakenError{Ref: ref, Existing: res.Digest, Refused: d.String(), Concurrent: true}
	default:
		return false, fmt.Errorf("%s was written, but reading it back failed (%s: %s): the push is not confirmed", ref, res.Kind, res.Reason)
	}
}
