package rebuild

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/sign"
)

// notSignedLine is said in a run's summary when the App has no signing key: an unsigned push is said out loud.
const notSignedLine = "not signed: no signing key configured (`rebuild.sign_key_file`)"

// loadSigningKey reads rebuild.sign_key_file once, at start; nil when none is configured. An encrypted key
// is refused: the App has no one to ask for its password.
func loadSigningKey(file string) (*sign.Key, error) {
	if file == "" {
		return nil, nil
	}
	k, err := sign.LoadKey(file, func() ([]byte, error) {
		return nil, errors.New("the key is encrypted; the App takes an unencrypted PEM key (PKCS#8 or EC PRIVATE KEY): decrypt it, for example with `openssl pkcs8`, and mount it like the App's private key")
	})
	if err != nil {
		return nil, fmt.Errorf("rebuild.sign_key_file: %w", err)
	}
	return k, nil
}

// signed is what signing one pushed image did.
type signed struct {
	Manifests int
	Attested  bool
}

// signPushed signs the image already pushed by digest (and each platform manifest of an index) and attaches
// the provenance, before any tag names it. An error leaves every tag where it was: the caller moves none.
func (b *rebuild) signPushed(ctx context.Context, byDigest string, identities []string, prov *sign.Provenance) (signed, error) {
	if err := b.lease.renew(ctx); err != nil {
		return signed{}, err
	}
	res, err := b.r.signer.Sign(ctx, sign.Request{Image: byDigest, Identities: identities, Provenance: prov})
	if err != nil {
		return signed{}, fmt.Errorf("signing %s failed, so no tag was moved to it: %w", byDigest, err)
	}
	return signed{Manifests: len(res.Signed), Attested: res.Attested}, nil
}

// provenance states how an image was built from the App's own records only: the repository and the
// default-branch commit of the push it received, the pull requests it merged into that commit (from its
// merge audit log), the base image it built on and its own version. Nothing a pull request says enters it.
func (b *rebuild) provenance(ctx context.Context, buildType, dir, base string, started time.Time) *sign.Provenance {
	a := b.a
	p := &sign.Provenance{
		BuildType: buildType, Repository: a.Owner + "/" + a.Repo, Ref: a.Ref, Commit: strings.ToLower(a.SHA),
		Path: dir, BaseImage: base, BuilderVersion: b.r.version, StartedOn: started.UTC(), FinishedOn: b.r.now().UTC(),
	}
	if a.DeliveryID != "" {
		p.InvocationID = "delivery:" + a.DeliveryID
	}
	if b.r.merges != nil {
		entries, err := b.r.merges.ListAudit(ctx, a.Owner+"/"+a.Repo, 200)
		if err != nil {
			b.log.Warn("reading the merge audit for the provenance (it names no pull request)", "err", err)
		}
		for _, e := range entries {
			if strings.EqualFold(e.MergeCommit, a.SHA) {
				p.PullRequests = append(p.PullRequests, sign.PullRequest{Number: e.Number, HeadSHA: e.MergedSHA, MergeCommit: e.MergeCommit})
			}
		}
	}
	return p
}

// signingNote is the run summary's line about signing.
func (r *Rebuilder) signingNote(n int) string {
	if r.signer == nil {
		return "\n" + notSignedLine + "\n"
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("\nSigned with key `%s`, each image by digest before its tag was moved, its provenance attested (verify: `catalogbot audit --image REF --key PUB`).\n", r.signKey.Fingerprint())
}

func attestedWord(attested bool) string {
	if attested {
		return ", provenance attested"
	}
	return ", no provenance"
}

func countSigned(results []targetResult) int {
	n := 0
	for _, t := range results {
		if t.Signed.Manifests > 0 {
			n++
		}
	}
	return n
}
