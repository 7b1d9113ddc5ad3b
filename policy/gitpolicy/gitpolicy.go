package gitpolicy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// MaxSize bounds .catalogbot.yaml.
const MaxSize = 1 << 20

// Read reads and parses .catalogbot.yaml of one commit, its catalog
// patterns resolved on that commit (policy.ResolveCatalogs). A commit
// without the file gets policy.Default() (whose File is "").
func Read(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash) (*policy.Policy, error) {
	return ReadCached(ctx, repo, commit, nil)
}

// ReadCached is Read through cache (when set), keyed by the policy file's blob.
func ReadCached(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, cache *Cache) (*policy.Policy, error) {
	tree, err := repo.TreeFS(ctx, commit, gitfs.Limits{MaxFileSize: MaxSize, MaxTotalBytes: MaxSize})
	if err != nil {
		return nil, fmt.Errorf("reading %s from the base revision: %w", policy.FileName, err)
	}
	key, _ := tree.ContentKey(policy.FileName)
	p, ok := cache.get(key)
	if !ok {
		data, err := tree.ReadFile(policy.FileName)
		if errors.Is(err, fs.ErrNotExist) {
			return policy.Default(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s from the base revision: %w", policy.FileName, err)
		}
		if p, err = policy.Parse(policy.FileName, data); err != nil {
			return nil, err
		}
		cache.put(key, p)
	}
	// Catalog patterns (catalogs/v4.*) stand for the directories they match in this commit: the cached policy
	// keeps its patterns, each caller gets them resolved on its own commit.
	return p.ResolveCatalogs(tree)
}

// Cache keeps parsed policy files by git blob id. A parsed Policy
// is never modified, so one may serve every check that reads that content.
// It is safe for concurrent use and bounded.
type Cache struct {
	mu sync.Mutex
	m  map[string]*policy.Policy
}

// maxCached bounds a Cache: a few base revisions of a few repositories.
const maxCached = 64

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[string]*policy.Policy{}} }

func (c *Cache) get(key string) (*policy.Policy, bool) {
	if c == nil || key == "" {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[key]
	return p, ok
}

func (c *Cache) put(key string, p *policy.Policy) {
	if c == nil || key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCached {
		clear(c.m)
	}
	c.m[key] = p
}
