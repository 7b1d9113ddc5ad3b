package jobs

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
)

// KindPromote is the catalog promotion's job kind (stored: never rename).
const KindPromote = "catalogbot_promote"

// CmdPromote starts the comment command that promotes a repository's catalogs to a new OpenShift version:
// "/promote v4.22 v4.23" (from, to).
const CmdPromote = "promote"

// RulePromote says who may use /promote, in the words of the replies, the help and the docs.
const RulePromote = "the maintainers in the default branch's policy"

// PromoteArgs asks for the promotion of a repository's packages from one catalog version to the next: one
// pull request per package from the App's branch catalogbot/promote/<to>/<package>. Two triggers make it:
//
//   - a push to the default branch (Before, After): the promotions are those the policy change asks for (a
//     catalog root catalogs/<to> newly declared and empty, promoted from the newest catalog below it);
//   - a /promote comment (Number, CommentID, Commenter, Command): from and to as written, once the
//     commenter is found to be a maintainer of the default branch's policy.
//
// Unique while it waits or runs by repository and trigger; the promotion records (store.PromotionStore)
// make a retried or repeated job open nothing twice.
type PromoteArgs struct {
	InstallationID int64  `json:"installation_id"`
	Owner          string `json:"owner" river:"unique"`
	Repo           string `json:"repo" river:"unique"`
	CloneURL       string `json:"clone_url,omitempty"`
	DefaultBranch  string `json:"default_branch,omitempty"`
	// The push.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty" river:"unique"`
	// The comment: on pull request or issue Number; Command is the command line as normalised
	// (NormalPromote), read again by the job, which answers a malformed one.
	Number      int       `json:"number,omitempty" river:"unique"`
	CommentID   int64     `json:"comment_id,omitempty" river:"unique"`
	Commenter   string    `json:"commenter,omitempty"`
	CommentedAt time.Time `json:"commented_at,omitempty"`
	Command     string    `json:"command,omitempty"`
	DeliveryID  string    `json:"delivery_id,omitempty"`
}

func (PromoteArgs) Kind() string { return KindPromote }

func (PromoteArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: ActiveStates()}}
}

// maxPromoteLine bounds the command line a job carries.
const maxPromoteLine = 200

// PromoteCommand returns the first /promote line of a comment body (read as the other commands are: a line of
// text a reader sees, starting with the slash), normalised (lower case, single spaces, "promote ..."), and
// whether there is one. The arguments are not judged here: ParsePromote does, and the job answers a malformed
// line with how to write it.
func PromoteCommand(body string) (string, bool) {
	if len(body) > maxCommandBody {
		body = body[:maxCommandBody]
	}
	for _, line := range commandLines(body) {
		fields := strings.Fields(strings.ToLower(line[1:]))
		if len(fields) == 0 || fields[0] != CmdPromote {
			continue
		}
		c := strings.Join(fields, " ")
		if len(c) > maxPromoteLine {
			c = c[:maxPromoteLine]
		}
		return c, true
	}
	return "", false
}

var catalogVersion = regexp.MustCompile(`^v[0-9]{1,4}\.[0-9]{1,4}$`)

// PromoteUsage says how /promote is written.
const PromoteUsage = "`/promote <from> <to>` with two catalog versions, the directories of `catalogs/` (for example `/promote v4.22 v4.23`)"

// ParsePromote reads a normalised /promote line ("promote v4.22 v4.23"): the versions from and to, or why
// the line is not one (problem, in words for a reply).
func ParsePromote(cmd string) (from, to, problem string) {
	fields := strings.Fields(cmd)
	if len(fields) == 0 || fields[0] != CmdPromote {
		return "", "", "it is not a /promote command"
	}
	args := fields[1:]
	if len(args) != 2 {
		return "", "", "it needs two versions, not " + plural(len(args), "argument")
	}
	for _, a := range args {
		if !catalogVersion.MatchString(a) {
			return "", "", "`" + strings.ReplaceAll(a, "`", "'") + "` is not a catalog version (vMAJOR.MINOR)"
		}
	}
	if args[0] == args[1] {
		return "", "", "from and to are both " + args[0]
	}
	return args[0], args[1], ""
}

func plural(n int, word string) string {
	switch n {
	case 0:
		return "no " + word
	case 1:
		return "one " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
