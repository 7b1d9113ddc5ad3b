package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// What the App did itself, for the provenance of its catalog updates (checks.Provenance). Nothing a pull
// request carries can say who made it; these rows can, because only the App writes them:
//
//   - catalogbot_bundle_build: each bundle image the post-merge build pushed (or found already there with the
//     same digest) from a bundle directory of a default-branch commit, by its reference pinned by digest.
//     The first commit that built it is kept.
//   - catalogbot_update_commit: each commit the App created on a catalog update branch, with the package, the
//     default-branch commit it was built on and the bundle images it adds to the templates. A pull request
//     whose every own commit is here was made by the App; the newest row of a package names the bundles its
//     open update still carries, until it is settled (merged, closed, or nothing left to add).
var updateSchema = []string{
	`CREATE TABLE IF NOT EXISTS catalogbot_bundle_build (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		image TEXT NOT NULL,
		package TEXT NOT NULL,
		dir TEXT NOT NULL,
		commit_sha TEXT NOT NULL,
		built_at BIGINT NOT NULL,
		PRIMARY KEY (owner, name, image))`,
	`CREATE TABLE IF NOT EXISTS catalogbot_update_commit (
		owner TEXT NOT NULL,
		name TEXT NOT NULL,
		sha TEXT NOT NULL,
		package TEXT NOT NULL,
		base_sha TEXT NOT NULL,
		bundles TEXT NOT NULL,
		created_at BIGINT NOT NULL,
		settled INTEGER NOT NULL DEFAULT 0,
		pull INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (owner, name, sha))`,
}

// BundleBuild is one bundle image the App's build pushed.
type BundleBuild struct {
	Image, Package, Dir, Commit string
}

// UpdateCommit is one commit the App made on a catalog update branch.
type UpdateCommit struct {
	SHA, Package, Base string
	// Bundles are the images the commit adds to the templates over its base.
	Bundles []string
	Created time.Time
	Settled bool
	// Pull is the pull request the App opened or updated for the commit (0 until then).
	Pull int
}

// UpdateStore keeps the rows above; implemented by every queue backend.
type UpdateStore interface {
	RecordBundleBuild(ctx context.Context, owner, name string, b BundleBuild, at time.Time) error
	BundleBuild(ctx context.Context, owner, name, image string) (BundleBuild, bool, error)
	RecordUpdateCommit(ctx context.Context, owner, name string, c UpdateCommit) error
	UpdateCommit(ctx context.Context, owner, name, sha string) (UpdateCommit, bool, error)
	// latestUpdateCommit is the newest commit the App made for pkg.
	LatestUpdateCommit(ctx context.Context, owner, name, pkg string) (UpdateCommit, bool, error)
	// pendingUpdates are the newest commits of the packages whose update is not settled.
	PendingUpdates(ctx context.Context, owner, name string) ([]UpdateCommit, error)
	// settleUpdate marks pkg's update settled: its bundles are no longer carried over.
	SettleUpdate(ctx context.Context, owner, name, pkg string) error
	// setUpdatePull records the pull request that shows the commit sha.
	SetUpdatePull(ctx context.Context, owner, name, sha string, number int) error
}

// Updates is the record of bundle builds and catalog update commits.
func (q *Queue) Updates() UpdateStore { return q.b }

func (b *riverBackend[TTx]) RecordBundleBuild(ctx context.Context, owner, name string, bb BundleBuild, at time.Time) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_bundle_build (owner, name, image, package, dir, commit_sha, built_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (owner, name, image) DO NOTHING`,
			strings.ToLower(owner), strings.ToLower(name), bb.Image, bb.Package, bb.Dir, strings.ToLower(bb.Commit), at.UnixMilli())
		return err
	})
}

func (b *riverBackend[TTx]) BundleBuild(ctx context.Context, owner, name, image string) (BundleBuild, bool, error) {
	var out BundleBuild
	found := false
	err := b.db.query(ctx, `SELECT image, package, dir, commit_sha FROM catalogbot_bundle_build
		WHERE owner = $1 AND name = $2 AND image = $3`, []any{strings.ToLower(owner), strings.ToLower(name), image},
		func(scan func(...any) error) error {
			found = true
			return scan(&out.Image, &out.Package, &out.Dir, &out.Commit)
		})
	return out, found, err
}

func (b *riverBackend[TTx]) RecordUpdateCommit(ctx context.Context, owner, name string, c UpdateCommit) error {
	bundles, err := json.Marshal(c.Bundles)
	if err != nil {
		return err
	}
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `INSERT INTO catalogbot_update_commit (owner, name, sha, package, base_sha, bundles, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (owner, name, sha) DO NOTHING`,
			strings.ToLower(owner), strings.ToLower(name), strings.ToLower(c.SHA), c.Package, strings.ToLower(c.Base), string(bundles), c.Created.UnixNano())
		return err
	})
}

func (b *riverBackend[TTx]) UpdateCommit(ctx context.Context, owner, name, sha string) (UpdateCommit, bool, error) {
	return b.oneUpdateCommit(ctx, `SELECT sha, package, base_sha, bundles, created_at, settled, pull FROM catalogbot_update_commit
		WHERE owner = $1 AND name = $2 AND sha = $3`, strings.ToLower(owner), strings.ToLower(name), strings.ToLower(sha))
}

func (b *riverBackend[TTx]) LatestUpdateCommit(ctx context.Context, owner, name, pkg string) (UpdateCommit, bool, error) {
	return b.oneUpdateCommit(ctx, `SELECT sha, package, base_sha, bundles, created_at, settled, pull FROM catalogbot_update_commit
		WHERE owner = $1 AND name = $2 AND package = $3 ORDER BY created_at DESC, sha LIMIT 1`, strings.ToLower(owner), strings.ToLower(name), pkg)
}

func (b *riverBackend[TTx]) PendingUpdates(ctx context.Context, owner, name string) ([]UpdateCommit, error) {
	return b.updateCommits(ctx, `SELECT c.sha, c.package, c.base_sha, c.bundles, c.created_at, c.settled, c.pull FROM catalogbot_update_commit c
		WHERE c.owner = $1 AND c.name = $2 AND c.settled = 0 AND c.created_at = (SELECT max(l.created_at) FROM catalogbot_update_commit l
			WHERE l.owner = c.owner AND l.name = c.name AND l.package = c.package)
		ORDER BY c.package`, strings.ToLower(owner), strings.ToLower(name))
}

func (b *riverBackend[TTx]) SettleUpdate(ctx context.Context, owner, name, pkg string) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `UPDATE catalogbot_update_commit SET settled = 1 WHERE owner = $1 AND name = $2 AND package = $3`,
			strings.ToLower(owner), strings.ToLower(name), pkg)
		return err
	})
}

func (b *riverBackend[TTx]) SetUpdatePull(ctx context.Context, owner, name, sha string, number int) error {
	return b.inTx(ctx, func(tx TTx) error {
		_, err := b.db.exec(ctx, tx, `UPDATE catalogbot_update_commit SET pull = $4 WHERE owner = $1 AND name = $2 AND sha = $3`,
			strings.ToLower(owner), strings.ToLower(name), strings.ToLower(sha), number)
		return err
	})
}

func (b *riverBackend[TTx]) oneUpdateCommit(ctx context.Context, q string, args ...any) (UpdateCommit, bool, error) {
	cs, err := b.updateCommits(ctx, q, args...)
	if err != nil || len(cs) == 0 {
		return UpdateCommit{}, false, err
	}
	return cs[0], true, nil
}

func (b *riverBackend[TTx]) updateCommits(ctx context.Context, q string, args ...any) ([]UpdateCommit, error) {
	var out []UpdateCommit
	err := b.db.query(ctx, q, args, func(scan func(...any) error) error {
		var c UpdateCommit
		var bundles string
		var created, settled, pull int64
		if err := scan(&c.SHA, &c.Package, &c.Base, &bundles, &created, &settled, &pull); err != nil {
			return err
		}
		c.Created, c.Settled, c.Pull = time.Unix(0, created), settled != 0, int(pull)
		if err := json.Unmarshal([]byte(bundles), &c.Bundles); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	return out, err
}
