package change

import (
	"context"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/verdict"
)

// Conclusion is a check's verdict, named as GitHub names check-run conclusions (package verdict, where it
// lives so that what reports a check run can name it without importing the checks).
type Conclusion = verdict.Conclusion

// The conclusions, best to worst (see package verdict).
const (
	Success        = verdict.Success
	Failure        = verdict.Failure
	Neutral        = verdict.Neutral
	ActionRequired = verdict.ActionRequired
	Skipped        = verdict.Skipped
)

// Worst returns the worse of two conclusions: failure over action required
// over neutral over success.
func Worst(a, b Conclusion) Conclusion { return verdict.Worst(a, b) }

// Result is what one check says about a pull request (package verdict).
type Result = verdict.Result

// RegistryFree is implemented by costly checks that can do part of their work without a registry: when the
// ownership gate closes, the runner runs WithoutRegistry(reason) instead of skipping the check.
type RegistryFree interface {
	WithoutRegistry(reason string) Check
}

// Costly is implemented by checks that spend more than CPU on the head (registry requests, image pulls);
// the runner skips them for a pull request whose author owns nothing it touches.
type Costly interface {
	Costly() bool
}

// Check is one check of a pull request. Checks are independent of each other
// and of the front end that shows their results: they return data, never text
// formatted for the CLI or for GitHub.
type Check interface {
	// Name is a short stable identifier (ownership, validation, ...), used as the
	// check run's name and in the CLI output.
	Name() string
	// Run judges the pull request. It returns an error only when it could not
	// reach a verdict at all; findings are not errors.
	Run(ctx context.Context, pr *PullRequest) (Result, error)
}

// Conclude derives a conclusion from findings: any error finding fails the
// check; otherwise something that could not be verified makes it neutral
// (never a pass); otherwise it passes. Warnings never change the verdict.
func Conclude(fs []catalog.Finding, unverified bool) Conclusion {
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return Failure
		}
	}
	if unverified {
		return Neutral
	}
	return Success
}
