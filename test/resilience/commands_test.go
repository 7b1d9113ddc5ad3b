package resilience

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/servertest"
)

// TestCommentCommandsSurviveKill: comment deliveries the server acknowledged and was SIGKILLed right after
// (before or while their jobs ran) are carried out once it is back, each exactly once however often they
// are delivered: one reply to each /help, one 👍 on each, and the hold label on for /hold.
func TestCommentCommandsSurviveKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := newWorld(t)
	r := w.newReplica("sqlite", serverOptions{dataDir: filepath.Join(t.TempDir(), "data")})
	r.Start()
	r.WaitReady(60 * time.Second)
	client := &http.Client{Timeout: 10 * time.Second}
	var sent []*delivery
	post := func(d *delivery) (int, error) { return deliver(ctx, client, r.URL(), d) }

	head := w.openPR(1)
	opened := &delivery{Delivery: servertest.Delivery{GUID: servertest.NewGUID(), Event: "pull_request", Body: w.prPayload("opened", 1, head)}}
	sent = append(sent, opened)
	post(opened)
	waitAllChecked(ctx, t, w, map[int]string{1: head})

	rng := rand.New(rand.NewPCG(17, 17))
	type cmd struct {
		id   int64
		body string
	}
	var cmds []cmd
	for i := 0; i < 6; i++ {
		user, body := "dave", "/help"
		if i%3 == 2 {
			user, body = "maria", "/hold" // the author, a maintainer
		}
		id, err := w.fake.AddComment(owner, repoName, 1, user, body)
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd{id, body})
		payload, err := w.fake.IssueCommentEvent(owner, repoName, id, "created", "")
		if err != nil {
			t.Fatal(err)
		}
		payload = bytes.ReplaceAll(payload, []byte(`"https://github.com/acme/catalog.git"`), []byte(`"`+w.git.CloneURL(owner, repoName)+`"`))
		d := &delivery{Delivery: servertest.Delivery{GUID: servertest.NewGUID(), Event: "issue_comment", Body: payload}}
		sent = append(sent, d)
		post(d)
		if i%2 == 1 { // every other kill right after the acknowledgement, before the job ran
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
		t.Logf("comment %d (%s): SIGKILL", id, body)
		r.Kill()
		r.Start()
		r.WaitReady(60 * time.Second)
		post(d) // GitHub's redelivery of the same GUID
	}
	redeliver(t, sent, 5, 200*time.Millisecond, post)

	replies := func(id int64) int {
		n := 0
		for _, c := range w.fake.Comments(owner, repoName, 1) {
			if strings.HasPrefix(c.Body, fmt.Sprintf("<!-- catalogbot:command-reply %d help -->", id)) {
				n++
			}
		}
		return n
	}
	done := func() bool {
		for _, c := range cmds {
			if len(w.fake.Reactions(owner, repoName, c.id)) == 0 || (c.body == "/help" && replies(c.id) == 0) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(rescueWindow(serverOptions{}))
	for !done() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // a duplicate would come now
	for _, c := range cmds {
		var rs []string
		for _, x := range w.fake.Reactions(owner, repoName, c.id) {
			rs = append(rs, x.Content)
		}
		if strings.Join(rs, ",") != "+1" {
			t.Errorf("comment %d (%s): reactions %v, want one 👍", c.id, c.body, rs)
		}
		if c.body == "/help" {
			if n := replies(c.id); n != 1 {
				t.Errorf("comment %d: %d replies to /help, want 1", c.id, n)
			}
		}
	}
	if pr, _ := w.fake.PullRequest(owner, repoName, 1); strings.Join(pr.Labels, ",") != "do-not-merge/hold" {
		t.Errorf("labels = %v, want the hold label once", pr.Labels)
	}
}
