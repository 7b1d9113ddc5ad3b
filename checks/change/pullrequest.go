package change

import (
	"context"
	"io/fs"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/policy"
)

// Revision is one side of a pull request: the tree of a commit. FS must not
// follow symbolic links (gitfs's trees do not).
type Revision struct {
	SHA string
	FS  fs.FS
}

// FileStatus says how a path changed between base and head.
type FileStatus string

const (
	FileAdded    FileStatus = "added"
	FileModified FileStatus = "modified"
	FileDeleted  FileStatus = "deleted"
	FileRenamed  FileStatus = "renamed"
)

// FileChange is one path that differs between base and head. For a rename,
// OldPath is the path in base.
type FileChange struct {
	Path    string     `json:"path"`
	OldPath string     `json:"oldPath,omitempty"`
	Status  FileStatus `json:"status"`
}

// PullRequest is what every check judges: two revisions, the files that differ
// between them, the author, and the policy read from the base revision.
type PullRequest struct {
	// Repo names the repository (owner/name) for messages; it may be empty.
	Repo   string
	Number int
	Author string
	Base   Revision
	Head   Revision
	// Files changed between Base and Head.
	Files []FileChange
	// Policy is read from Base, never from Head: a pull request cannot grant itself anything.
	Policy *policy.Policy
	// Teams resolves @org/team principals of the policy; nil leaves them unresolved.
	Teams policy.TeamResolver
	// Limits bounds what is read from either revision.
	Limits catalog.Limits
	// Approvals are the approving reviews of the head commit by people other
	// than the author, when the front end knows them (ApprovalsKnown): the App
	// reads them from GitHub. An approval of an older commit is not here.
	Approvals      []Approval
	ApprovalsKnown bool
	// Lines, when set, keeps the changed lines of pairs of contents across checks (the App shares one).
	Lines *LineDiffCache
	// BundleDirs, when set, keeps what the checks learn of bundle directories by their content (package,
	// version, image digest), across pull requests; without it the checks of one pull request share what
	// they learn.
	BundleDirs *template.DirFactsCache
	// BundleRenders, when set, keeps what bundle directories render to between runs (a cache directory), so
	// a later check neither loads nor renders a directory whose content it rendered before.
	BundleRenders template.RenderStore

	// Provenance answers, from the front end's own records, whether the pull request is a catalog update the
	// front end made itself (see Derived). Nil, as in the CLI, means no pull request is one: nothing in a pull
	// request's content can prove who made it.
	Provenance Provenance

	// Changes is computed by Prepare before the checks run; checks only read it.
	Changes *ChangeSet
}

// Provenance is what the App knows, from its own doing, about the pull request under check. It must never
// answer from the pull request's content (a branch name, a commit's author line, a message): those are
// written by whoever pushed them.
type Provenance interface {
	// MadeUpdate reports whether the pull request is the App's own catalog update of pkg: opened by the App's
	// bot account, from the branch catalogbot/catalog-update/<pkg> of the base repository into the default
	// branch, every commit on it made by the App. The reason says why not.
	MadeUpdate(ctx context.Context, pkg string) (bool, string)
	// BundleRecorded reports whether image, which the pull request adds to the template file of pkg, is a
	// bundle image the App's own post-merge build pushed from dir for a default-branch commit, and that no
	// later default-branch commit took out of that template. The reason says why not.
	BundleRecorded(ctx context.Context, pkg, template, image, dir string) (bool, string)
}

// Approval is an approving review of one commit.
type Approval struct {
	Login string
	// SHA is the commit the review approved; only approvals of Head.SHA count.
	SHA string
}

// Paths are the paths the change touches: the path, and for a rename the path in base too.
func (f FileChange) Paths() []string {
	if f.OldPath != "" && f.OldPath != f.Path {
		return []string{f.Path, f.OldPath}
	}
	return []string{f.Path}
}
