package checks

import (
	"context"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/change"
	"github.com/catalogbot/catalogbot/checks/render"
)

// The pull request and the verdicts are package change's (the room below every check); the names here keep
// the front ends (app, cmd) speaking of checks.PullRequest and checks.Result as they always have.

type (
	// PullRequest is what every check judges (package change).
	PullRequest = change.PullRequest
	// Revision is one side of a pull request.
	Revision = change.Revision
	// FileChange is one path that differs between base and head.
	FileChange = change.FileChange
	// FileStatus says how a path changed between base and head.
	FileStatus = change.FileStatus
	// Provenance is what the front end knows, from its own doing, about the pull request under check.
	Provenance = change.Provenance
	// Approval is an approving review of one commit.
	Approval = change.Approval
	// LineDiffCache keeps the changed lines of pairs of contents across checks.
	LineDiffCache = change.LineDiffCache
	// Check is one check of a pull request.
	Check = change.Check
	// Result is what one check says about a pull request.
	Result = change.Result
	// Conclusion is a check's verdict.
	Conclusion = change.Conclusion
)

// How a path changed.
const (
	FileAdded    = change.FileAdded
	FileModified = change.FileModified
	FileDeleted  = change.FileDeleted
	FileRenamed  = change.FileRenamed
)

// The conclusions, best to worst (see package verdict).
const (
	Success        = change.Success
	Failure        = change.Failure
	Neutral        = change.Neutral
	ActionRequired = change.ActionRequired
	Skipped        = change.Skipped
)

// Prepare computes what changed between base and head (package change) before the checks run.
func Prepare(ctx context.Context, pr *PullRequest) error { return change.Prepare(ctx, pr) }

// NewLineDiffCache makes a cache of changed lines bounded to max bytes.
func NewLineDiffCache(max int) *LineDiffCache { return change.NewLineDiffCache(max) }

// Worst returns the worse of two conclusions.
func Worst(a, b Conclusion) Conclusion { return change.Worst(a, b) }

// Conclude derives a conclusion from findings (see change.Conclude).
func Conclude(fs []catalog.Finding, unverified bool) Conclusion {
	return change.Conclude(fs, unverified)
}

// The templates check and the catalog preview live in checks/render; these names keep the front ends' words.
type (
	// Templates is the templates check (package render).
	Templates = render.Templates
	// RegistryBundles pulls bundle images for the templates check through the guarded registry client.
	RegistryBundles = render.RegistryBundles
)

// Preview computes the catalog preview of the pull request once (package render).
func Preview(ctx context.Context, pr *PullRequest) *render.CatalogPreview {
	return render.Preview(ctx, pr)
}

// UpgradeGraphs is the markdown of the upgrade graphs the pull request changes (package render).
func UpgradeGraphs(in *PullRequest) string { return render.UpgradeGraphs(in) }
