package jobs

import (
	"strconv"
	"strings"
	"time"
)

// RerunActionID is the identifier of the "Re-run" button; GitHub sends it
// back in check_run.requested_action.
const RerunActionID = "rerun"

// CheckRunExternalID is the external_id of our check runs,
// "pr:<number>/job:<job>". The pull request is there because check events of
// fork PRs carry no pull_requests; the job (CheckJobKey) because a job that
// is retried after a crash must find the runs it created before, whether
// still in progress or already completed, and only those: a later job on the
// same head (a re-run) creates new ones.
func CheckRunExternalID(pr int, job string) string {
	return "pr:" + strconv.Itoa(pr) + "/job:" + job
}

// CheckJobKey names one check job across its attempts: River's job id and
// the job's creation time (SQLite may hand out the id of a deleted job
// again).
func CheckJobKey(id int64, created time.Time) string {
	return strconv.FormatInt(id, 10) + "." + strconv.FormatInt(created.UnixMicro(), 10)
}

// ParseCheckRunExternalID returns the pull request number in an external_id
// written by CheckRunExternalID (or by earlier versions, "pr:<number>").
func ParseCheckRunExternalID(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "pr:")
	if !ok {
		return 0, false
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		if !strings.HasPrefix(rest[i+1:], "job:") {
			return 0, false
		}
		rest = rest[:i]
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// RebuildCheckRunName is the check run that reports the catalog image build
// of a default branch commit.
const RebuildCheckRunName = "catalogbot/catalog-image"

// RebuildExternalID marks our image check runs. It names no pull request, so
// a "Re-run" request on one asks for no pull request check.
const RebuildExternalID = "rebuild"

// BundleImageCheckRunName reports the bundle images built from the bundle directories a default branch
// commit adds or changes.
const BundleImageCheckRunName = "catalogbot/bundle-image"

// IsSHA tells whether s is a full commit id (SHA-1 or SHA-256) in lower case.
func IsSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Short is the abbreviated form of a commit id, for messages.
func Short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
