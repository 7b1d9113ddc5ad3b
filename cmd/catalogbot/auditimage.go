package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/catalogbot/catalogbot/sign"
)

// auditImageOptions are the flags of `catalogbot audit --image`.
type auditImageOptions struct {
	image, keyFile, authFile string
	insecure                 []string
}

// maxPublicKeyBytes bounds the public key file.
const maxPublicKeyBytes = 64 << 10

// auditImage verifies an image's signatures and provenance under a public key and prints the chain the
// attestation states: the repository and commit, the pull requests merged, who approved which head, the check
// runs, the base image and the builder. Exit 0: signed and attested; 1: not; 2: could not tell.
func auditImage(ctx context.Context, o auditImageOptions, output string, timeout time.Duration, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "catalogbot audit: "+format+"\n", a...)
		return code
	}
	if o.keyFile == "" {
		return fail(exitCannotRun, "--image needs --key, the public key (PEM) the images are signed with")
	}
	f, err := os.Open(o.keyFile)
	if err != nil {
		return fail(exitCannotRun, "public key: %v", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPublicKeyBytes+1))
	f.Close()
	if err != nil {
		return fail(exitCannotRun, "public key %s: %v", o.keyFile, err)
	}
	pub, err := sign.ParsePublicKey(data)
	if err != nil {
		return fail(exitCannotRun, "%s: %v", o.keyFile, err)
	}
	reg, err := buildRegistry(o.authFile, o.insecure)
	if err != nil {
		return fail(exitCannotRun, "%v", err)
	}
	defer reg.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := sign.Verify(ctx, reg, pub, o.image, sign.VerifyOptions{RequireAttestation: true})
	code := exitOK
	switch {
	case v == nil:
		return fail(exitCannotRun, "%v", err)
	case errors.Is(err, sign.ErrNotSigned) || errors.Is(err, sign.ErrNoAttestation):
		code = exitFail
	case err != nil:
		return fail(exitCannotRun, "%v", err)
	}
	if output == "json" {
		writeJSON(stdout, v)
	} else {
		writeImageChain(stdout, v, pub.Fingerprint())
	}
	if code != exitOK {
		fmt.Fprintf(stderr, "catalogbot audit: %v\n", err)
	}
	return code
}

// writeImageChain prints what the verification found, manifest by manifest.
func writeImageChain(w io.Writer, v *sign.Verification, key string) {
	fmt.Fprintf(w, "image %s (key %s)\n", v.Image, key)
	var shown string
	for i, m := range v.Manifests {
		what := "image"
		if i > 0 {
			what = "platform manifest"
		}
		if len(m.Identities) == 0 {
			fmt.Fprintf(w, "  %s %s: NOT SIGNED by this key\n", what, m.Digest)
		} else {
			fmt.Fprintf(w, "  %s %s: signed for %s\n", what, m.Digest, strings.Join(m.Identities, ", "))
		}
		for _, r := range m.Rejected {
			fmt.Fprintf(w, "    set aside: %s\n", r)
		}
		if len(m.Statements) == 0 {
			fmt.Fprintf(w, "    no provenance attested by this key\n")
			continue
		}
		for _, st := range m.Statements {
			p := st.Provenance
			text := provenanceText(p)
			if text == shown {
				fmt.Fprintf(w, "    provenance: the same as above\n")
				continue
			}
			shown = text
			fmt.Fprint(w, text)
		}
	}
}

// provenanceText is the chain one provenance states, indented under its manifest.
func provenanceText(p sign.Provenance) string {
	var b strings.Builder
	kind := p.BuildType
	if i := strings.LastIndex(kind, "#"); i >= 0 && strings.HasPrefix(kind, sign.DefaultBuilderID) {
		kind = kind[i+1:]
	}
	fmt.Fprintf(&b, "    provenance (%s): built by %s %s\n", kind, p.BuilderID, orDash(p.BuilderVersion))
	fmt.Fprintf(&b, "      source %s %s at %s", p.Repository, orDash(p.Ref), orDash(p.Commit))
	if p.Path != "" {
		fmt.Fprintf(&b, ", %s", p.Path)
	}
	b.WriteString("\n")
	for _, pr := range p.PullRequests {
		fmt.Fprintf(&b, "      pull request #%d, head %s, merged as %s\n", pr.Number, orDash(pr.HeadSHA), orDash(pr.MergeCommit))
		for _, a := range pr.Approvals {
			at := ""
			if !a.At.IsZero() {
				at = " at " + a.At.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(&b, "        approved by %s for head %s%s\n", a.User, a.HeadSHA, at)
		}
	}
	for _, c := range p.CheckRuns {
		fmt.Fprintf(&b, "      check run %s on %s: %s\n", c.Name, orDash(c.HeadSHA), c.Conclusion)
	}
	if p.BaseImage != "" {
		fmt.Fprintf(&b, "      base image %s\n", p.BaseImage)
	}
	if !p.StartedOn.IsZero() {
		fmt.Fprintf(&b, "      built %s to %s\n", p.StartedOn.UTC().Format(time.RFC3339), p.FinishedOn.UTC().Format(time.RFC3339))
	}
	return b.String()
}
