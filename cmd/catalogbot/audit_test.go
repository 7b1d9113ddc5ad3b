package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/catalogbot/catalogbot/app"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/internal/testpg"
)

// auditRows are two merges as the merge job writes them.
var auditRows = [][]any{
	{"acme", "catalog", 7, "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "bob",
		"author bob owns etcd", "[]", "3333333333333333333333333333333333333333",
		`{"catalogbot/ownership":11,"catalogbot/validate":12}`, "squash", "2026-08-01T10:00:00Z"},
	{"acme", "other", 9, "4444444444444444444444444444444444444444", "5555555555555555555555555555555555555555", "eve",
		"approved by bob", "[901]", "6666666666666666666666666666666666666666", `{"catalogbot/validate":21}`, "merge",
		"2026-08-02T10:00:00Z"},
}

const insertAudit = `INSERT INTO catalogbot_merge_audit (owner, name, number, merged_sha, merge_commit, author,
	authorized_by, review_ids, policy_sha, check_run_ids, method, merged_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// createAuditTables opens the database as the server does, which creates
// the merge tables.
func createAuditTables(t *testing.T, opt store.QueueOptions) {
	t.Helper()
	opt.River, opt.Log = &river.Config{}, slog.New(slog.DiscardHandler)
	q, err := store.OpenQueue(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.AuditLog(context.Background(), "", 1); err != nil {
		t.Fatal(err)
	}
}

func TestAuditCommand(t *testing.T) {
	for _, backend := range []string{store.BackendSQLite, store.BackendPostgres} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			vars := map[string]string{app.EnvDataDir: dir}
			if backend == store.BackendSQLite {
				path := filepath.Join(dir, "catalogbot.db")
				createAuditTables(t, store.QueueOptions{SQLitePath: path})
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range auditRows {
					if _, err := db.Exec(insertAudit, r...); err != nil {
						t.Fatal(err)
					}
				}
				db.Close()
			} else {
				u := testpg.URL(t)
				schema := testpg.FreshSchema(t, u, "cbaudit_")
				createAuditTables(t, store.QueueOptions{DatabaseURL: u, Schema: schema})
				conn, err := pgx.Connect(context.Background(), u)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range auditRows {
					if _, err := conn.Exec(context.Background(), strings.Replace(insertAudit, "catalogbot_merge_audit", schema+".catalogbot_merge_audit", 1), r...); err != nil {
						t.Fatal(err)
					}
				}
				conn.Close(context.Background())
				vars[app.EnvDatabaseURL] = u
				cfg := filepath.Join(dir, "catalogbot.yaml")
				os.WriteFile(cfg, []byte("database_schema: "+schema+"\n"), 0o600)
				vars["config"] = cfg
			}
			run := func(args ...string) (string, string, int) {
				if vars["config"] != "" {
					args = append([]string{"--config", vars["config"]}, args...)
				}
				var out, errb bytes.Buffer
				code := runEnv(context.Background(), append([]string{"audit"}, args...), &out, &errb, env{getenv: func(k string) string { return vars[k] }})
				return out.String(), errb.String(), code
			}

			out, stderr, code := run()
			if code != exitOK {
				t.Fatalf("audit exit %d: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "MERGED AT") ||
				!strings.Contains(lines[1], "acme/other#9") || !strings.Contains(lines[1], "approved by bob") || !strings.Contains(lines[1], "901") ||
				!strings.Contains(lines[2], "acme/catalog#7") || !strings.Contains(lines[2], "catalogbot/ownership=11,catalogbot/validate=12") ||
				!strings.Contains(lines[2], "111111111111") || !strings.Contains(lines[2], "2026-08-01T10:00:00Z") {
				t.Errorf("text output (newest first):\n%s", out)
			}

			out, stderr, code = run("--repo", "ACME/catalog", "--output", "json")
			if code != exitOK {
				t.Fatalf("audit --output json exit %d: %s", code, stderr)
			}
			var entries []store.AuditEntry
			if err := json.Unmarshal([]byte(out), &entries); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if len(entries) != 1 || entries[0].Number != 7 || entries[0].CheckRunIDs["catalogbot/validate"] != 12 || entries[0].Method != "squash" {
				t.Errorf("entries = %+v", entries)
			}

			if out, _, code := run("--repo", "acme/none"); code != exitOK || strings.TrimSpace(out) != "no merges recorded" {
				t.Errorf("no rows: exit %d, %q", code, out)
			}
		})
	}
}

func TestAuditCommandErrors(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string { return map[string]string{app.EnvDataDir: dir}[k] }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no database at " + filepath.Join(dir, "catalogbot.db")},
		{[]string{"--output", "yaml"}, "--output must be text or json"},
		{[]string{"--repo", "acme"}, "want owner/name"},
		{[]string{"--limit", "0"}, "--limit must be"},
	} {
		var out, errb bytes.Buffer
		if code := runEnv(context.Background(), append([]string{"audit"}, tc.args...), &out, &errb, env{getenv: getenv}); code != exitCannotRun || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("audit %v: exit %d, %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "catalogbot.db")); err == nil {
		t.Error("audit created a database")
	}
}

// audit --approvals lists the /approve comments, newest first.
func TestAuditCommandApprovals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "catalogbot.db")
	createAuditTables(t, store.QueueOptions{SQLitePath: path})
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][]any{
		{"acme", "catalog", 1, 501, "carol", "1111111111111111111111111111111111111111", "approve", "2026-11-25T06:00:00.000000000Z", "2026-11-25T06:00:01.000000000Z"},
		{"acme", "catalog", 1, 502, "carol", "1111111111111111111111111111111111111111", "cancel", "2026-11-25T06:05:00.000000000Z", "2026-11-25T06:05:01.000000000Z"},
	} {
		if _, err := db.Exec(`INSERT INTO catalogbot_command_approval (owner, name, number, comment_id, login, head_sha, action,
			commented_at, recorded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, r...); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	getenv := func(k string) string { return map[string]string{app.EnvDataDir: dir}[k] }
	var out, errb bytes.Buffer
	if code := runEnv(context.Background(), []string{"audit", "--approvals"}, &out, &errb, env{getenv: getenv}); code != exitOK {
		t.Fatalf("audit --approvals exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "COMMENTED AT") || !strings.Contains(lines[1], "/approve cancel") ||
		!strings.Contains(lines[1], "502") || !strings.Contains(lines[2], "carol") || !strings.Contains(lines[2], "111111111111") {
		t.Errorf("text output:\n%s", out.String())
	}
	out.Reset()
	if code := runEnv(context.Background(), []string{"audit", "--approvals", "--output", "json", "--repo", "acme/catalog"}, &out, &errb, env{getenv: getenv}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []store.CommandApproval
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil || len(rows) != 2 || rows[1].CommentID != 501 || rows[1].Action != "approve" {
		t.Errorf("json = %+v, %v\n%s", rows, err, out.String())
	}
}
