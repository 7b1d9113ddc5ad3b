package checkrun

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// GitHub's documented check-run limits.
const (
	maxAnnotationsPerRequest = 50
	maxOutputChars           = 65535
	maxActions               = 3
	maxActionLabel           = 20
	maxActionIdentifier      = 20
	maxActionDescription     = 40
	maxAnnotationTitle       = 255
	maxAnnotationBytes       = 64 << 10
)

// CheckRun is a check run as GitHub stores it.
type CheckRun struct {
	ID                        int64
	AppID                     int64
	Name, HeadSHA, ExternalID string
	DetailsURL                string
	Status, Conclusion        string
	Title, Summary, Text      string
	Annotations               []Annotation
	Actions                   []Action
	StartedAt, CompletedAt    time.Time
	// Requests counts the create and update requests that touched it.
	Requests int
}

// Annotation is a check-run annotation.
type Annotation struct {
	Path        string `json:"path"`
	StartLine   int    `json:"start_line"`
	EndLine     int    `json:"end_line"`
	StartColumn *int   `json:"start_column,omitempty"`
	EndColumn   *int   `json:"end_column,omitempty"`
	Level       string `json:"annotation_level"`
	Message     string `json:"message"`
	Title       string `json:"title,omitempty"`
	RawDetails  string `json:"raw_details,omitempty"`
}

// Action is a check-run action button.
type Action struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

// Copy is the run with its own copies of the annotations and actions.
func (cr CheckRun) Copy() CheckRun {
	out := cr
	out.Annotations = append([]Annotation(nil), cr.Annotations...)
	out.Actions = append([]Action(nil), cr.Actions...)
	return out
}

// Input is the body of a create or update request.
type Input struct {
	Name        *string    `json:"name"`
	HeadSHA     *string    `json:"head_sha"`
	DetailsURL  *string    `json:"details_url"`
	ExternalID  *string    `json:"external_id"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *Output    `json:"output"`
	Actions     []Action   `json:"actions"`
}

// Output is the output object of a request body.
type Output struct {
	Title       *string      `json:"title"`
	Summary     *string      `json:"summary"`
	Text        *string      `json:"text"`
	Annotations []Annotation `json:"annotations"`
}

var checkStatuses = map[string]bool{"queued": true, "in_progress": true, "completed": true}
var checkConclusions = map[string]bool{"action_required": true, "cancelled": true, "failure": true, "neutral": true, "success": true, "skipped": true, "stale": true, "timed_out": true}
var annotationLevels = map[string]bool{"notice": true, "warning": true, "failure": true}

// Validate applies GitHub's documented limits to a create or update body.
func (in *Input) Validate(create bool) *Invalid {
	if create {
		if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
			return &Invalid{Field: "name", Code: "missing_field", Message: "name is required"}
		}
		if in.HeadSHA == nil || !isSHA(*in.HeadSHA) {
			sha := ""
			if in.HeadSHA != nil {
				sha = *in.HeadSHA
			}
			return &Invalid{Message: "No commit found for SHA: " + sha}
		}
	}
	if in.Status != nil && !checkStatuses[*in.Status] {
		return &Invalid{Field: "status", Code: "invalid", Message: "status is not included in the list"}
	}
	if in.Conclusion != nil && !checkConclusions[*in.Conclusion] {
		return &Invalid{Field: "conclusion", Code: "invalid", Message: "conclusion is not included in the list"}
	}
	if in.Status != nil && *in.Status == "completed" && in.Conclusion == nil {
		return &Invalid{Field: "conclusion", Code: "missing_field", Message: "conclusion is required when status is completed"}
	}
	if o := in.Output; o != nil {
		if o.Title == nil || o.Summary == nil {
			return &Invalid{Field: "output", Code: "missing_field", Message: "output requires a title and a summary"}
		}
		if utf8.RuneCountInString(*o.Summary) > maxOutputChars {
			return &Invalid{Field: "output.summary", Code: "invalid", Message: fmt.Sprintf("summary is too long (maximum is %d characters)", maxOutputChars)}
		}
		if o.Text != nil && utf8.RuneCountInString(*o.Text) > maxOutputChars {
			return &Invalid{Field: "output.text", Code: "invalid", Message: fmt.Sprintf("text is too long (maximum is %d characters)", maxOutputChars)}
		}
		if len(o.Annotations) > maxAnnotationsPerRequest {
			return &Invalid{Field: "output.annotations", Code: "invalid", Message: fmt.Sprintf("only %d annotations are allowed per request", maxAnnotationsPerRequest)}
		}
		for i, a := range o.Annotations {
			if msg := a.problem(); msg != "" {
				return &Invalid{Field: fmt.Sprintf("output.annotations[%d]", i), Code: "invalid", Message: msg}
			}
		}
	}
	if len(in.Actions) > maxActions {
		return &Invalid{Field: "actions", Code: "invalid", Message: fmt.Sprintf("at most %d actions are allowed", maxActions)}
	}
	for i, a := range in.Actions {
		switch {
		case a.Label == "" || a.Description == "" || a.Identifier == "":
			return &Invalid{Field: fmt.Sprintf("actions[%d]", i), Code: "missing_field", Message: "label, description and identifier are required"}
		case utf8.RuneCountInString(a.Label) > maxActionLabel:
			return &Invalid{Field: fmt.Sprintf("actions[%d].label", i), Code: "invalid", Message: fmt.Sprintf("label is too long (maximum is %d characters)", maxActionLabel)}
		case utf8.RuneCountInString(a.Identifier) > maxActionIdentifier:
			return &Invalid{Field: fmt.Sprintf("actions[%d].identifier", i), Code: "invalid", Message: fmt.Sprintf("identifier is too long (maximum is %d characters)", maxActionIdentifier)}
		case utf8.RuneCountInString(a.Description) > maxActionDescription:
			return &Invalid{Field: fmt.Sprintf("actions[%d].description", i), Code: "invalid", Message: fmt.Sprintf("description is too long (maximum is %d characters)", maxActionDescription)}
		}
	}
	return nil
}

// problem says what is wrong with an annotation of a request ("" when nothing is).
func (a Annotation) problem() string {
	switch {
	case a.Path == "" || a.Message == "" || a.Level == "":
		return "path, start_line, end_line, annotation_level and message are required"
	case a.StartLine < 1 || a.EndLine < 1:
		return "start_line and end_line must be positive"
	case a.EndLine < a.StartLine:
		return "end_line must not be before start_line"
	case !annotationLevels[a.Level]:
		return "annotation_level must be notice, warning or failure"
	case (a.StartColumn != nil || a.EndColumn != nil) && a.StartLine != a.EndLine:
		return "start_column and end_column are only allowed when start_line equals end_line"
	case utf8.RuneCountInString(a.Title) > maxAnnotationTitle:
		return fmt.Sprintf("title is too long (maximum is %d characters)", maxAnnotationTitle)
	case len(a.Message) > maxAnnotationBytes || len(a.RawDetails) > maxAnnotationBytes:
		return "message and raw_details are limited to 64 kilobytes"
	}
	return ""
}

// Apply updates a run with a request body: fields given replace, annotations accumulate.
func (cr *CheckRun) Apply(in *Input, now time.Time) {
	if in.Name != nil && *in.Name != "" {
		cr.Name = *in.Name
	}
	if in.DetailsURL != nil {
		cr.DetailsURL = *in.DetailsURL
	}
	if in.ExternalID != nil {
		cr.ExternalID = *in.ExternalID
	}
	if in.StartedAt != nil {
		cr.StartedAt = *in.StartedAt
	}
	if in.Status != nil {
		cr.Status = *in.Status
	}
	if in.Conclusion != nil {
		// Giving a conclusion completes the run.
		cr.Conclusion = *in.Conclusion
		cr.Status = "completed"
	}
	if in.CompletedAt != nil {
		cr.CompletedAt = *in.CompletedAt
	} else if cr.Status == "completed" && cr.CompletedAt.IsZero() {
		cr.CompletedAt = now
	}
	if o := in.Output; o != nil {
		cr.Title = *o.Title
		cr.Summary = *o.Summary
		if o.Text != nil {
			cr.Text = *o.Text
		}
		cr.Annotations = append(cr.Annotations, o.Annotations...)
	}
	if in.Actions != nil {
		cr.Actions = append([]Action(nil), in.Actions...)
	}
	cr.Requests++
}

// Invalid is a request body GitHub refuses with 422 Validation Failed: the field, GitHub's error code
// (missing_field, invalid) and the message. Without a field it is a plain 422 with the message alone (as for a
// head_sha naming no commit).
type Invalid struct {
	Field, Code, Message string
}

// isSHA reports whether s is a full lowercase hexadecimal commit SHA.
func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
