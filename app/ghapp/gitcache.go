package ghapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-github/v62/github"

	"github.com/catalogbot/catalogbot/gitfs"
)

// GitCache keeps one bare repository per catalog repository on disk and
// fetches into it only the references a job needs. Nothing is ever checked
// out: the checks read trees straight from git objects.
type GitCache struct {
	dir     string
	timeout time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per repository; never removed (one per repository the App serves)

	// objects keeps the decoded trees and blob sizes of the cached
	// repositories, shared by the Repo each check opens: a check of a large
	// catalog does not re-read its thousands of unchanged trees.
	objects *gitfs.ObjectCache
}

// NewGitCache returns a cache rooted at dir (created if missing); each fetch
// is bounded by fetchTimeout.
func NewGitCache(dir string, fetchTimeout time.Duration, log *slog.Logger) (*GitCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the git cache directory: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &GitCache{dir: dir, timeout: fetchTimeout, log: log, locks: map[string]*sync.Mutex{}, objects: gitfs.NewObjectCache()}, nil
}

// isRepoNamePart reports whether p is a GitHub owner or repository name as the cache accepts one: 1 to 100
// letters, digits, '-', '_' and '.' (^[A-Za-z0-9_.-]{1,100}$). A scan: that regular expression, compiled at
// start, cost every catalogbot process 0.3 MB and 4,500 allocations for its counted repetitions (issue 33.1).
func isRepoNamePart(p string) bool {
	return len(p) >= 1 && len(p) <= 100 && allBytes(p, func(c byte) bool { return isAlnum(c) || c == '_' || c == '.' || c == '-' })
}

// isFetchableRef reports whether r is a reference the pipeline asks for:
// ^refs/(heads/[A-Za-z0-9._/-]{1,250}|pull/[0-9]{1,10}/head)$.
func isFetchableRef(r string) bool {
	if branch, ok := strings.CutPrefix(r, "refs/heads/"); ok {
		return len(branch) >= 1 && len(branch) <= 250 && allBytes(branch, func(c byte) bool { return isAlnum(c) || strings.IndexByte("._/-", c) >= 0 })
	}
	if pull, ok := strings.CutPrefix(r, "refs/pull/"); ok {
		n, ok := strings.CutSuffix(pull, "/head")
		return ok && len(n) >= 1 && len(n) <= 10 && allBytes(n, func(c byte) bool { return c >= '0' && c <= '9' })
	}
	return false
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// Path is where the repository owner/name lives in the cache.
func (c *GitCache) Path(owner, name string) (string, error) {
	for _, p := range []string{owner, name} {
		if !isRepoNamePart(p) || p == "." || p == ".." {
			return "", fmt.Errorf("%q is not a GitHub owner or repository name", p)
		}
	}
	// GitHub names are case-insensitive: one directory per repository.
	return filepath.Join(c.dir, strings.ToLower(owner), strings.ToLower(name)+".git"), nil
}

func (c *GitCache) lock(key string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.locks[key]
	if !ok {
		l = &sync.Mutex{}
		c.locks[key] = l
	}
	return l
}

// Fetch brings refs (full names: refs/heads/main, refs/pull/7/head) of the
// repository at remoteURL into the cache and returns the bare repository's
// path. The token authenticates as the installation (user x-access-token);
// it is never written to disk. Jobs on one repository fetch one at a time.
// A fetch only adds objects, so a job may read the repository while another
// fetches into it; the exception is a damaged cache, which is removed and
// fetched again from scratch: a job reading it at that moment keeps the pack
// files it has open (gitfs holds them) but may fail on objects it had not
// yet opened, and is retried.
func (c *GitCache) Fetch(ctx context.Context, owner, name, remoteURL, token string, refs []string) (string, error) {
	path, err := c.Path(owner, name)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(remoteURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("clone URL %q: want an http(s) URL without credentials", remoteURL)
	}
	specs := make([]config.RefSpec, 0, len(refs))
	for _, r := range refs {
		if !isFetchableRef(r) || strings.Contains(r, "..") {
			return "", fmt.Errorf("reference %q cannot be fetched (want refs/heads/<branch> or refs/pull/<n>/head)", r)
		}
		specs = append(specs, config.RefSpec("+"+r+":"+r))
	}
	l := c.lock(path)
	l.Lock()
	defer l.Unlock()

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	err = c.fetch(ctx, path, remoteURL, token, specs)
	if err != nil && ctx.Err() == nil && !isTransportError(err) {
		// A damaged cache (interrupted write, lost object) is rebuilt once
		// from scratch rather than failing every job on the repository.
		c.log.Warn("git cache damaged; fetching again from scratch", "repo", owner+"/"+name, "err", err)
		if rerr := os.RemoveAll(path); rerr != nil {
			return "", fmt.Errorf("resetting the git cache of %s/%s: %w", owner, name, rerr)
		}
		err = c.fetch(ctx, path, remoteURL, token, specs)
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("fetching %s/%s timed out after %s: %w", owner, name, c.timeout, err)
		}
		return "", fmt.Errorf("fetching %s/%s: %w", owner, name, err)
	}
	c.log.Debug("fetched", "repo", owner+"/"+name, "refs", refs, "duration", time.Since(start))
	return path, nil
}

func (c *GitCache) fetch(ctx context.Context, path, remoteURL, token string, specs []config.RefSpec) error {
	repo, err := git.PlainOpen(path)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		repo, err = git.PlainInit(path, true)
	}
	if err != nil {
		return err
	}
	// An anonymous remote: the URL is not stored in the repository's config.
	remote := git.NewRemote(repo.Storer, &config.RemoteConfig{Name: "catalogbot", URLs: []string{remoteURL}})
	opt := &git.FetchOptions{RemoteName: "catalogbot", RefSpecs: specs, Tags: git.NoTags, Force: true}
	if token != "" {
		opt.Auth = &githttp.BasicAuth{Username: "x-access-token", Password: token}
	}
	err = remote.FetchContext(ctx, opt)
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// isTransportError tells errors of the server or the network (which a new
// cache would not fix) from errors of the local repository.
func isTransportError(err error) bool {
	for _, e := range []error{transport.ErrRepositoryNotFound, transport.ErrAuthenticationRequired,
		transport.ErrAuthorizationFailed, transport.ErrEmptyRemoteRepository, transport.ErrInvalidAuthMethod} {
		if errors.Is(err, e) {
			return true
		}
	}
	var (
		nm  git.NoMatchingRefSpecError
		he  *githttp.Err
		ue  *plumbing.UnexpectedError
		pe  *plumbing.PermanentError
		uer *url.Error
		ne  net.Error
	)
	return errors.As(err, &nm) || errors.As(err, &he) || errors.As(err, &ue) || errors.As(err, &pe) ||
		errors.As(err, &uer) || errors.As(err, &ne)
}

// Clients gives GitHub clients acting as one installation
// (implemented by *GitHub).
type Clients interface {
	Installation(ctx context.Context, installationID int64) (*github.Client, error)
	InstallationToken(ctx context.Context, installationID int64) (string, error)
}

// FetchRepo brings refs of owner/repo (cloned from cloneURL as the
// installation) into the git cache and opens the cached repository.
func FetchRepo(ctx context.Context, gh Clients, cache *GitCache, installationID int64, owner, repo, cloneURL string, refs []string) (*gitfs.Repo, error) {
	token, err := gh.InstallationToken(ctx, installationID)
	if err != nil {
		return nil, fmt.Errorf("installation token: %w", err)
	}
	path, err := cache.Fetch(ctx, owner, repo, cloneURL, token, refs)
	if err != nil {
		return nil, err
	}
	return gitfs.OpenShared(path, cache.objects)
}
