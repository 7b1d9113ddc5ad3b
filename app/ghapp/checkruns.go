package ghapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks/verdict"
	"github.com/catalogbot/catalogbot/internal/markdown"
	"github.com/google/go-github/v62/github"
)

// GitHub's documented check-run limits.
const (
	// MaxAnnotationsPerRequest: a create or update request carries at most 50 annotations.
	MaxAnnotationsPerRequest = 50
	// MaxCheckRunOutput is the limit of summary and text, in characters.
	MaxCheckRunOutput    = 65535
	maxAnnotationMessage = 60 << 10 // bytes; GitHub allows 64 KB
	maxCheckRunTitle     = 255
)

// MaxAnnotationsPerRun bounds how many findings become annotations of one
// check run (20 requests); the rest are counted in the summary and listed in
// the text.
const MaxAnnotationsPerRun = 1000

// rerunAction is the button on every completed run (label ≤ 20, identifier
// ≤ 20, description ≤ 40 characters).
func rerunAction() *github.CheckRunAction {
	return &github.CheckRunAction{Label: "Re-run", Identifier: jobs.RerunActionID, Description: "Run this check again on this commit"}
}

// maxRememberedRuns bounds the run id → name memory of a reporter.
const maxRememberedRuns = 10000

// CheckRunReporter creates check runs and completes them with results.
type CheckRunReporter struct {
	log *slog.Logger

	mu    sync.Mutex
	names map[int64]string // run id → name, from Start; updates must repeat the name
}

// NewCheckRunReporter returns a reporter; log may be nil.
func NewCheckRunReporter(log *slog.Logger) *CheckRunReporter {
	if log == nil {
		log = slog.Default()
	}
	return &CheckRunReporter{log: log, names: map[int64]string{}}
}

// Start gives the runs job still has to complete on headSHA, by name: it
// creates one in_progress run per name, except that a retried job (killed,
// timed out) takes its own runs back: those in progress are returned, those
// it completed already are left out, keeping their result. So a crash at any
// point leaves neither runs in progress for ever nor two results for one
// job. On error the runs found or created so far are returned with it.
func (r *CheckRunReporter) Start(ctx context.Context, gh *github.Client, owner, repo, headSHA string, pr int, job string, names []string) (map[string]int64, error) {
	if job == "" {
		return map[string]int64{}, errors.New("starting check runs: no job key")
	}
	h, err := scanRuns(ctx, gh, owner, repo, headSHA, pr, job)
	if err != nil {
		return map[string]int64{}, err
	}
	return r.create(ctx, gh, owner, repo, headSHA, jobs.CheckRunExternalID(pr, job), h.own, names)
}

// StartUnlessChecked is Start for a job that only wants its head checked:
// when another job of the PR already gave the head a verdict on every name
// (see CheckedByAnother), it creates nothing and returns that job's
// external_id. One listing of the head's runs answers both.
func (r *CheckRunReporter) StartUnlessChecked(ctx context.Context, gh *github.Client, owner, repo, headSHA string, pr int, job string, names []string) (map[string]int64, string, error) {
	if job == "" {
		return map[string]int64{}, "", errors.New("starting check runs: no job key")
	}
	h, err := scanRuns(ctx, gh, owner, repo, headSHA, pr, job)
	if err != nil {
		return map[string]int64{}, "", err
	}
	if by := h.checkedBy(names); by != "" {
		return map[string]int64{}, by, nil
	}
	ids, err := r.create(ctx, gh, owner, repo, headSHA, jobs.CheckRunExternalID(pr, job), h.own, names)
	return ids, "", err
}

// create returns the runs of own still in progress and creates one for each
// name that has none (see Start).
func (r *CheckRunReporter) create(ctx context.Context, gh *github.Client, owner, repo, headSHA, externalID string, own map[string]ownRun, names []string) (map[string]int64, error) {
	ids := make(map[string]int64, len(names))
	now := github.Timestamp{Time: time.Now()}
	for _, name := range names {
		if run, ok := own[name]; ok {
			if !run.done {
				ids[name] = run.id
				r.remember(run.id, name)
			}
			continue
		}
		cr, _, err := gh.Checks.CreateCheckRun(ctx, owner, repo, github.CreateCheckRunOptions{
			Name:       name,
			HeadSHA:    headSHA,
			Status:     github.String("in_progress"),
			StartedAt:  &now,
			ExternalID: github.String(externalID),
		})
		if err != nil {
			return ids, fmt.Errorf("creating check run %q on %s/%s@%s: %w", name, owner, repo, headSHA, err)
		}
		ids[name] = cr.GetID()
		r.remember(cr.GetID(), name)
	}
	return ids, nil
}

// InProgress returns the runs of job on headSHA still in progress, by name,
// without creating any: what an earlier attempt of the job left open.
func (r *CheckRunReporter) InProgress(ctx context.Context, gh *github.Client, owner, repo, headSHA string, pr int, job string) (map[string]int64, error) {
	ids := map[string]int64{}
	if job == "" {
		return ids, errors.New("listing check runs: no job key")
	}
	h, err := scanRuns(ctx, gh, owner, repo, headSHA, pr, job)
	if err != nil {
		return ids, err
	}
	for name, run := range h.own {
		if !run.done {
			ids[name] = run.id
			r.remember(run.id, name)
		}
	}
	return ids, nil
}

// CheckedByAnother says whether another job already gave this head of pr a
// verdict on every name: the newest run of each name among the other jobs'
// runs is completed with a result of its checks (not one of the
// placeholders a job writes when it did not check: superseded, not checked,
// could not run). It returns that job's external_id, or "" when a check is
// still needed, and also "" when job has runs of its own on the head (a
// retry completes those).
func (r *CheckRunReporter) CheckedByAnother(ctx context.Context, gh *github.Client, owner, repo, headSHA string, pr int, job string, names []string) (string, error) {
	if job == "" {
		return "", errors.New("listing check runs: no job key")
	}
	h, err := scanRuns(ctx, gh, owner, repo, headSHA, pr, job)
	if err != nil {
		return "", err
	}
	return h.checkedBy(names), nil
}

// ownRun is the newest run of one name that a job created.
type ownRun struct {
	id   int64
	done bool
}

// otherRun is the newest run of one name that another job of the same pull
// request created.
type otherRun struct {
	id            int64
	done, verdict bool
	externalID    string
}

// headRuns is what the runs on one head say to one job of a pull request:
// its own runs and the other jobs' of the pull request, by name.
type headRuns struct {
	own    map[string]ownRun
	others map[string]otherRun
}

// checkedBy is CheckedByAnother's answer.
func (h headRuns) checkedBy(names []string) string {
	if len(h.own) > 0 {
		return ""
	}
	by := ""
	for _, name := range names {
		n, ok := h.others[name]
		if !ok || !n.done || !n.verdict {
			return ""
		}
		by = n.externalID
	}
	return by
}

// maxOwnRunPages bounds the listing of a head's runs (100 per page).
const maxOwnRunPages = 10

// scanRuns lists the runs on sha once and keeps the newest of each name of
// job's own and of the other jobs of pr.
func scanRuns(ctx context.Context, gh *github.Client, owner, repo, sha string, pr int, job string) (headRuns, error) {
	mine := jobs.CheckRunExternalID(pr, job)
	prefix := jobs.CheckRunExternalID(pr, "")
	h := headRuns{own: map[string]ownRun{}, others: map[string]otherRun{}}
	all := github.ListCheckRunsOptions{Filter: github.String("all")}
	err := ListRuns(ctx, gh, owner, repo, sha, all, maxOwnRunPages, func(cr *github.CheckRun) {
		ext, name, done := cr.GetExternalID(), cr.GetName(), cr.GetStatus() == "completed"
		switch {
		case ext == mine:
			if cr.GetID() > h.own[name].id {
				h.own[name] = ownRun{id: cr.GetID(), done: done}
			}
		case strings.HasPrefix(ext, prefix) && cr.GetID() > h.others[name].id:
			h.others[name] = otherRun{id: cr.GetID(), done: done,
				verdict: !placeholderTitle(cr.GetOutput().GetTitle()), externalID: ext}
		}
	})
	return h, err
}

// ListRuns calls f with each check run on sha that opt selects, reading up
// to maxPages pages of 100.
func ListRuns(ctx context.Context, gh *github.Client, owner, repo, sha string, opt github.ListCheckRunsOptions, maxPages int, f func(*github.CheckRun)) error {
	opt.ListOptions = github.ListOptions{PerPage: 100}
	for page := 0; page < maxPages; page++ {
		res, resp, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, &opt)
		if err != nil {
			return fmt.Errorf("listing the check runs on %s/%s@%s: %w", owner, repo, sha, err)
		}
		for _, cr := range res.CheckRuns {
			f(cr)
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return nil
}

func (r *CheckRunReporter) remember(id int64, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.names) >= maxRememberedRuns {
		for k := range r.names {
			delete(r.names, k)
			break
		}
	}
	r.names[id] = name
}

// nameOf returns a run's name, asking GitHub when Start was not ours (another
// replica, a restart).
func (r *CheckRunReporter) nameOf(ctx context.Context, gh *github.Client, owner, repo string, id int64) (string, error) {
	r.mu.Lock()
	name, ok := r.names[id]
	r.mu.Unlock()
	if ok {
		return name, nil
	}
	cr, _, err := gh.Checks.GetCheckRun(ctx, owner, repo, id)
	if err != nil {
		return "", fmt.Errorf("reading check run %d of %s/%s: %w", id, owner, repo, err)
	}
	r.remember(id, cr.GetName())
	return cr.GetName(), nil
}

// Note shows title and summary on a run that stays in progress: an attempt
// failed and the job will try again, reporting on the same run.
func (r *CheckRunReporter) Note(ctx context.Context, gh *github.Client, owner, repo string, runID int64, title, summary string) error {
	name, err := r.nameOf(ctx, gh, owner, repo, runID)
	if err != nil {
		return err
	}
	opt := github.UpdateCheckRunOptions{
		Name: name,
		Output: &github.CheckRunOutput{
			Title:   github.String(truncateRunes(strings.ReplaceAll(title, "\n", " "), maxCheckRunTitle, "…")),
			Summary: github.String(TruncateOutput(summary)),
		},
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, owner, repo, runID, opt); err != nil {
		return fmt.Errorf("updating check run %d (%s) of %s/%s: %w", runID, name, owner, repo, err)
	}
	return nil
}

// Complete reports a result on a run: its conclusion, title, summary, text,
// the Re-run button and its annotations (see CompleteRun).
func (r *CheckRunReporter) Complete(ctx context.Context, gh *github.Client, owner, repo string, runID int64, res verdict.Result, extraMarkdown string) error {
	name, err := r.nameOf(ctx, gh, owner, repo, runID)
	if err != nil {
		return err
	}
	rep := RenderCheckRun(res, extraMarkdown)
	rep.Summary = withCommandsFooter(rep.Summary)
	if err := CompleteRun(ctx, gh, owner, repo, runID, name, rep, []*github.CheckRunAction{rerunAction()}); err != nil {
		return err
	}
	r.log.LogAttrs(ctx, slog.LevelDebug, "check run completed", slog.String("repo", owner+"/"+repo), slog.Int64("check_run", runID),
		slog.String("name", name), slog.String("conclusion", rep.Conclusion), slog.Int("annotations", len(rep.Annotations)))
	return nil
}

// CompleteRun completes run runID (named name) with rep.
//
// GitHub takes 50 annotations a request and appends them. With more, all
// batches but the last go while the run is still in progress and the last
// completes it: a job killed in between leaves the run in progress, its
// retry reuses that run, and skips the annotations it already holds (one
// commit's results render in the same order).
func CompleteRun(ctx context.Context, gh *github.Client, owner, repo string, runID int64, name string, rep CheckRunReport, actions []*github.CheckRunAction) error {
	rest := rep.Annotations
	if len(rest) > MaxAnnotationsPerRequest {
		cr, _, err := gh.Checks.GetCheckRun(ctx, owner, repo, runID)
		if err != nil {
			return fmt.Errorf("reading check run %d (%s) of %s/%s: %w", runID, name, owner, repo, err)
		}
		if cr.GetStatus() == "completed" {
			return nil // an earlier attempt completed it, annotations and all
		}
		rest = rest[min(cr.GetOutput().GetAnnotationsCount(), len(rest)):]
	}
	for len(rest) > MaxAnnotationsPerRequest {
		more := github.UpdateCheckRunOptions{
			Name: name,
			Output: &github.CheckRunOutput{
				Title:       github.String(rep.Title),
				Summary:     github.String(rep.Summary),
				Annotations: rest[:MaxAnnotationsPerRequest],
			},
		}
		if _, _, err := gh.Checks.UpdateCheckRun(ctx, owner, repo, runID, more); err != nil {
			return fmt.Errorf("adding annotations to check run %d (%s) of %s/%s: %w", runID, name, owner, repo, err)
		}
		rest = rest[MaxAnnotationsPerRequest:]
	}
	now := github.Timestamp{Time: time.Now()}
	last := github.UpdateCheckRunOptions{
		Name:        name,
		Status:      github.String("completed"),
		Conclusion:  github.String(rep.Conclusion),
		CompletedAt: &now,
		Output: &github.CheckRunOutput{
			Title:       github.String(rep.Title),
			Summary:     github.String(rep.Summary),
			Text:        github.String(rep.Text),
			Annotations: rest,
		},
		Actions: actions,
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, owner, repo, runID, last); err != nil {
		return fmt.Errorf("completing check run %d (%s) of %s/%s: %w", runID, name, owner, repo, err)
	}
	return nil
}

// CheckRunReport is a result rendered for GitHub, within GitHub's limits.
type CheckRunReport struct {
	Conclusion  string
	Title       string
	Summary     string
	Text        string
	Annotations []*github.CheckRunAnnotation
}

// RenderCheckRun turns a result into what a check run shows: findings with a
// file become annotations at their line (line 1 when unknown; columns only
// when known, on that one line); findings without a file are listed in the
// summary; the text lists every finding. Summary and text are cut to
// GitHub's 65,535 characters on a rune boundary with a visible note.
func RenderCheckRun(res verdict.Result, extraMarkdown string) CheckRunReport {
	fs := append([]catalog.Finding(nil), res.Findings...)
	catalog.SortFindings(fs)
	var anns []*github.CheckRunAnnotation
	var fileless []catalog.Finding
	var errs, warns, notAnnotated int
	for _, f := range fs {
		switch f.Severity {
		case catalog.SeverityIgnore:
			continue
		case catalog.SeverityError:
			errs++
		default:
			warns++
		}
		path := strings.TrimLeft(strings.TrimPrefix(f.File, "./"), "/")
		if path == "" {
			fileless = append(fileless, f)
			continue
		}
		if len(anns) >= MaxAnnotationsPerRun {
			notAnnotated++
			continue
		}
		anns = append(anns, annotation(path, f))
	}

	conclusion := string(res.Conclusion)
	switch res.Conclusion {
	case verdict.Success, verdict.Failure, verdict.Neutral, verdict.ActionRequired, verdict.Skipped:
	default:
		conclusion = string(verdict.Neutral)
	}
	title := res.Title
	if title == "" {
		title = defaultTitle(res.Conclusion, errs, warns)
	}
	title = truncateRunes(strings.ReplaceAll(title, "\n", " "), maxCheckRunTitle, "…")

	var sum strings.Builder
	sum.WriteString(res.Summary)
	if res.Err != "" {
		fmt.Fprintf(&sum, "\n\n**The check could not finish:** %s\n", MarkdownInline(res.Err))
	}
	if len(fileless) > 0 {
		sum.WriteString("\n\n### Findings not tied to a file\n\n")
		for _, f := range fileless {
			fmt.Fprintf(&sum, "- **%s** `%s`: %s", f.Severity, MarkdownCode(f.Rule), MarkdownInline(f.Message))
			if f.Hint != "" {
				fmt.Fprintf(&sum, " — %s", MarkdownInline(f.Hint))
			}
			sum.WriteString("\n")
		}
	}
	if notAnnotated > 0 {
		fmt.Fprintf(&sum, "\n\n%d more findings are not annotated (at most %d annotations per check run); the details list all of them.\n", notAnnotated, MaxAnnotationsPerRun)
	}
	if extraMarkdown != "" {
		sum.WriteString("\n\n")
		sum.WriteString(extraMarkdown)
	}

	var text strings.Builder
	if len(fs) > 0 {
		text.WriteString("| Where | Severity | Rule | Finding |\n|---|---|---|---|\n")
		for _, f := range fs {
			if f.Severity == catalog.SeverityIgnore {
				continue
			}
			msg := MarkdownCell(f.Message)
			if f.Hint != "" {
				msg += "<br>Fix: " + MarkdownCell(f.Hint)
			}
			fmt.Fprintf(&text, "| `%s` | %s | `%s` | %s |\n", MarkdownCode(f.Position.String()), f.Severity, MarkdownCode(f.Rule), msg)
		}
	}
	return CheckRunReport{
		Conclusion:  conclusion,
		Title:       title,
		Summary:     TruncateOutput(sum.String()),
		Text:        TruncateOutput(text.String()),
		Annotations: anns,
	}
}

// commandsFooter closes the summary of every pull request check run: the comment commands and who may use them.
var commandsFooter = "\n\n---\n<details><summary>Comment commands: <code>/approve</code>, <code>/hold</code>, <code>/retest</code>, <code>/help</code></summary>\n\n" +
	jobs.CommandsHelp(jobs.DefaultRetestPerHour) + "\n</details>\n"

// withCommandsFooter appends the footer, cutting the summary further if both would pass GitHub's limit.
func withCommandsFooter(summary string) string {
	room := MaxCheckRunOutput - utf8.RuneCountInString(commandsFooter)
	if n := utf8.RuneCountInString(summary); n > room {
		note := fmt.Sprintf("\n\n… *(truncated: %d of %d characters shown, GitHub's limit is %d)*", room, n, MaxCheckRunOutput)
		keep := room - utf8.RuneCountInString(note) - 8
		summary = truncateRunes(summary, keep, "") + fmt.Sprintf("\n\n… *(truncated: %d of %d characters shown, GitHub's limit is %d)*", keep, n, MaxCheckRunOutput)
	}
	return summary + commandsFooter
}

func annotation(path string, f catalog.Finding) *github.CheckRunAnnotation {
	level := "warning"
	if f.Severity == catalog.SeverityError {
		level = "failure"
	}
	line := f.Line
	if line <= 0 {
		line = 1
	}
	msg := f.Message
	if f.Hint != "" {
		msg += "\n\nHow to fix: " + f.Hint
	}
	a := &github.CheckRunAnnotation{
		Path:            github.String(path),
		StartLine:       github.Int(line),
		EndLine:         github.Int(line),
		AnnotationLevel: github.String(level),
		Message:         github.String(truncateBytes(msg, maxAnnotationMessage)),
		Title:           github.String(truncateRunes(f.Rule, maxCheckRunTitle, "…")),
	}
	if f.Line > 0 && f.Column > 0 {
		a.StartColumn = github.Int(f.Column)
		a.EndColumn = github.Int(f.Column)
	}
	return a
}

func defaultTitle(c verdict.Conclusion, errs, warns int) string {
	switch {
	case c == verdict.Neutral:
		return "Could not reach a verdict"
	case errs > 0:
		return fmt.Sprintf("%d %s, %d %s", errs, Plural(errs, "error", "errors"), warns, Plural(warns, "warning", "warnings"))
	case warns > 0:
		return fmt.Sprintf("Passed with %d %s", warns, Plural(warns, "warning", "warnings"))
	}
	return "Passed"
}

func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// TruncateOutput cuts s to GitHub's limit, on a rune boundary, ending with a
// note that says how much was left out.
func TruncateOutput(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= MaxCheckRunOutput {
		return s
	}
	note := fmt.Sprintf("\n\n… *(truncated: %d of %d characters shown, GitHub's limit is %d)*", 0, n, MaxCheckRunOutput)
	keep := MaxCheckRunOutput - utf8.RuneCountInString(note) - 8 // room for the shown count to grow
	note = fmt.Sprintf("\n\n… *(truncated: %d of %d characters shown, GitHub's limit is %d)*", keep, n, MaxCheckRunOutput)
	return truncateRunes(s, keep, "") + note
}

// truncateRunes keeps at most n runes of s, the last of which is suffix when cut.
func truncateRunes(s string, n int, suffix string) string {
	return markdown.TruncateRunes(s, n, suffix)
}

// truncateBytes keeps at most n bytes of s, cut on a rune boundary.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Escapers are immutable tables (a Replacer is safe for concurrent use);
// building one is costly, so they are built once.
var (
	inlineEscaper = strings.NewReplacer("\r", " ", "\n", " ", "<", "&lt;", ">", "&gt;")
	codeEscaper   = strings.NewReplacer("`", "'", "\n", " ", "\r", " ", "|", `\|`)
)

// MarkdownInline keeps a message on one line and stops it from starting
// markdown constructs GitHub would render (HTML, links to elsewhere).
func MarkdownInline(s string) string {
	s = inlineEscaper.Replace(s)
	return truncateRunes(s, 2000, "…")
}

// MarkdownCell is MarkdownInline for a table cell, where | ends the cell.
func MarkdownCell(s string) string { return strings.ReplaceAll(MarkdownInline(s), "|", `\|`) }

// MarkdownCode makes s safe inside a single-backtick code span.
func MarkdownCode(s string) string { return markdown.Code(s) }

// Titles of the runs a job completes without having checked the head.
const (
	TitleSuperseded  = "Superseded"
	TitleNotChecked  = "Not checked"
	TitleCouldNotRun = "Could not run"
)

// placeholderTitle tells the runs completed without a check's verdict.
func placeholderTitle(title string) bool {
	switch title {
	case TitleSuperseded, TitleNotChecked, TitleCouldNotRun:
		return true
	}
	return false
}

// JobRuns is the reporter bound once to one job's runs: the repository, the head, the pull request (0 for
// a merge group) and the job, so each call names only what changes.
type JobRuns struct {
	r                 *CheckRunReporter
	gh                *github.Client
	owner, repo, head string
	pr                int
	job               string
}

// For binds the reporter to one job's runs.
func (r *CheckRunReporter) For(gh *github.Client, owner, repo, headSHA string, pr int, job string) *JobRuns {
	return &JobRuns{r: r, gh: gh, owner: owner, repo: repo, head: headSHA, pr: pr, job: job}
}

// Start is CheckRunReporter.Start for the bound job.
func (j *JobRuns) Start(ctx context.Context, names []string) (map[string]int64, error) {
	return j.r.Start(ctx, j.gh, j.owner, j.repo, j.head, j.pr, j.job, names)
}

// StartUnlessChecked is CheckRunReporter.StartUnlessChecked for the bound job.
func (j *JobRuns) StartUnlessChecked(ctx context.Context, names []string) (map[string]int64, string, error) {
	return j.r.StartUnlessChecked(ctx, j.gh, j.owner, j.repo, j.head, j.pr, j.job, names)
}

// InProgress is CheckRunReporter.InProgress for the bound job.
func (j *JobRuns) InProgress(ctx context.Context) (map[string]int64, error) {
	return j.r.InProgress(ctx, j.gh, j.owner, j.repo, j.head, j.pr, j.job)
}

// Note is CheckRunReporter.Note on one of the bound job's runs.
func (j *JobRuns) Note(ctx context.Context, runID int64, title, summary string) error {
	return j.r.Note(ctx, j.gh, j.owner, j.repo, runID, title, summary)
}

// Complete is CheckRunReporter.Complete on one of the bound job's runs.
func (j *JobRuns) Complete(ctx context.Context, runID int64, res verdict.Result, extraMarkdown string) error {
	return j.r.Complete(ctx, j.gh, j.owner, j.repo, runID, res, extraMarkdown)
}

// CompleteAll completes every run of ids with res (its Check set to each run's name).
func (j *JobRuns) CompleteAll(ctx context.Context, ids map[string]int64, res verdict.Result) error {
	var errs []error
	for name, id := range ids {
		r := res
		r.Check = name
		if err := j.Complete(ctx, id, r, ""); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
