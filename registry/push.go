package registry

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TagTakenError: the tag already names another image, and PushOnce does not move it.
type TagTakenError struct {
	Ref, Existing, Refused string // the tag, the digest it names, the digest that was not pushed
}

func (e *TagTakenError) Error() string {
	return fmt.Sprintf("%s already names %s; the image built now is %s, and a pushed version is never replaced: give the new content a new version", e.Ref, e.Existing, e.Refused)
}

// PushOnce writes img under the tag ref unless the tag exists. A tag that names the same digest is left as it
// is (pushed is false); one that names another digest is a *TagTakenError, since whoever resolved the tag
// already holds the other content. When the registry cannot say whether the tag exists, nothing is pushed.
func (c *Client) PushOnce(ctx context.Context, ref string, img v1.Image) (pushed bool, err error) {
	d, err := img.Digest()
	if err != nil {
		return false, err
	}
	r, err := c.parse(ref)
	if err != nil {
		return false, err
	}
	switch res := c.Check(ctx, ref); res.Kind {
	case Exists:
		if res.Digest == d.String() {
			return false, nil
		}
		return false, &TagTakenError{Ref: ref, Existing: res.Digest, Refused: d.String()}
	case Missing:
	default:
		return false, fmt.Errorf("cannot tell whether %s already exists (%s: %s); nothing was pushed", ref, res.Kind, res.Reason)
	}
	if why := c.refusedUpFront(r.Context().Registry); why != "" {
		return false, fmt.Errorf("%s", why)
	}
	if err := remote.Write(r, img, c.RemoteOptions(ctx)...); err != nil {
		return false, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return true, nil
}
