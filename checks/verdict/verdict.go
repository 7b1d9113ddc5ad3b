package verdict

import (
	"time"

	"github.com/catalogbot/catalogbot/catalog"
)

// Conclusion is a check's verdict, named as GitHub names check-run conclusions.
type Conclusion string

const (
	// Success: nothing blocks the pull request.
	Success Conclusion = "success"
	// Failure: the pull request must not be merged as it is.
	Failure Conclusion = "failure"
	// Neutral: the check could not reach a verdict (a registry did not answer,
	// a team could not be resolved). It is never a pass.
	Neutral Conclusion = "neutral"
	// ActionRequired: nothing is wrong with the change itself, but someone must
	// act before it may merge (an owner must approve the head). GitHub shows it
	// as "Action required" and branch protection counts it as failing, unlike
	// neutral, which it counts as passing.
	ActionRequired Conclusion = "action_required"
	// Skipped: the check did not run because another check's verdict made it
	// moot (the author owns none of the packages the pull request touches);
	// it runs once that changes.
	Skipped Conclusion = "skipped"
)

// rank orders conclusions from best to worst, for combining them.
func (c Conclusion) rank() int {
	switch c {
	case Success, Skipped: // a skipped check is never alone: the one that skipped it carries the verdict
		return 0
	case Neutral:
		return 1
	case ActionRequired:
		return 2
	}
	return 3
}

// Worst returns the worse of two conclusions: failure over action required
// over neutral over success.
func Worst(a, b Conclusion) Conclusion {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Result is what one check says about a pull request.
type Result struct {
	// Check is the name of the check that produced the result.
	Check      string     `json:"check"`
	Conclusion Conclusion `json:"conclusion"`
	// Title is one line for a check run's title or a CLI headline.
	Title string `json:"title"`
	// Summary is markdown, for the check run's summary and the Actions step summary.
	Summary string `json:"summary"`
	// Findings are positioned in the head revision (file paths relative to the repository root).
	Findings []catalog.Finding `json:"findings"`
	// Err is set when the check could not run to the end; Conclusion is then Neutral.
	Err      string        `json:"error,omitempty"`
	Duration time.Duration `json:"durationNanos"`
	// SkipCostly, set by the ownership check, says the author may change none of the packages the pull
	// request touches and nobody entitled approved the head: the runner then skips the checks that cost
	// registry requests (Costly), so a stranger's pull request cannot spend them.
	SkipCostly bool `json:"-"`
}
