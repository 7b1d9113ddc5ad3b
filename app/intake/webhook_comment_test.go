package intake

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/catalogbot/catalogbot/app/jobs"
)

// onIssueComment enqueues a job only for a new comment of a person on an open pull request that carries
// commands.
func TestOnIssueComment(t *testing.T) {
	ec := eventContext{DeliveryID: "d1", InstallationID: 7, Owner: "acme", Name: "catalog"}
	payload := func(action, state, login, userType, body string, pr bool) []byte {
		issue := `{"number": 3, "state": "` + state + `"`
		if pr {
			issue += `, "pull_request": {"url": "https://api.github.com/repos/acme/catalog/pulls/3"}`
		}
		issue += `}`
		return []byte(`{"action": "` + action + `", "issue": ` + issue + `, "comment": {"id": 99, "body": ` +
			strconv.Quote(body) + `, "created_at": "2026-11-25T06:00:00Z", "user": {"login": "` + login + `", "type": "` + userType + `"}}}`)
	}
	for _, c := range []struct {
		name string
		body []byte
		want []string
	}{
		{"created", payload("created", "open", "carol", "User", "/approve\n/hold", true), []string{"approve", "hold"}},
		{"edited", payload("edited", "open", "carol", "User", "/approve", true), nil},
		{"deleted", payload("deleted", "open", "carol", "User", "/approve", true), nil},
		{"closed", payload("created", "closed", "carol", "User", "/approve", true), nil},
		{"an issue", payload("created", "open", "carol", "User", "/approve", false), nil},
		{"a bot", payload("created", "open", "catalogbot[bot]", "Bot", "/approve", true), nil},
		{"no command", payload("created", "open", "carol", "User", "/assign @carol", true), nil},
		{"lgtm gets a reply", payload("created", "open", "carol", "User", "/lgtm", true), []string{"lgtm"}},
	} {
		p, err := onIssueComment(eventContext{DeliveryID: ec.DeliveryID, InstallationID: ec.InstallationID, Owner: ec.Owner, Name: ec.Name, Action: envelopeAction(c.body)}, c.body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		if len(p.Jobs) == 1 {
			a := p.Jobs[0].Args.(jobs.CommandArgs)
			got = a.Commands
			if a.CommentID != 99 || a.Number != 3 || a.Commenter != "carol" || a.CommentedAt.IsZero() || a.DeliveryID != "d1" {
				t.Errorf("%s: job %+v", c.name, a)
			}
		}
		if !reflect.DeepEqual(got, c.want) || len(p.Jobs) > 1 {
			t.Errorf("%s: commands %q (%d jobs), want %q", c.name, got, len(p.Jobs), c.want)
		}
	}
}

func envelopeAction(body []byte) string {
	var env envelope
	_ = json.Unmarshal(body, &env)
	return env.Action
}
