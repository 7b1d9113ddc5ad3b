package jobs

import (
	"fmt"
	"slices"
	"strings"
)

// Comment commands: a pull request comment line that is exactly one of these, as Prow reads them: the
// line starts with the slash, case does not matter, extra spaces do not either. Only lines a reader sees as
// text count (see commandLines: code, quotes, HTML comments and hidden elements are not commands); anything
// else starting with a slash is not ours and gets no reaction.
const (
	CmdHold          = "hold"
	CmdHoldCancel    = "hold cancel"
	CmdRetest        = "retest"
	CmdApprove       = "approve"
	CmdApproveCancel = "approve cancel"
	CmdHelp          = "help"
	// CmdLGTM and CmdLGTMCancel are Prow's; catalogbot answers them with a pointer to /approve.
	CmdLGTM       = "lgtm"
	CmdLGTMCancel = "lgtm cancel"
)

// DefaultRetestPerHour bounds the /retest of one pull request in an hour.
const DefaultRetestPerHour = 6

// maxCommandsPerComment bounds the commands one comment carries (the rest are ignored); maxCommandBody
// bounds the part of a comment read for them (GitHub's own limit on a comment is 65,536 characters).
const (
	maxCommandsPerComment = 10
	maxCommandBody        = 64 << 10
)

// ParseCommands returns the commands of a comment body in order, each once. Within one comment the last
// word wins: of /approve and /approve cancel (and of /hold and /hold cancel) only the last one written
// counts, in its place.
func ParseCommands(body string) []string {
	if len(body) > maxCommandBody {
		body = body[:maxCommandBody]
	}
	var out []string
	for _, line := range commandLines(body) {
		c := NormalCommand(line[1:])
		if c == "" {
			continue
		}
		if fam := commandFamily(c); fam != c {
			out = slices.DeleteFunc(out, func(o string) bool { return commandFamily(o) == fam })
		} else if slices.Contains(out, c) {
			continue
		}
		out = append(out, c)
	}
	if len(out) > maxCommandsPerComment {
		out = out[:maxCommandsPerComment]
	}
	return out
}

// commandFamily maps a command and its cancel to one name ("approve", "hold"); other commands to themselves.
func commandFamily(c string) string {
	switch c {
	case CmdApprove, CmdApproveCancel:
		return "approve family"
	case CmdHold, CmdHoldCancel:
		return "hold family"
	case CmdLGTM, CmdLGTMCancel:
		return "lgtm family"
	}
	return c
}

// NormalCommand maps "Hold   CANCEL" to "hold cancel"; "" for anything that is not one of ours.
func NormalCommand(s string) string {
	c := strings.ToLower(strings.Join(strings.Fields(s), " "))
	switch c {
	case CmdHold, CmdHoldCancel, CmdRetest, CmdApprove, CmdApproveCancel, CmdHelp, CmdLGTM, CmdLGTMCancel:
		return c
	}
	return ""
}

// Who may use each command, in the words the replies, the help, the check runs' footer and the README use.
const (
	RuleApprove = "the owners of the packages the pull request touches — their owners in the base branch's policy and the reviewers of their ci.yaml — and the maintainers; the author's own approval never counts"
	RuleHold    = "the author, the owners of the packages the pull request touches and the maintainers"
	RuleRetest  = "anyone with read access to the repository (on a public repository: anyone), at most %d times per pull request and hour"
)

// CommandsHelp is the list of commands in markdown, for /help and the check runs' footer.
func CommandsHelp(retestLimit int) string {
	var b strings.Builder
	b.WriteString("| Command | What it does | Who may use it |\n|---|---|---|\n")
	b.WriteString("| `/approve` | approves the pull request's head commit at the time of the comment, as an approving review does; a later push needs a new approval | " + RuleApprove + " |\n")
	b.WriteString("| `/approve cancel` | withdraws your approval (given by `/approve` or by a review) | the same |\n")
	b.WriteString("| `/hold` | puts the hold label on: catalogbot does not merge | " + RuleHold + " |\n")
	b.WriteString("| `/hold cancel` | takes that label off (other hold labels stay) | the same |\n")
	b.WriteString("| `/retest` | runs catalogbot's checks again on the current head (as the Re-run button) | " + fmt.Sprintf(RuleRetest, retestLimit) + " |\n")
	b.WriteString("| `/promote <from> <to>` | promotes every package's catalog from one catalog version to the next (`/promote v4.22 v4.23`): one pull request per package, as `fbc.version_promotion_strategy` says; also on an issue | " + RulePromote + " |\n")
	b.WriteString("| `/help` | shows this list | anyone |\n")
	b.WriteString("| `/lgtm` | nothing: catalogbot replies that `/approve` is what approves | anyone |\n")
	b.WriteString("\nEach command is a line of its own in a new comment. Edited and deleted comments change nothing; an accepted command gets a 👍 reaction, a refused one a reply.\n")
	return b.String()
}
