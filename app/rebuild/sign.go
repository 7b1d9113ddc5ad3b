package rebuild

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
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

// publish pushes one image in sign.Publish's order: with a signing key, the content by digest, its
// signatures and attestation, then the tags, so that a tag never names unsigned content and a signing
// failure moves no tag; without one, the tags only. Only the rebuild lease's holder writes or signs.
func (b *rebuild) publish(ctx context.Context, p sign.Publication) (signed, error) {
	if b.r.signer == nil {
		_, err := sign.Publish(ctx, nil, p)
		return signed{}, err
	}
	write := p.WriteContent
	p.WriteContent = func(ctx context.Context, ref string) error {
		if err := b.lease.renew(ctx); err != nil {
			return err
		}
		if err := write(ctx, ref); err != nil {
			return err
		}
		return b.lease.renew(ctx)
	}
	res, err := sign.Publish(ctx, b.r.signer, p)
	if res == nil {
		return signed{}, err
	}
	return signed{Manifests: len(res.Signed), Attested: res.Attested}, err
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
	p.PullRequests, p.CheckRuns = b.mergedInto(ctx)
	return p
}

// maxProvenanceRuns bounds the check runs stated per merged pull request.
const maxProvenanceRuns = 100

// mergedInto reads, once per build, the pull requests the App merged into the commit (its merge audit log:
// number, merged head, merge commit, whose approval of that head counted) and the App's own check runs on
// each merged head with their conclusions. What cannot be read is left out and logged: the provenance then
// says less, never something the App did not record.
func (b *rebuild) mergedInto(ctx context.Context) ([]sign.PullRequest, []sign.CheckRun) {
	if b.merged != nil {
		return b.merged.prs, b.merged.runs
	}
	b.merged = &mergedFacts{}
	a := b.a
	if b.r.merges == nil {
		return nil, nil
	}
	entries, err := b.r.merges.ListAudit(ctx, a.Owner+"/"+a.Repo, 200)
	if err != nil {
		b.log.Warn("reading the merge audit for the provenance (it names no pull request)", "err", err)
		return nil, nil
	}
	for _, e := range entries {
		if !strings.EqualFold(e.MergeCommit, a.SHA) {
			continue
		}
		pr := sign.PullRequest{Number: e.Number, HeadSHA: e.MergedSHA, MergeCommit: e.MergeCommit}
		for _, u := range e.Approvers {
			pr.Approvals = append(pr.Approvals, sign.Approval{User: u, HeadSHA: e.MergedSHA})
		}
		b.merged.prs = append(b.merged.prs, pr)
		if b.r.appID == 0 || !jobs.IsSHA(e.MergedSHA) {
			continue // the App's own runs cannot be told from others'
		}
		opt := github.ListCheckRunsOptions{Filter: github.String("latest"), Status: github.String("completed"), AppID: github.Int64(b.r.appID)}
		n := 0
		err := ghapp.ListRuns(ctx, b.gh, a.Owner, a.Repo, e.MergedSHA, opt, 1, func(cr *github.CheckRun) {
			if n < maxProvenanceRuns {
				b.merged.runs = append(b.merged.runs, sign.CheckRun{Name: cr.GetName(), HeadSHA: e.MergedSHA, Conclusion: cr.GetConclusion()})
				n++
			}
		})
		if err != nil {
			b.log.Warn("reading the check runs of a merged head for the provenance (left out)", "pull_request", e.Number, "err", err)
		}
	}
	return b.merged.prs, b.merged.runs
}

// mergedFacts are what mergedInto read.
type mergedFacts struct {
	prs  []sign.PullRequest
	runs []sign.CheckRun
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
