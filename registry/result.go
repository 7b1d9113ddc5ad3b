package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Kind is the verdict on one image reference. The zero value is Unverified, the safe default.
type Kind int

const (
	// Unverified: the client could not tell (429, 5xx or network errors after retries, timeouts, an exhausted
	// budget, a refused address or scheme). The images check reports "could not verify", never "missing".
	Unverified Kind = iota
	// Exists: the registry answered HEAD with 200.
	Exists
	// Missing: the registry answered 404: the tag, digest or repository does not exist.
	Missing
	// Inaccessible: 401 or 403. The image may not exist (Docker Hub answers 401 for unknown repositories) or the
	// configured credentials may not read it.
	Inaccessible
	// Invalid: the reference does not parse; no request was sent.
	Invalid
)

func (k Kind) String() string {
	switch k {
	case Unverified:
		return "unverified"
	case Exists:
		return "exists"
	case Missing:
		return "missing"
	case Inaccessible:
		return "inaccessible"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Result is what the client found out about one reference.
type Result struct {
	Ref    string // the reference as given
	Kind   Kind
	Digest string // "sha256:…" of the manifest when known
	Status int    // the HTTP status behind the verdict, 0 when there was none
	Reason string // one short line for people; empty when the image exists

	Requests   int           // HTTP requests this result cost (0 when it came from the cache)
	Waited     time.Duration // time spent waiting between retries
	RetryAfter time.Duration // the last Retry-After the registry sent, 0 if none
}

// Error is what Manifests returns when the registry did not provide the image; Result says why, as Check would.
type Error struct{ Result Result }

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Result.Ref, e.Result.Kind, e.Result.Reason)
}

const maxReasonLen = 300

// classify turns the outcome of a remote operation into a Result, switching on status codes, never on text.
func classify(ctx context.Context, ref string, err error, st *callStats) Result {
	res := Result{Ref: ref, Kind: Unverified}
	var gaveUp string
	res.Requests, res.Waited, res.RetryAfter, gaveUp = st.snapshot()
	var te *transport.Error
	var refused *refusedError
	var reqErr *requestError
	switch {
	case st.tokenFailure() != "":
		// A token service's 404 or 401 says nothing about the image: never "missing".
		res.Reason = st.tokenFailure()
		if errors.As(err, &te) {
			res.Status = te.StatusCode
		}
	case errors.As(err, &te):
		res.Status = te.StatusCode
		switch code := te.StatusCode; {
		case code == http.StatusNotFound:
			res.Kind, res.Reason = Missing, "not found (404): the tag, digest or repository does not exist"
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			res.Kind = Inaccessible
			res.Reason = fmt.Sprintf("access denied (%d): the image does not exist or the configured credentials cannot read it", code)
		case code == http.StatusTooManyRequests:
			res.Reason = "rate limited by the registry (429)"
		case code >= 500:
			res.Reason = fmt.Sprintf("registry error (%d %s)", code, http.StatusText(code))
		default:
			res.Reason = fmt.Sprintf("unexpected answer (%d %s)", code, http.StatusText(code))
		}
		if res.Kind == Unverified && gaveUp != "" {
			res.Reason += ": " + gaveUp
		}
	case errors.As(err, &refused):
		res.Reason = refused.msg
	case errors.As(err, &reqErr):
		res.Reason = reqErr.msg
	case gaveUp != "":
		// The typed error was lost on the way up (go-containerregistry joins ping errors into plain text),
		// but the transport wrote down why it stopped.
		res.Reason = gaveUp
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Reason = "timed out"
	default:
		res.Reason = err.Error()
	}
	res.Reason = oneLine(res.Reason)
	return res
}

// oneLine keeps registry-provided text short and on one line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxReasonLen {
		s = strings.ToValidUTF8(s[:maxReasonLen], "") + "…"
	}
	return s
}
