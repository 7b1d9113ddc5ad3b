package app

import (
	"fmt"
	"slices"
	"strings"
)

// Comment commands: a pull request comment line that is exactly one of these, as Prow reads them: the
// line starts with the slash, case does not matter, trailing spaces do not either. Lines in fenced code
// blocks (and indented or quoted lines) are not commands; anything else starting with a slash is not ours
// and gets no reaction.
const (
	cmdHold          = "hold"
	cmdHoldCancel    = "hold cancel"
	cmdRetest        = "retest"
	cmdApprove       = "approve"
	cmdApproveCancel = "approve cancel"
	cmdHelp          = "help"
)

// maxCommandsPerComment bounds the commands one comment carries (the rest are ignored); maxCommandBody
// bounds the part of a comment read for them (GitHub's own limit on a comment is 65,536 characters).
const (
	maxCommandsPerComment = 10
	maxCommandBody        = 64 << 10
)

// parseCommands returns the commands of a comment body in order, each once.
func parseCommands(body string) []string {
	if len(body) > maxCommandBody {
		body = body[:maxCommandBody]
	}
	var out []string
	fenced := false
	for _, line := range strings.Split(body, "\n") {
		if f := strings.TrimSpace(line); strings.HasPrefix(f, "```") || strings.HasPrefix(f, "~~~") {
			fenced = !fenced
			continue
		}
		t := strings.TrimRight(line, " \t\r")
		if fenced || !strings.HasPrefix(t, "/") {
			continue
		}
		c := normalCommand(t[1:])
		if c == "" || slices.Contains(out, c) {
			continue
		}
		out = append(out, c)
		if len(out) == maxCommandsPerComment {
			break
		}
	}
	return out
}

// normalCommand maps "Hold   CANCEL" to "hold cancel"; "" for anything that is not one of ours.
func normalCommand(s string) string {
	c := strings.ToLower(strings.Join(strings.Fields(s), " "))
	switch c {
	case cmdHold, cmdHoldCancel, cmdRetest, cmdApprove, cmdApproveCancel, cmdHelp:
		return c
	}
	return ""
}

// Who may use each command, in the words the replies, the help, the check runs' footer and the README use.
const (
	ruleApprove = "the owners of the packages the pull request touches and the maintainers (from the base branch's policy); the author's own approval never counts"
	ruleHold    = "the author, the owners of the packages the pull request touches and the maintainers"
	ruleRetest  = "anyone with read access to the repository (on a public repository: anyone), at most %d times per pull request and hour"
)

// commandsHelp is the list of commands in markdown, for /help and the check runs' footer.
func commandsHelp(retestLimit int) string {
	var b strings.Builder
	b.WriteString("| Command | What it does | Who may use it |\n|---|---|---|\n")
	b.WriteString("| `/approve` | approves the pull request's head commit at the time of the comment, as an approving review does; a later push needs a new approval | " + ruleApprove + " |\n")
	b.WriteString("| `/approve cancel` | withdraws your approval (given by `/approve` or by a review) | the same |\n")
	b.WriteString("| `/hold` | puts the hold label on: catalogbot does not merge | " + ruleHold + " |\n")
	b.WriteString("| `/hold cancel` | takes the hold label off | the same |\n")
	b.WriteString("| `/retest` | runs catalogbot's checks again on the current head (as the Re-run button) | " + fmt.Sprintf(ruleRetest, retestLimit) + " |\n")
	b.WriteString("| `/help` | shows this list | anyone |\n")
	b.WriteString("\nEach command is a line of its own in a new comment. Edited and deleted comments change nothing; an accepted command gets a 👍 reaction, a refused one a reply.\n")
	return b.String()
}
