package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/registry"
	"github.com/catalogbot/catalogbot/sign"
)

// signOptions are the signing flags of build and build-bundle.
type signOptions struct {
	keyFile      string
	sourceRepo   string
	sourceCommit string
}

// signPasswordEnv holds the password of a cosign-encrypted key (COSIGN_PASSWORD is read too, as cosign does).
const signPasswordEnv = "CATALOGBOT_SIGN_KEY_PASSWORD"

func (o *signOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.keyFile, "sign-key", "", "sign the pushed image (and attach its provenance) with this PEM ECDSA P-256 private key: PKCS#8, EC PRIVATE KEY, or a cosign key with its password in $"+signPasswordEnv+"; without it nothing is signed")
	fs.StringVar(&o.sourceRepo, "source-repo", "", "the source repository the provenance names (owner/name on GitHub, or a URL); default: the git remote origin of the built directory")
	fs.StringVar(&o.sourceCommit, "source-commit", "", "the commit the provenance names (40 hex); default: the git HEAD of the built directory")
}

// signSummary is the signing part of the JSON reports.
type signSummary struct {
	Signed   []string `json:"signed,omitempty"`
	Key      string   `json:"signing_key,omitempty"`
	Attested bool     `json:"attested,omitempty"`
	// NotSigned says why nothing was signed.
	NotSigned string `json:"not_signed,omitempty"`
}

// noKeyLine is printed (and reported) when no key is given: a push without a signature is said out loud.
const noKeyLine = "not signed: no signing key configured (--sign-key)"

// openSigner loads the key; nil when no key was given.
func (o *signOptions) openSigner(reg *registry.Client) (*sign.Signer, *sign.Key, error) {
	if o.keyFile == "" {
		return nil, nil, nil
	}
	key, err := sign.LoadKey(o.keyFile, func() ([]byte, error) {
		for _, env := range []string{signPasswordEnv, "COSIGN_PASSWORD"} {
			if pw := os.Getenv(env); pw != "" {
				return []byte(pw), nil
			}
		}
		return nil, fmt.Errorf("set $%s to its password", signPasswordEnv)
	})
	if err != nil {
		return nil, nil, err
	}
	return sign.NewSigner(key, reg, nil), key, nil
}

// provenance is what the command knows about the build: the flags, else what git says about dir.
func (o *signOptions) provenance(ctx context.Context, dir, buildType, base string, started time.Time, stderr io.Writer, cmd string) (*sign.Provenance, error) {
	repo, commit := o.sourceRepo, o.sourceCommit
	if repo == "" {
		repo = gitOutput(ctx, dir, "config", "--get", "remote.origin.url")
		repo = scrubURL(repo)
	}
	if commit == "" {
		commit = gitOutput(ctx, dir, "rev-parse", "HEAD")
		if commit != "" && gitOutput(ctx, dir, "status", "--porcelain", "--", ".") != "" {
			fmt.Fprintf(stderr, "catalogbot %s: %s has uncommitted changes: the provenance names HEAD %s, which is not exactly what was built\n", cmd, dir, commit)
		}
	}
	// The directory built, relative to the checkout's top (empty outside one).
	path := strings.TrimSuffix(gitOutput(ctx, dir, "rev-parse", "--show-prefix"), "/")
	if repo == "" {
		return nil, errors.New("not attested: no source repository known (give --source-repo owner/name, or build inside a git checkout with an origin remote)")
	}
	return &sign.Provenance{
		BuildType: buildType, Repository: repo, Commit: commit, Path: path, BaseImage: base,
		BuilderVersion: buildVersion(), StartedOn: started, FinishedOn: time.Now().UTC(),
	}, nil
}

// gitOutput runs git in dir and returns its trimmed output, or "" when it fails (not a checkout, no git).
func gitOutput(ctx context.Context, dir string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// core.fsmonitor off: a checkout's config could name a program for git status to run.
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

var urlCredentials = regexp.MustCompile(`^([a-z][a-z0-9+.-]*://)[^/@]*@`)

// scrubURL drops credentials a remote URL may carry (https://user:token@host/...): they never enter an
// attestation.
func scrubURL(u string) string { return urlCredentials.ReplaceAllString(u, "$1") }

// summarise is the JSON report's account of what key signed.
func summarise(key *sign.Key, res *sign.Result) signSummary {
	return signSummary{Signed: res.Signed, Key: key.Fingerprint(), Attested: res.Attested}
}

func attestedWord(attested bool) string {
	if attested {
		return ", provenance attested"
	}
	return ", no provenance"
}
