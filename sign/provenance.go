package sign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Predicate and payload types of the attestation.
const (
	// SLSAProvenanceV1 is the predicate type (cosign verify-attestation --type slsaprovenance1).
	SLSAProvenanceV1 = "https://slsa.dev/provenance/v1"
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
)

// Build types: what was built, documented in docs/signing.md.
const (
	BuildTypeBundle  = "https://github.com/catalogbot/catalogbot/blob/main/docs/signing.md#bundle-image-v1"
	BuildTypeCatalog = "https://github.com/catalogbot/catalogbot/blob/main/docs/signing.md#catalog-image-v1"
)

// DefaultBuilderID names catalogbot as the builder when the caller gives none.
const DefaultBuilderID = "https://github.com/catalogbot/catalogbot"

// Provenance is what catalogbot states about how an image was built. The App fills it with what it
// recorded itself (never with what a pull request claims); the CLI with what it was told by flags or git.
type Provenance struct {
	BuildType string `json:"-"` // BuildTypeBundle or BuildTypeCatalog
	// Repository is the source repository, as owner/name on GitHub or a URL.
	Repository string `json:"repository"`
	// Ref is the branch the commit is on (refs/heads/main), when known.
	Ref string `json:"ref,omitempty"`
	// Commit is the default-branch commit the image was built from (40 hex).
	Commit string `json:"commit,omitempty"`
	// Path is the directory built (a bundle directory or a catalog root), relative to the repository.
	Path         string        `json:"path,omitempty"`
	PullRequests []PullRequest `json:"pullRequests,omitempty"`
	CheckRuns    []CheckRun    `json:"checkRuns,omitempty"`
	// BaseImage is the base the catalog image was built on, pinned by digest (repo@sha256:…).
	BaseImage string `json:"-"`
	// Builder identifies catalogbot (DefaultBuilderID when empty) and its version.
	BuilderID      string `json:"-"`
	BuilderVersion string `json:"-"`
	// InvocationID names this build (a job or delivery id), when there is one.
	InvocationID string    `json:"-"`
	StartedOn    time.Time `json:"-"`
	FinishedOn   time.Time `json:"-"`
}

// PullRequest is a pull request merged into the commit, with who approved which head.
type PullRequest struct {
	Number      int        `json:"number"`
	HeadSHA     string     `json:"headSha,omitempty"`
	MergeCommit string     `json:"mergeCommit,omitempty"`
	Approvals   []Approval `json:"approvals,omitempty"`
}

// Approval is one approving review (or /approve) and the head SHA it approved.
type Approval struct {
	User    string    `json:"user"`
	HeadSHA string    `json:"headSha"`
	At      time.Time `json:"at,omitzero"`
}

// CheckRun is a check run on the merged head and its conclusion.
type CheckRun struct {
	Name       string `json:"name"`
	HeadSHA    string `json:"headSha,omitempty"`
	Conclusion string `json:"conclusion"`
}

// Bounds of a statement, so that an attestation stays small and a hostile one is not read without end.
const (
	maxPullRequests = 100
	maxApprovals    = 100
	maxCheckRuns    = 500
	maxFieldLen     = 1024
)

// validate checks what the statement will say.
func (p *Provenance) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if p.BuildType == "" {
		bad("provenance: the build type is empty")
	}
	if p.Repository == "" {
		bad("provenance: the repository is empty")
	}
	if p.Commit != "" && !isHex(p.Commit, 40) && !isHex(p.Commit, 64) {
		bad("provenance: commit %q is not a full hex commit id", p.Commit)
	}
	if len(p.PullRequests) > maxPullRequests {
		bad("provenance: %d pull requests; at most %d are stated", len(p.PullRequests), maxPullRequests)
	}
	for _, pr := range p.PullRequests {
		if len(pr.Approvals) > maxApprovals {
			bad("provenance: pull request #%d has %d approvals; at most %d are stated", pr.Number, len(pr.Approvals), maxApprovals)
		}
	}
	if len(p.CheckRuns) > maxCheckRuns {
		bad("provenance: %d check runs; at most %d are stated", len(p.CheckRuns), maxCheckRuns)
	}
	for _, s := range []string{p.Repository, p.Ref, p.Path, p.BaseImage, p.BuilderID, p.BuilderVersion, p.InvocationID} {
		if len(s) > maxFieldLen {
			bad("provenance: a field is %d characters long; at most %d", len(s), maxFieldLen)
		}
	}
	if p.BaseImage != "" {
		if _, err := name.NewDigest(p.BaseImage, name.StrictValidation); err != nil {
			bad("provenance: base image %q is not pinned by digest: %v", p.BaseImage, err)
		}
	}
	return errors.Join(errs...)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sourceURI is the repository as a URI: owner/name means GitHub.
func (p *Provenance) sourceURI() string {
	repo := p.Repository
	if !strings.Contains(repo, "://") {
		repo = "https://github.com/" + repo
	}
	uri := "git+" + repo
	if p.Ref != "" {
		uri += "@" + p.Ref
	}
	return uri
}

// statement is the in-toto statement v1 with the SLSA provenance v1 predicate about subjects, as JSON.
func (p *Provenance) statement(subjects []name.Digest) ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	ext, err := toStruct(p)
	if err != nil {
		return nil, err
	}
	var deps []*intoto.ResourceDescriptor
	if p.Commit != "" {
		deps = append(deps, &intoto.ResourceDescriptor{Uri: p.sourceURI(), Digest: map[string]string{"gitCommit": p.Commit}})
	}
	if p.BaseImage != "" {
		d, _ := name.NewDigest(p.BaseImage, name.StrictValidation)
		alg, hexd, _ := strings.Cut(d.DigestStr(), ":")
		deps = append(deps, &intoto.ResourceDescriptor{Uri: "oci://" + d.Context().Name(), Digest: map[string]string{alg: hexd}})
	}
	builderID := p.BuilderID
	if builderID == "" {
		builderID = DefaultBuilderID
	}
	run := &slsa.RunDetails{Builder: &slsa.Builder{Id: builderID}}
	if p.BuilderVersion != "" {
		run.Builder.Version = map[string]string{"catalogbot": p.BuilderVersion}
	}
	if p.InvocationID != "" || !p.StartedOn.IsZero() || !p.FinishedOn.IsZero() {
		run.Metadata = &slsa.BuildMetadata{InvocationId: p.InvocationID}
		if !p.StartedOn.IsZero() {
			run.Metadata.StartedOn = timestamppb.New(p.StartedOn)
		}
		if !p.FinishedOn.IsZero() {
			run.Metadata.FinishedOn = timestamppb.New(p.FinishedOn)
		}
	}
	pred := &slsa.Provenance{
		BuildDefinition: &slsa.BuildDefinition{BuildType: p.BuildType, ExternalParameters: ext, ResolvedDependencies: deps},
		RunDetails:      run,
	}
	if err := pred.Validate(); err != nil {
		return nil, fmt.Errorf("provenance: %w", err)
	}
	predStruct, err := toStructProto(pred)
	if err != nil {
		return nil, err
	}
	st := &intoto.Statement{Type: intoto.StatementTypeUri, PredicateType: SLSAProvenanceV1, Predicate: predStruct}
	for _, s := range subjects {
		alg, hexd, _ := strings.Cut(s.DigestStr(), ":")
		st.Subject = append(st.Subject, &intoto.ResourceDescriptor{Name: s.Context().Name(), Digest: map[string]string{alg: hexd}})
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("provenance statement: %w", err)
	}
	return protojson.Marshal(st)
}

// toStruct turns a JSON-marshalable value into a protobuf Struct.
func toStruct(v any) (*structpb.Struct, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, err
	}
	return s, nil
}

func toStructProto(m *slsa.Provenance) (*structpb.Struct, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Statement is a verified attestation's content, as Verify returns it.
type Statement struct {
	PredicateType string
	Subjects      []string // repository@sha256:… of each subject
	Provenance    Provenance
}

// parseStatement reads an in-toto statement v1 with a SLSA provenance v1 predicate back into a Provenance.
func parseStatement(b []byte) (*Statement, error) {
	var st intoto.Statement
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("the statement is not an in-toto statement: %v", err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("the statement: %w", err)
	}
	out := &Statement{PredicateType: st.GetPredicateType()}
	for _, s := range st.GetSubject() {
		out.Subjects = append(out.Subjects, s.GetName()+"@sha256:"+s.GetDigest()["sha256"])
	}
	if st.GetPredicateType() != SLSAProvenanceV1 {
		return out, nil
	}
	pb, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, err
	}
	var pred slsa.Provenance
	if err := protojson.Unmarshal(pb, &pred); err != nil {
		return nil, fmt.Errorf("the SLSA provenance predicate: %v", err)
	}
	if err := pred.Validate(); err != nil {
		return nil, fmt.Errorf("the SLSA provenance predicate: %w", err)
	}
	bd, rd := pred.GetBuildDefinition(), pred.GetRunDetails()
	eb, err := protojson.Marshal(bd.GetExternalParameters())
	if err != nil {
		return nil, err
	}
	p := &out.Provenance
	if err := json.NewDecoder(bytes.NewReader(eb)).Decode(p); err != nil {
		return nil, fmt.Errorf("the provenance's externalParameters: %v", err)
	}
	p.BuildType = bd.GetBuildType()
	for _, dep := range bd.GetResolvedDependencies() {
		if strings.HasPrefix(dep.GetUri(), "oci://") {
			p.BaseImage = strings.TrimPrefix(dep.GetUri(), "oci://") + "@sha256:" + dep.GetDigest()["sha256"]
		}
	}
	p.BuilderID = rd.GetBuilder().GetId()
	p.BuilderVersion = rd.GetBuilder().GetVersion()["catalogbot"]
	if md := rd.GetMetadata(); md != nil {
		p.InvocationID = md.GetInvocationId()
		if md.GetStartedOn() != nil {
			p.StartedOn = md.GetStartedOn().AsTime()
		}
		if md.GetFinishedOn() != nil {
			p.FinishedOn = md.GetFinishedOn().AsTime()
		}
	}
	return out, nil
}
