package ghapp

import (
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/jobs"
)

// The footer of every pull request check run says who may /approve: the packages' owners include the
// reviewers of their ci.yaml (issue 30.7).
func TestCommandsFooterNamesCIYamlReviewers(t *testing.T) {
	if !strings.Contains(commandsFooter, "the reviewers of their ci.yaml") || !strings.Contains(jobs.CommandsHelp(jobs.DefaultRetestPerHour), "the reviewers of their ci.yaml") {
		t.Errorf("the /approve row does not mention ci.yaml reviewers:\n%s", commandsFooter)
	}
}
