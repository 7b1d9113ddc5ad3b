package ghapp

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
)

// A job that meets a rate limit waits for GitHub's reset as a snooze (no
// attempt spent) instead of failing an attempt; other errors pass through.
func TestWaitOutRateLimit(t *testing.T) {
	until := time.Now().Add(40 * time.Minute)
	err := WaitOutRateLimit(fmt.Errorf("creating check run: %w", &RateLimitedError{Identity: 7, Until: until}))
	var snooze *river.JobSnoozeError
	if !errors.As(err, &snooze) {
		t.Fatalf("rate limited job returned %v, want a snooze", err)
	}
	if lo, hi := 39*time.Minute, 40*time.Minute+rateLimitSpread; snooze.Duration < lo || snooze.Duration > hi {
		t.Errorf("snoozed %v, want between %v and %v", snooze.Duration, lo, hi)
	}

	err = WaitOutRateLimit(&RateLimitedError{Until: time.Now().Add(-time.Minute)})
	if !errors.As(err, &snooze) || snooze.Duration < time.Second {
		t.Errorf("a limit already lifted gave %v, want a snooze of at least a second", err)
	}

	plain := errors.New("boom")
	if got := WaitOutRateLimit(plain); got != plain {
		t.Errorf("other error became %v", got)
	}
	if WaitOutRateLimit(nil) != nil {
		t.Error("nil error became non-nil")
	}
}
