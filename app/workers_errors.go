package app

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// jobErrorLogger logs every failed attempt of a job where an operator looks: WARN while River will try
// again, ERROR on the last attempt, with the repository, pull request and commit the job was about, so a
// job that keeps failing (a 403 for a missing permission, say) is never a silent loop.
type jobErrorLogger struct{ log *slog.Logger }

// jobSubject is what any of our jobs' arguments say about their subject.
type jobSubject struct {
	Owner   string `json:"owner"`
	Repo    string `json:"repo"`
	Number  int    `json:"number"`
	HeadSHA string `json:"head_sha"`
	SHA     string `json:"sha"`
}

func (h jobErrorLogger) attrs(job *rivertype.JobRow) []any {
	var s jobSubject
	_ = json.Unmarshal(job.EncodedArgs, &s)
	sha := s.HeadSHA
	if sha == "" {
		sha = s.SHA
	}
	attrs := []any{"job", job.Kind, "job_id", job.ID, "attempt", job.Attempt, "max_attempts", job.MaxAttempts}
	if s.Owner != "" {
		attrs = append(attrs, "repo", s.Owner+"/"+s.Repo)
	}
	if s.Number != 0 {
		attrs = append(attrs, "pr", s.Number)
	}
	if sha != "" {
		attrs = append(attrs, "sha", sha)
	}
	return attrs
}

func (h jobErrorLogger) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	attrs := append(h.attrs(job), "err", err)
	if job.Attempt >= job.MaxAttempts {
		h.log.ErrorContext(ctx, "job failed for good; it will not be retried", attrs...)
	} else {
		h.log.WarnContext(ctx, "job attempt failed; it will be retried", attrs...)
	}
	return nil
}

func (h jobErrorLogger) HandlePanic(ctx context.Context, job *rivertype.JobRow, v any, trace string) *river.ErrorHandlerResult {
	h.log.ErrorContext(ctx, "job panicked", append(h.attrs(job), "panic", v, "trace", trace)...)
	return nil
}
