package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/riverqueue/river"
	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/app"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/internal/cli"
)

// auditOptions are the flags of the audit command.
type auditOptions struct {
	configPath, repo, output string
	limit                    int
	timeout                  time.Duration
	// approvals lists the /approve comments instead of the merges.
	approvals bool
	// image, when set, audits an image's signatures and provenance instead (auditimage.go).
	img auditImageOptions
}

// auditCommand lists the merges the App made, from the database the server uses.
func auditCommand(e env) cli.Command {
	var o auditOptions
	return cli.Command{
		Use:   "audit",
		Short: "list the pull requests the App merged, from its database",
		Long: fmt.Sprintf(`Lists the pull requests the App merged, newest first: the merged head SHA, the merge
commit, the author, who authorized the merge (the author as owner, or the approving
reviews), the base commit whose policy applied and the check runs that passed.
With --approvals it lists the approvals given and withdrawn by comment
(/approve, /approve cancel): who, which pull request head, which comment.
With --image REF --key PUB it reads no database: it verifies the image's signatures
and provenance attestation (and each platform's) under the public key and prints the
chain they state: repository, commit, pull requests, who approved which head, check
runs, base image, builder. Exit 1 when the image is not signed and attested by the key.
The database is the server's: %s, or the SQLite file in the data dir
(%s).`, app.EnvDatabaseURL, app.EnvDataDir),
		Example: `  catalogbot audit --config catalogbot.yaml
  catalogbot audit --config catalogbot.yaml --repo acme/catalog --output json
  catalogbot audit --config catalogbot.yaml --approvals
  catalogbot audit --image quay.io/acme/catalog:v4.16 --key catalogbot-sign.pub`,
		Args:     cli.NoArgs,
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json"}}},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.configPath, "config", "", "the server's YAML configuration file (only its database settings are read)")
			fs.StringVar(&o.repo, "repo", "", "only the merges of this repository (owner/name)")
			fs.IntVar(&o.limit, "limit", 100, "at most this many merges, newest first")
			fs.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
			fs.DurationVar(&o.timeout, "timeout", time.Minute, "give up after this long")
			fs.BoolVar(&o.approvals, "approvals", false, "list the approvals given by /approve comments instead of the merges")
			fs.StringVar(&o.img.image, "image", "", "audit this image (registry/repository:tag or @sha256:…): its signatures and provenance, not the database")
			fs.StringVar(&o.img.keyFile, "key", "", "with --image: the PEM public key the images are signed with")
			fs.StringVar(&o.img.authFile, "registry-config", "", "with --image: docker/podman auth file to read the image (default: $REGISTRY_AUTH_FILE, else the standard locations that exist)")
			fs.StringArrayVar(&o.img.insecure, "insecure-registry", nil, "with --image: allow plain HTTP and a loopback/private address for this registry host[:port] (repeatable)")
		},
		Run: func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			return audit(ctx, o, stdout, stderr, e.getenv)
		},
	}
}

// audit lists the merges the App made, from the database the server uses.
func audit(ctx context.Context, o auditOptions, stdout, stderr io.Writer, getenv func(string) string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "catalogbot audit: "+format+"\n", a...)
		return exitCannotRun
	}
	switch {
	case o.output != "text" && o.output != "json":
		return fail("--output must be text or json, not %q", o.output)
	case o.limit < 1 || o.limit > 100000:
		return fail("--limit must be 1 to 100000, not %d", o.limit)
	case o.repo != "" && strings.Count(o.repo, "/") != 1:
		return fail("--repo %q: want owner/name", o.repo)
	case o.img.image != "":
		return auditImage(ctx, o.img, o.output, o.timeout, stdout, stderr)
	}
	cfg, err := app.LoadDatabaseConfig(o.configPath, getenv)
	if err != nil {
		return fail("configuration: %v", err)
	}
	if cfg.DatabaseURL.Empty() {
		// Opening a SQLite file creates it: a wrong data dir would show an
		// empty log instead of an error.
		if _, err := os.Stat(cfg.SQLitePath()); err != nil {
			return fail("no database at %s (set data_dir or %s to the server's, or %s): %v", cfg.SQLitePath(), app.EnvDataDir, app.EnvDatabaseURL, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	q, err := store.OpenQueue(ctx, store.QueueOptions{
		DatabaseURL: string(cfg.DatabaseURL.Reveal()), Schema: cfg.DatabaseSchema, SQLitePath: cfg.SQLitePath(),
		// No queues and no workers: this client only reads.
		River: &river.Config{}, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return fail("opening the database: %v", err)
	}
	defer q.Close()
	if o.approvals {
		rows, err := q.ApprovalLog(ctx, o.repo, o.limit)
		if err != nil {
			return fail("reading the approvals: %v", err)
		}
		if rows == nil {
			rows = []store.CommandApproval{}
		}
		if o.output == "json" {
			writeJSON(stdout, rows)
			return exitOK
		}
		writeApprovalsText(stdout, rows)
		return exitOK
	}
	entries, err := q.AuditLog(ctx, o.repo, o.limit)
	if err != nil {
		return fail("reading the audit log: %v", err)
	}
	if entries == nil {
		entries = []store.AuditEntry{}
	}
	if o.output == "json" {
		writeJSON(stdout, entries)
		return exitOK
	}
	writeAuditText(stdout, entries)
	return exitOK
}

func writeAuditText(w io.Writer, entries []store.AuditEntry) {
	if len(entries) == 0 {
		fmt.Fprintln(w, "no merges recorded")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MERGED AT\tPULL REQUEST\tMERGED SHA\tMERGE COMMIT\tMETHOD\tAUTHOR\tAUTHORIZED BY\tREVIEWS\tPOLICY AT\tCHECK RUNS")
	for _, e := range entries {
		reviews := make([]string, len(e.ReviewIDs))
		for i, id := range e.ReviewIDs {
			reviews[i] = fmt.Sprint(id)
		}
		for _, id := range e.ApprovalComments {
			reviews = append(reviews, fmt.Sprintf("comment:%d", id))
		}
		names := make([]string, 0, len(e.CheckRunIDs))
		for n := range e.CheckRunIDs {
			names = append(names, n)
		}
		sort.Strings(names)
		runs := make([]string, len(names))
		for i, n := range names {
			runs[i] = fmt.Sprintf("%s=%d", n, e.CheckRunIDs[n])
		}
		fmt.Fprintf(tw, "%s\t%s#%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			e.MergedAt.UTC().Format(time.RFC3339), e.Repo, e.Number, shortSHA(e.MergedSHA), shortSHA(e.MergeCommit),
			e.Method, e.Author, orDash(e.AuthorizedBy), orDash(strings.Join(reviews, ",")), shortSHA(e.PolicySHA),
			orDash(strings.Join(runs, ",")))
	}
	tw.Flush()
}

func writeApprovalsText(w io.Writer, rows []store.CommandApproval) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no approvals by comment recorded")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMENTED AT\tPULL REQUEST\tWHO\tCOMMAND\tHEAD SHA\tCOMMENT")
	for _, a := range rows {
		cmd := "/approve"
		if a.Action == "cancel" {
			cmd = "/approve cancel"
		}
		fmt.Fprintf(tw, "%s\t%s#%d\t%s\t%s\t%s\t%d\n", a.At.UTC().Format(time.RFC3339), a.Repo, a.Number, a.Login, cmd, shortSHA(a.HeadSHA), a.CommentID)
	}
	tw.Flush()
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return orDash(s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
