package registry

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ReferrersSupported says whether the registry of subject's repository answers the OCI 1.1 referrers API
// for it: GET /v2/<name>/referrers/<digest> answered 200 with an image index. Any other answer (404 and 400
// from a registry before OCI 1.1, a redirect, another media type) is false; an error is returned only when
// no answer came. go-containerregistry's own look-up cannot tell: it falls back to the referrers tag
// schema by itself. Ask after subject was pushed: some registries answer 404 for a repository they do not
// hold yet.
func (c *Client) ReferrersSupported(ctx context.Context, subject name.Digest) (bool, error) {
	repo := subject.Context()
	if why := c.refusedUpFront(repo.Registry); why != "" {
		return false, fmt.Errorf("%s: %s", subject, why)
	}
	auth, err := c.keychain.Resolve(repo)
	if err != nil {
		return false, err
	}
	ctx = withBudget(ctx, c.budget)
	rt, err := transport.NewWithContext(ctx, repo.Registry, auth, c.rt, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return false, fmt.Errorf("referrers of %s: %w", subject, err)
	}
	u := url.URL{Scheme: repo.Scheme(), Host: repo.RegistryStr(), Path: "/v2/" + repo.RepositoryStr() + "/referrers/" + subject.DigestStr()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", string(types.OCIImageIndex))
	client := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return false, fmt.Errorf("referrers of %s: %w", subject, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return resp.StatusCode == http.StatusOK && mt == string(types.OCIImageIndex), nil
}
