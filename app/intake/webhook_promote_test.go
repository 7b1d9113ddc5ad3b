package intake

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/policy"
)

func TestPolicyFileName(t *testing.T) {
	if policyFile != policy.FileName {
		t.Fatalf("intake's policyFile %q is not the policy's file %q", policyFile, policy.FileName)
	}
}

// /promote makes a promotion job on an open pull request and on an open issue alike (who may promote is the
// job's to judge); a bot's, an edited one or one on a closed issue makes none; beside other commands on a pull
// request it makes both jobs.
func TestOnIssueCommentPromote(t *testing.T) {
	payload := func(action, state, login, userType, body string, pr bool) []byte {
		issue := `{"number": 5, "state": "` + state + `"`
		if pr {
			issue += `, "pull_request": {"url": "https://api.github.com/repos/acme/catalog/pulls/5"}`
		}
		issue += `}`
		return []byte(`{"action": "` + action + `", "issue": ` + issue + `, "comment": {"id": 77, "body": ` +
			strconv.Quote(body) + `, "created_at": "2026-11-25T06:00:00Z", "user": {"login": "` + login + `", "type": "` + userType + `"}}}`)
	}
	for _, c := range []struct {
		name              string
		body              []byte
		promote, commands bool
	}{
		{"on an issue", payload("created", "open", "maria", "User", "/promote v4.22 v4.23", false), true, false},
		{"on a pull request, with /hold", payload("created", "open", "maria", "User", "/promote v4.22 v4.23\n/hold", true), true, true},
		{"malformed still asks (the job replies)", payload("created", "open", "maria", "User", "/promote v4.22", false), true, false},
		{"edited", payload("edited", "open", "maria", "User", "/promote v4.22 v4.23", false), false, false},
		{"closed issue", payload("created", "closed", "maria", "User", "/promote v4.22 v4.23", false), false, false},
		{"a bot", payload("created", "open", "catalogbot[bot]", "Bot", "/promote v4.22 v4.23", false), false, false},
		{"other commands on an issue", payload("created", "open", "maria", "User", "/approve", false), false, false},
	} {
		ec := eventContext{DeliveryID: "d2", InstallationID: 7, Owner: "acme", Name: "catalog", DefaultBranch: "main", Action: envelopeAction(c.body)}
		p, err := onIssueComment(ec, c.body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var promote, commands bool
		for _, j := range p.Jobs {
			switch a := j.Args.(type) {
			case jobs.PromoteArgs:
				promote = true
				if a.Number != 5 || a.CommentID != 77 || a.Commenter != "maria" || a.Command == "" || a.DefaultBranch != "main" || a.After != "" {
					t.Errorf("%s: job %+v", c.name, a)
				}
			case jobs.CommandArgs:
				commands = true
			}
		}
		if promote != c.promote || commands != c.commands {
			t.Errorf("%s: promotion job %v, command job %v; want %v, %v", c.name, promote, commands, c.promote, c.commands)
		}
	}
}

// A push to the default branch asks for the promotion job when it may change the policy: a commit it lists adds
// or modifies .catalogbot.yaml, or it lists none (nothing known); not when every listed commit leaves it alone.
func TestOnPushPromote(t *testing.T) {
	const before, after = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	push := func(commits []map[string]any) []byte {
		m := map[string]any{"ref": "refs/heads/main", "before": before, "after": after}
		if commits != nil {
			m["commits"] = commits
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name string
		body []byte
		want bool
	}{
		{"no commits listed", push(nil), true},
		{"the policy modified", push([]map[string]any{{"id": after, "modified": []string{"README.md", ".catalogbot.yaml"}}}), true},
		{"the policy added", push([]map[string]any{{"id": after, "added": []string{".catalogbot.yaml"}}}), true},
		{"other files only", push([]map[string]any{{"id": after, "modified": []string{"catalogs/v4.22/etcd/catalog.yaml"}, "added": []string{"docs/.catalogbot.yaml"}}}), false},
	} {
		p, err := onPush(eventContext{InstallationID: 7, Owner: "acme", Name: "catalog", DefaultBranch: "main"}, c.body)
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, j := range p.Jobs {
			if a, ok := j.Args.(jobs.PromoteArgs); ok {
				got = true
				if a.Before != before || a.After != after || a.CommentID != 0 {
					t.Errorf("%s: job %+v", c.name, a)
				}
			}
		}
		if got != c.want {
			t.Errorf("%s: promotion job %v, want %v", c.name, got, c.want)
		}
	}
}
