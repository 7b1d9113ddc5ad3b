package merge

import (
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/store"
)

func TestBoundHead(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	for _, c := range []struct {
		name string
		log  []store.HeadAt
		head string
		when time.Time
		ok   bool
	}{
		{"seen before", []store.HeadAt{{SHA: a, At: at(0)}}, a, at(5), true},
		{"seen again later", []store.HeadAt{{SHA: a, At: at(0)}, {SHA: a, At: at(9)}}, a, at(5), true},
		{"never seen", nil, a, at(5), false},
		{"seen only after", []store.HeadAt{{SHA: a, At: at(6)}}, a, at(5), false},
		{"pushed after", []store.HeadAt{{SHA: a, At: at(0)}, {SHA: b, At: at(6)}}, b, at(5), false},
		{"pushed after, then back", []store.HeadAt{{SHA: a, At: at(0)}, {SHA: b, At: at(6)}, {SHA: a, At: at(7)}}, a, at(5), false},
		{"older head then", []store.HeadAt{{SHA: b, At: at(0)}, {SHA: a, At: at(3)}}, b, at(5), false},
		{"new head before", []store.HeadAt{{SHA: b, At: at(0)}, {SHA: a, At: at(3)}}, a, at(5), true},
	} {
		if ok, why := boundHead(c.log, c.head, c.when); ok != c.ok {
			t.Errorf("%s: boundHead = %v (%s), want %v", c.name, ok, why, c.ok)
		}
	}
}

// withCommandApprovals: each person's latest stand wins, review or command; a cancel withdraws a review's
// approval too; an /approve later than a dismissal counts.
func TestWithCommandApprovals(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	reviews := []Review{
		{ID: 1, User: "carol", State: "APPROVED", CommitID: "h", At: t0},
		{ID: 2, User: "maria", State: "DISMISSED", CommitID: "h", At: t0},
	}
	cmds := []store.CommandApproval{
		{CommentID: 10, Login: "Carol", HeadSHA: "h", Action: store.ApprovalCancel, At: t0.Add(time.Minute)},
		{CommentID: 11, Login: "maria", HeadSHA: "h", Action: store.ApprovalApprove, At: t0.Add(time.Minute)},
		{CommentID: 12, Login: "dave", HeadSHA: "old", Action: store.ApprovalApprove, At: t0.Add(time.Minute)},
	}
	got := map[string]Review{}
	for _, r := range withCommandApprovals(reviews, cmds) {
		got[strings.ToLower(r.User)] = r
	}
	if got["carol"].State != "DISMISSED" || got["maria"].State != "APPROVED" || got["maria"].CommentID != 11 || got["dave"].CommitID != "old" {
		t.Errorf("stands = %+v", got)
	}
	cur := currentApprovals(withCommandApprovals(reviews, cmds), "h", "bob")
	if len(cur) != 1 || cur[0].User != "maria" {
		t.Errorf("current approvals of h = %+v, want maria's /approve only", cur)
	}
}
