package merge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/policy"
)

// What merges is what was judged. A check judges a pull request's head against the base of its time; the
// merge lands the pull request's change on the base as it is at the merge. The merge job (one at a time per
// repository, under the merge lease) therefore judges the result before it merges, incrementally, on the
// packages the pull request touches:
//
//   - Since the check: when the base moved, the paths it changed are compared with the pull request's
//     touched packages (their folders under every catalog and bundle root) and the base policy file. Nothing
//     of them changed: the check's judgement stands for the new base, no new check run set. Something did:
//     the pull request is checked again, and the status comment says why.
//   - Since the branch point: when the base changed a touched package's catalog folder since the pull
//     request branched, that folder is validated as the merge would leave it (the base's files with the pull
//     request's changes on top). An error the result has and neither side has alone is a semantic conflict
//     (the same bundle added in two files, two packages blobs, a deleted predecessor): the pull request is not
//     merged, and the status comment names the pull request that brought the other half.

// ResultJudgement is what the merge job found when it judged the merge result on the base head BaseSHA.
type ResultJudgement struct {
	BaseSHA string
	// Recheck, when set, says why the check's judgement does not stand for BaseSHA (what changed).
	Recheck string
	// RecheckUnderWay, with Recheck, says why no new check is asked for: one under way judges the base already.
	RecheckUnderWay string
	// Conflicts are the semantic conflicts of the result, each naming what it conflicts with.
	Conflicts []string
	// Unjudged, when set, says why the result could not be judged (the merge waits).
	Unjudged string
}

// Bounds of the result judgement.
const (
	// maxResultBytes bounds the bytes of the folders read for one judgement.
	maxResultBytes = 256 << 20
	// maxConflictsShown bounds the conflicts listed.
	maxConflictsShown = 5
	// maxAuditScanned bounds the merges looked at to name the pull request a conflict comes from.
	maxAuditScanned = 200
)

// packageDirOf returns, when p lies in a package folder under root (a path with glob segments allowed), the
// folder and its package.
func packageDirOf(root, p string) (dir, pkg string, ok bool) {
	rs := strings.Split(strings.Trim(root, "/"), "/")
	ps := strings.Split(p, "/")
	if root == "" || root == "." || len(ps) < len(rs)+2 {
		return "", "", false
	}
	for i, r := range rs {
		if m, err := path.Match(r, ps[i]); err != nil || !m {
			return "", "", false
		}
	}
	return strings.Join(ps[:len(rs)+1], "/"), ps[len(rs)], true
}

// rootsOf are the catalog and bundle roots of a policy.
func rootsOf(pol *policy.Policy) (catalogs, bundles []string) {
	for _, c := range pol.Catalogs {
		catalogs = append(catalogs, c.Path)
	}
	for _, b := range pol.Bundles {
		bundles = append(bundles, b.Path)
	}
	return catalogs, bundles
}

// relevantChange names the first changed path that can change the judgement of a pull request touching
// pkgs: the policy file, or a path in the folder of one of the packages under a catalog or bundle root.
func relevantChange(pol *policy.Policy, pkgs []string, changes []gitfs.Change) string {
	catalogs, bundles := rootsOf(pol)
	roots := append(catalogs, bundles...)
	for _, c := range changes {
		for _, p := range []string{c.Path, c.OldPath} {
			if p == "" {
				continue
			}
			if p == policy.FileName {
				return p
			}
			for _, root := range roots {
				if _, pkg, ok := packageDirOf(root, p); ok && slices.Contains(pkgs, pkg) {
					return p
				}
			}
		}
	}
	return ""
}

// judgeResult judges the merge of head onto baseHead for a pull request last checked against checkedBase.
func (m *Merger) judgeResult(ctx context.Context, a jobs.MergeArgs, repo *gitfs.Repo, pol *policy.Policy, checkedBase, baseHead, head string, touched []string, lim catalog.Limits) (ResultJudgement, error) {
	res := ResultJudgement{BaseSHA: baseHead}
	y, h := plumbing.NewHash(baseHead), plumbing.NewHash(head)
	if checkedBase != baseHead {
		x := plumbing.NewHash(checkedBase)
		changes, err := repo.ChangedPaths(ctx, x, y)
		switch {
		case err != nil && ctx.Err() != nil:
			return res, ctx.Err()
		case err != nil:
			res.Recheck = fmt.Sprintf("the base branch moved to %s since the check of %s, and catalogbot could not compare the two (%v)", jobs.Short(baseHead), jobs.Short(checkedBase), err)
		default:
			if p := relevantChange(pol, touched, changes); p != "" {
				res.Recheck = fmt.Sprintf("the base branch moved to %s since the check and changed `%s`, which this pull request's judgement depends on", jobs.Short(baseHead), p)
			}
		}
	}
	mb, err := repo.MergeBase(ctx, h, y)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Unjudged = fmt.Sprintf("catalogbot could not find where %s branched from %s: %v", jobs.Short(head), jobs.Short(baseHead), err)
		return res, nil
	}
	if mb == y {
		return res, nil // the base has nothing the pull request does not have
	}
	baseChanges, err := repo.ChangedPaths(ctx, mb, y)
	if err != nil {
		return res, fmt.Errorf("changes of the base since %s: %w", jobs.Short(mb.String()), err)
	}
	catalogs, _ := rootsOf(pol)
	dirs := map[string]bool{}
	for _, c := range baseChanges {
		for _, p := range []string{c.Path, c.OldPath} {
			for _, root := range catalogs {
				if dir, pkg, ok := packageDirOf(root, p); ok && slices.Contains(touched, pkg) {
					dirs[dir] = true
				}
			}
		}
	}
	if len(dirs) == 0 {
		return res, nil
	}
	prChanges, err := repo.ChangedPaths(ctx, mb, h)
	if err != nil {
		return res, fmt.Errorf("changes of the pull request since %s: %w", jobs.Short(mb.String()), err)
	}
	var sorted []string
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	budget := int64(maxResultBytes)
	for _, dir := range sorted {
		found, err := m.judgeDir(ctx, repo, dir, y, h, prChanges, lim, &budget)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Unjudged = fmt.Sprintf("catalogbot could not judge `%s` as the merge would leave it: %v", dir, err)
			return res, nil
		}
		if len(found) == 0 {
			continue
		}
		by := m.mergedInto(ctx, a.Owner, a.Repo, repo, mb, y, dir)
		for _, f := range found {
			if len(res.Conflicts) == maxConflictsShown {
				break
			}
			res.Conflicts = append(res.Conflicts, fmt.Sprintf("semantic conflict with %s, merged since this pull request branched: together they make `%s` invalid — %s",
				by, dir, ghapp.MarkdownInline(f.String())))
		}
	}
	return res, nil
}

// judgeDir validates folder dir as the merge would leave it and returns the errors that neither the base
// head nor the pull request's head has alone.
func (m *Merger) judgeDir(ctx context.Context, repo *gitfs.Repo, dir string, base, head gitfs.Hash, prChanges []gitfs.Change, lim catalog.Limits, budget *int64) ([]catalog.Finding, error) {
	baseFiles, err := readDir(ctx, repo, base, dir, budget)
	if err != nil {
		return nil, err
	}
	headFiles, err := readDir(ctx, repo, head, dir, budget)
	if err != nil {
		return nil, err
	}
	result := fstest.MapFS{}
	for p, f := range baseFiles {
		result[p] = f
	}
	under := func(p string) bool { return strings.HasPrefix(p, dir+"/") }
	for _, c := range prChanges {
		if c.OldPath != "" && under(c.OldPath) && c.Action == gitfs.Renamed {
			delete(result, c.OldPath)
		}
		if !under(c.Path) {
			continue
		}
		if c.Action == gitfs.Deleted {
			delete(result, c.Path)
		} else if f, ok := headFiles[c.Path]; ok {
			result[c.Path] = f
		}
	}
	errs := func(files fstest.MapFS) (map[string]bool, []catalog.Finding, error) {
		c, err := catalog.Load(ctx, files, lim)
		if err != nil {
			return nil, nil, err
		}
		keys := map[string]bool{}
		var out []catalog.Finding
		for _, f := range catalog.Validate(c, catalog.ValidateOptions{}) {
			if f.Severity == catalog.SeverityError {
				keys[f.Rule+"\x00"+f.Message] = true
				out = append(out, f)
			}
		}
		return keys, out, nil
	}
	onBase, _, err := errs(baseFiles)
	if err != nil {
		return nil, err
	}
	onHead, _, err := errs(headFiles)
	if err != nil {
		return nil, err
	}
	_, inResult, err := errs(result)
	if err != nil {
		return nil, err
	}
	var out []catalog.Finding
	for _, f := range inResult {
		if k := f.Rule + "\x00" + f.Message; !onBase[k] && !onHead[k] {
			out = append(out, f)
		}
	}
	return out, nil
}

// readDir reads the files of folder dir of a commit into a map file system, within budget.
func readDir(ctx context.Context, repo *gitfs.Repo, commit gitfs.Hash, dir string, budget *int64) (fstest.MapFS, error) {
	out := fstest.MapFS{}
	tree, err := repo.TreeFS(ctx, commit, gitfs.Limits{})
	if err != nil {
		return nil, err
	}
	err = fs.WalkDir(tree, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return fs.SkipDir // the folder is not there on this side
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if *budget -= info.Size(); *budget < 0 {
			return fmt.Errorf("the folders to judge hold more than %d bytes", maxResultBytes)
		}
		data, err := fs.ReadFile(tree, p)
		if err != nil {
			return err
		}
		out[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		return nil
	})
	return out, err
}

// mergedInto names the pull requests catalogbot merged between mb and baseHead whose check touched dir's
// package, or the base's commits when none is known.
func (m *Merger) mergedInto(ctx context.Context, owner, name string, repo *gitfs.Repo, mb, baseHead gitfs.Hash, dir string) string {
	pkg := path.Base(dir)
	var names []string
	if m.store != nil && owner != "" {
		rows, err := m.store.ListAudit(ctx, owner+"/"+name, maxAuditScanned)
		if err == nil {
			for _, e := range rows {
				mc := plumbing.NewHash(e.MergeCommit)
				if mc.IsZero() {
					continue
				}
				if a, err := repo.MergeBase(ctx, mc, baseHead); err != nil || a != mc {
					continue // not on the base
				}
				if a, err := repo.MergeBase(ctx, mc, mb); err == nil && a == mc {
					continue // before the branch point
				}
				if c, ok, err := m.store.LoadChecked(ctx, owner, name, e.Number); err == nil && ok && !slices.Contains(c.Touched, pkg) {
					continue
				}
				names = append(names, fmt.Sprintf("#%d (%s)", e.Number, jobs.Short(e.MergeCommit)))
			}
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("the base branch's changes to `%s` since %s (now %s)", dir, jobs.Short(mb.String()), jobs.Short(baseHead.String()))
	}
	slices.Reverse(names)
	return strings.Join(names, ", ")
}
