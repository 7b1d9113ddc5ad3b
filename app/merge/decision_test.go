package merge

import (
	"context"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/policy"
)

var ourCheckNames = []string{"catalogbot/ownership", "catalogbot/validate", "catalogbot/crd-safety", "catalogbot/images"}

func mergePolicy(t *testing.T, extra string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse(".catalogbot.yaml", []byte(`version: 1
catalogs: [{path: catalog}]
maintainers: [alice]
packages:
  etcd: {owners: [bob, carol]}
  redis: {owners: [dave]}
automerge: {enabled: true, holdLabels: [do-not-merge/hold]`+extra+`}
`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func passingFacts(t *testing.T) MergeFacts {
	checks := map[string]string{}
	for _, n := range ourCheckNames {
		checks[n] = "success"
	}
	return MergeFacts{
		Open: true, HeadSHA: "aaaaaaaaaa", CheckedSHA: "aaaaaaaaaa", Author: "bob",
		OurChecks: checks, Touched: []string{"etcd"}, Policy: mergePolicy(t, ""),
		Required: []RequiredCheck{{Name: "ci/build", State: "success"}},
	}
}

func TestDecideMerge(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		edit   func(*MergeFacts)
		merge  bool
		reason string // a substring of one blocking reason
		by     string
	}{
		{name: "owner, all green", edit: func(*MergeFacts) {}, merge: true, by: "author bob"},
		{name: "draft", edit: func(f *MergeFacts) { f.Draft = true }, reason: "draft"},
		{name: "closed", edit: func(f *MergeFacts) { f.Open = false }, reason: "closed"},
		{name: "head moved after the check", edit: func(f *MergeFacts) { f.HeadSHA = "bbbbbbbbbb" }, reason: "head moved"},
		{name: "a check failed", edit: func(f *MergeFacts) { f.OurChecks["catalogbot/validate"] = "failure" }, reason: "concluded failure"},
		{name: "a check neutral", edit: func(f *MergeFacts) { f.OurChecks["catalogbot/images"] = "neutral" }, reason: "concluded neutral"},
		{name: "a check not run", edit: func(f *MergeFacts) { delete(f.OurChecks, "catalogbot/images") }, reason: "has not completed"},
		{name: "required check pending", edit: func(f *MergeFacts) { f.Required[0].State = "pending" }, reason: `"ci/build" is pending`},
		{name: "hold label", edit: func(f *MergeFacts) { f.Labels = []string{"Do-Not-Merge/Hold"} }, reason: "hold label"},
		{name: "automerge off", edit: func(f *MergeFacts) { f.Policy.Automerge.Enabled = false }, reason: "automerge is not enabled"},
		{name: "not owner, no approval", edit: func(f *MergeFacts) { f.Author = "erin" }, reason: "does not own package"},
		{name: "not owner, owner approved this head", edit: func(f *MergeFacts) {
			f.Author = "erin"
			f.Reviews = []Review{{ID: 7, User: "Carol", State: "APPROVED", CommitID: f.HeadSHA}}
		}, merge: true, by: "approved by Carol"},
		{name: "stale approval does not count", edit: func(f *MergeFacts) {
			f.Author = "erin"
			f.Reviews = []Review{{ID: 7, User: "carol", State: "APPROVED", CommitID: "0000000000"}}
		}, reason: "does not own package"},
		{name: "approval by a non-owner does not count", edit: func(f *MergeFacts) {
			f.Author = "erin"
			f.Reviews = []Review{{ID: 7, User: "dave", State: "APPROVED", CommitID: f.HeadSHA}}
		}, reason: "does not own package"},
		{name: "maintainer approval counts", edit: func(f *MergeFacts) {
			f.Author = "erin"
			f.Reviews = []Review{{ID: 9, User: "alice", State: "APPROVED", CommitID: f.HeadSHA}}
		}, merge: true, by: "approved by alice"},
		{name: "two packages, one approved", edit: func(f *MergeFacts) {
			f.Touched = []string{"etcd", "redis"}
		}, reason: `package "redis"`},
		{name: "two packages, other owner approved", edit: func(f *MergeFacts) {
			f.Touched = []string{"etcd", "redis"}
			f.Reviews = []Review{{ID: 3, User: "dave", State: "APPROVED", CommitID: f.HeadSHA}}
		}, merge: true, by: "approved by dave"},
		{name: "owner approval required even for owner", edit: func(f *MergeFacts) {
			f.Policy = mergePolicy(t, ", requireOwnerApproval: true")
		}, reason: "needs an approving review"},
		{name: "owner approval required and given", edit: func(f *MergeFacts) {
			f.Policy = mergePolicy(t, ", requireOwnerApproval: true")
			f.Reviews = []Review{{ID: 4, User: "carol", State: "APPROVED", CommitID: f.HeadSHA}, {ID: 5, User: "bob", State: "APPROVED", CommitID: f.HeadSHA}}
		}, merge: true, by: "approved by carol"},
		// What merges is what was judged (the decision under the merge lease).
		{name: "base head known, result not judged", edit: func(f *MergeFacts) {
			f.BaseHeadSHA, f.CheckedBaseSHA = "cccccccccc", "cccccccccc"
		}, reason: "has not been judged"},
		{name: "result judged on another base head", edit: func(f *MergeFacts) {
			f.BaseHeadSHA, f.CheckedBaseSHA, f.Result = "dddddddddd", "cccccccccc", &ResultJudgement{BaseSHA: "cccccccccc"}
		}, reason: "has not been judged"},
		{name: "base moved, nothing relevant changed", edit: func(f *MergeFacts) {
			f.BaseHeadSHA, f.CheckedBaseSHA, f.Result = "dddddddddd", "cccccccccc", &ResultJudgement{BaseSHA: "dddddddddd"}
		}, merge: true, by: "author bob"},
		{name: "base moved and changed a touched package", edit: func(f *MergeFacts) {
			f.BaseHeadSHA, f.CheckedBaseSHA = "dddddddddd", "cccccccccc"
			f.Result = &ResultJudgement{BaseSHA: "dddddddddd", Recheck: "the base branch moved to ddddddd and changed `catalog/etcd/a.yaml`"}
		}, reason: "being checked again"},
		{name: "semantic conflict", edit: func(f *MergeFacts) {
			f.BaseHeadSHA, f.CheckedBaseSHA = "cccccccccc", "cccccccccc"
			f.Result = &ResultJudgement{BaseSHA: "cccccccccc", Conflicts: []string{"semantic conflict with #4 (abc1234)"}}
		}, reason: "semantic conflict with #4"},
		{name: "result could not be judged", edit: func(f *MergeFacts) {
			f.BaseHeadSHA, f.CheckedBaseSHA, f.Result = "cccccccccc", "cccccccccc", &ResultJudgement{BaseSHA: "cccccccccc", Unjudged: "could not judge"}
		}, reason: "could not judge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := passingFacts(t)
			tc.edit(&f)
			d := DecideMerge(ctx, f, ourCheckNames, nil)
			if d.Merge != tc.merge {
				t.Fatalf("Merge = %v, want %v; blocking: %q", d.Merge, tc.merge, d.Blocking)
			}
			if tc.reason != "" && !strings.Contains(strings.Join(d.Blocking, "\n"), tc.reason) {
				t.Errorf("blocking = %q, want one containing %q", d.Blocking, tc.reason)
			}
			if tc.by != "" && d.AuthorizedBy != tc.by {
				t.Errorf("AuthorizedBy = %q, want %q", d.AuthorizedBy, tc.by)
			}
		})
	}
}
