package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/internal/cli"
	"github.com/catalogbot/catalogbot/policy"
)

func initCommand() cli.Command {
	var (
		repo, rev    string
		maintainers  []string
		write, force bool
	)
	return cli.Command{
		Use:   "init",
		Short: "write a .catalogbot.yaml for an existing catalog repository",
		Long: `Looks through a repository that has no .catalogbot.yaml yet and writes one for it: the catalog roots
(directories of package folders, or of files with olm.package blobs; sibling catalogs such as
catalogs/v4.12 … catalogs/v4.22 become one pattern, catalogs/v4.*), the bundle roots (directories of
<package>/<version>/ bundle directories) with ownersFromCIYaml when their packages' ci.yaml name reviewers
and templatesFromCIYaml when they map templates (fbc.catalog_mapping), the other catalog templates with
their package's catalog files, the maintainers (--maintainer, else config.yaml's maintainers as the
community pipeline keeps them, else the * rule of CODEOWNERS) and the allowed bundle registries of
config.yaml. The result is checked with the policy parser before it is printed (or written with --write).
Review it, then run catalog-check policy lint.
Exit 0: written; 2: could not (no catalog found, no maintainer known, unreadable repository).`,
		Example: `  catalog-check init --repo .                       # print it
  catalog-check init --repo . --write               # write ./.catalogbot.yaml
  catalog-check init --repo . --rev origin/main --maintainer alice --maintainer @acme/catalog-admins`,
		Args: cli.NoArgs,
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&repo, "repo", ".", "the repository's directory")
			fs.StringVar(&rev, "rev", "", "read this git revision instead of the working tree (nothing is checked out)")
			fs.StringArrayVar(&maintainers, "maintainer", nil, "a maintainer, as a login or @org/team (repeatable); default from config.yaml or CODEOWNERS")
			fs.BoolVar(&write, "write", false, "write <repo>/.catalogbot.yaml instead of printing it (working tree only)")
			fs.BoolVar(&force, "force", false, "with --write, replace an existing .catalogbot.yaml")
		},
		Run: func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			return runInit(ctx, repo, rev, maintainers, write, force, stdout, stderr)
		},
	}
}

func runInit(ctx context.Context, repo, rev string, maintainers []string, write, force bool, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "catalog-check init: "+format+"\n", a...)
		return exitCannotRun
	}
	if write && rev != "" {
		return fail("--write writes into the working tree; leave out --rev, or redirect the output")
	}
	target := filepath.Join(repo, policy.FileName)
	if write && !force {
		if _, err := os.Lstat(target); err == nil {
			return fail("%s exists; check it with catalog-check policy lint, or replace it with --force", target)
		}
	}
	fsys, done, err := openRepo(ctx, repo, rev)
	if err != nil {
		return fail("%v", err)
	}
	defer done()
	scan, err := scanRepo(ctx, fsys)
	if err != nil {
		return fail("%v", err)
	}
	if len(maintainers) > 0 {
		scan.maintainers, scan.maintainersFrom = nil, "--maintainer"
		for _, m := range maintainers {
			p, err := policy.ParsePrincipal(m)
			if err != nil {
				return fail("--maintainer %q: %v", m, err)
			}
			scan.maintainers = append(scan.maintainers, p.String())
		}
	}
	where := repo
	if rev != "" {
		where = repo + " at " + rev
	}
	text, err := scan.policyText(fsys, where)
	if err != nil {
		return fail("%s: %v", where, err)
	}
	// What init writes must be a policy catalogbot accepts, on this very repository.
	pol, err := policy.Parse(policy.FileName, []byte(text))
	if err == nil {
		_, err = pol.ResolveCatalogs(fsys)
	}
	if err != nil {
		return fail("the policy written for %s does not hold (a bug of init; please report it):\n%v\n%s", where, err, text)
	}
	if !write {
		io.WriteString(stdout, text)
		return exitPass
	}
	if err := os.WriteFile(target, []byte(text), 0o644); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stderr, "catalog-check init: wrote %s (%s, %s); check it with: catalog-check policy lint --repo %s\n",
		target, plural(len(pol.Catalogs), "catalog entry"), plural(len(pol.Bundles), "bundle root"), repo)
	return exitPass
}

func policyCommand(e env) cli.Command {
	return cli.Command{
		Use:   "policy",
		Short: "commands on the repository policy file (.catalogbot.yaml)",
		Commands: []cli.Command{
			policyLintCommand(e),
		},
	}
}

func policyLintCommand(e env) cli.Command {
	var (
		repo, rev, file, output, usersFile, teamsFile string
		githubUsers                                   bool
	)
	return cli.Command{
		Use:   "lint",
		Short: "check a .catalogbot.yaml against the repository it governs",
		Long: `Checks the policy file of a repository against the repository: catalog roots and patterns that match
no directory or hold no package, bundle roots that hold no bundle directory, templates and catalog files
that do not exist, packages nobody owns (neither the policy's packages nor their ci.yaml reviewers), and
names that are not GitHub logins among the reviewers of ci.yaml files. With --known-users (a file of
logins, one a line, e.g. the organization's members) every login of the policy and of the ci.yaml files
must be one of them; with --github-users each is looked up on GitHub (GET /users/LOGIN at $GITHUB_API_URL,
default https://api.github.com, with $GITHUB_TOKEN if set; a lookup that fails makes the lint "could not
verify", exit 2); with --team-members every team must be listed there.
Every finding is path:line:col: severity: rule: message (policy.* in docs/rules.md).
Exit 0: no error (warnings allowed); 1: an error; 2: could not run.`,
		Example: `  catalog-check policy lint --repo .
  catalog-check policy lint --repo . --rev origin/main --known-users members.txt --team-members teams.yaml
  catalog-check policy lint --policy new-policy.yaml --repo . -o json`,
		Args:     cli.NoArgs,
		Complete: map[string]cli.Completion{"output": {Values: []string{"text", "json"}}},
		Flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&repo, "repo", ".", "the repository's directory")
			fs.StringVar(&rev, "rev", "", "read this git revision instead of the working tree (nothing is checked out)")
			fs.StringVar(&file, "policy", "", "the policy file to check (default: the repository's .catalogbot.yaml)")
			fs.StringVarP(&output, "output", "o", "text", "output format: text or json")
			fs.StringVar(&usersFile, "known-users", "", "a file of the GitHub logins that exist (one a line; # comments)")
			fs.StringVar(&teamsFile, "team-members", "", `a YAML mapping of "@org/team" to its logins, as check takes it`)
			fs.BoolVar(&githubUsers, "github-users", false, "look every login up on GitHub ($GITHUB_API_URL, $GITHUB_TOKEN)")
		},
		Run: func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
			var lookup func(context.Context, string) (bool, error)
			if githubUsers {
				lookup = githubUserLookup(e.getenv)
			}
			return runPolicyLint(ctx, repo, rev, file, output, usersFile, teamsFile, lookup, stdout, stderr)
		},
	}
}

func runPolicyLint(ctx context.Context, repo, rev, file, output, usersFile, teamsFile string, lookup func(context.Context, string) (bool, error), stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "catalog-check policy lint: "+format+"\n", a...)
		return exitCannotRun
	}
	if output != "text" && output != "json" {
		return fail("unknown --output %q (want text or json)", output)
	}
	opt := lintOptions{userExists: lookup}
	if usersFile != "" {
		data, err := readBoundedFile(usersFile, 16<<20)
		if err != nil {
			return fail("--known-users: %v", err)
		}
		opt.knownUsers = map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			if l := strings.TrimPrefix(strings.TrimSpace(line), "@"); l != "" {
				opt.knownUsers[strings.ToLower(l)] = true
			}
		}
	}
	if teamsFile != "" {
		tf, err := policy.LoadTeamsFile(teamsFile)
		if err != nil {
			return fail("--team-members: %v", err)
		}
		opt.teams = tf
	}
	fsys, done, err := openRepo(ctx, repo, rev)
	if err != nil {
		return fail("%v", err)
	}
	defer done()
	name := policy.FileName
	var data []byte
	if file != "" {
		name = file
		data, err = readBoundedFile(file, 1<<20)
	} else {
		data, err = readHead(fsys, policy.FileName, 1<<20+1)
		if err == nil && len(data) > 1<<20 {
			err = fmt.Errorf("%s is larger than 1 MiB", policy.FileName)
		}
		if errors.Is(err, fs.ErrNotExist) || err != nil && !fileExistsFS(fsys, policy.FileName) {
			return fail("%s has no %s: write one with catalog-check init", joinRepo(repo, rev, "."), policy.FileName)
		}
	}
	if err != nil {
		return fail("%v", err)
	}
	var findings []catalog.Finding
	var unverified []error
	pol, err := policy.Parse(name, data)
	var pe *policy.ParseError
	switch {
	case errors.As(err, &pe):
		for _, p := range pe.Problems {
			findings = append(findings, catalog.Finding{Rule: rulePolicyInvalid, Severity: catalog.SeverityError,
				Position: catalog.Position{File: p.File, Line: p.Line, Column: p.Column}, Message: p.Message, Hint: p.Hint})
		}
	case err != nil:
		return fail("%v", err)
	default:
		findings, unverified, err = lintPolicy(ctx, fsys, pol, opt)
		if err != nil {
			return fail("%v", err)
		}
	}
	code := exitPass
	switch {
	case catalog.HasErrors(findings):
		code = exitFail
	case len(unverified) > 0:
		code = exitCannotRun
	}
	if len(unverified) > 0 {
		fmt.Fprintf(stderr, "catalog-check policy lint: could not verify %s on GitHub: %v\n", plural(len(unverified), "login"), unverified[0])
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if findings == nil {
			findings = []catalog.Finding{}
		}
		if err := enc.Encode(struct {
			Valid    bool              `json:"valid"`
			Findings []catalog.Finding `json:"findings"`
		}{code == exitPass, findings}); err != nil {
			return fail("%v", err)
		}
		return code
	}
	errs := 0
	for _, f := range findings {
		if f.Severity == catalog.SeverityError {
			errs++
		}
		writeFinding(stdout, f, true)
	}
	verdict := "ok"
	switch code {
	case exitFail:
		verdict = "INVALID"
	case exitCannotRun:
		verdict = "not verified"
	}
	fmt.Fprintf(stdout, "%s: %s: %s, %s\n", name, verdict, plural(errs, "error"), plural(len(findings)-errs, "warning"))
	return code
}

func fileExistsFS(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// githubUserLookup asks GitHub's REST API whether a login is a user or organization: 200 yes, 404 no, any
// other answer an error. Each request has its own deadline; the token, when given, is sent to the API host
// only.
func githubUserLookup(getenv func(string) string) func(context.Context, string) (bool, error) {
	api := strings.TrimRight(getenv("GITHUB_API_URL"), "/")
	if api == "" {
		api = "https://api.github.com"
	}
	token := getenv("GITHUB_TOKEN")
	client := &http.Client{
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return func(ctx context.Context, login string) (bool, error) {
		if !policy.ValidLogin(login) {
			return false, nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/users/"+url.PathEscape(login), nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("User-Agent", "catalog-check")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return true, nil
		case http.StatusNotFound:
			return false, nil
		}
		return false, fmt.Errorf("GET /users/%s: %s", login, resp.Status)
	}
}
