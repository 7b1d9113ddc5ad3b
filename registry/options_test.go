package registry

import (
	"strings"
	"testing"
	"time"
)

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		wantErr string
	}{
		{"defaults", nil, ""},
		{"zero timeout", []Option{WithTimeout(0)}, "timeout"},
		{"no attempts", []Option{WithMaxAttempts(0)}, "attempts"},
		{"too many attempts", []Option{WithMaxAttempts(11)}, "attempts"},
		{"negative retry wait", []Option{WithMaxRetryWait(-time.Second)}, "retry wait"},
		{"backoff above cap", []Option{WithRetryBackoff(time.Second, time.Millisecond)}, "backoff"},
		{"zero concurrency", []Option{WithConcurrency(0)}, "concurrency"},
		{"multi-line user agent", []Option{WithUserAgent("a\nb")}, "user agent"},
		{"nil resolver", []Option{WithResolver(nil)}, "resolver"},
		{"nil logger", []Option{WithLogger(nil)}, "logger"},
		{"allowed host with scheme", []Option{WithAllowedHosts("http://127.0.0.1:5000")}, "allowed host"},
		{"allowed IPv6 without brackets", []Option{WithAllowedHosts("::1")}, "brackets"},
		{"insecure host with bad port", []Option{WithInsecureHosts("example.com:99999")}, "port"},
		{"good hosts", []Option{WithAllowedHosts("127.0.0.1:5000", "[::1]", "[::1]:5000", "registry.internal"), WithInsecureHosts("registry.internal")}, ""},
		{"credentials without password", []Option{WithCredentials("quay.io", "u", "")}, "password"},
		{"credentials with a path", []Option{WithCredentials("quay.io/org", "u", "p")}, "credentials"},
		{"missing auth file", []Option{WithAuthFile("/nonexistent/auth.json")}, "auth file"},
		{"two errors reported", []Option{WithTimeout(0), WithConcurrency(0)}, "concurrency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("New() error = %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("New() error = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestHostSet(t *testing.T) {
	s := newHostSet([]string{"127.0.0.1:5000", "Registry.Internal", "[::1]", "[fd00::2]:443"})
	tests := []struct {
		addr, port string
		want       bool
	}{
		{"127.0.0.1:5000", "443", true},
		{"127.0.0.1:5001", "443", false},
		{"127.0.0.1", "443", false},
		{"registry.internal:8443", "443", true},
		{"REGISTRY.internal", "443", true},
		{"[::1]:5000", "443", true},
		{"[fd00::2]:443", "443", true},
		{"[fd00::2]", "443", true},
		{"[fd00::2]", "80", false},
		{"other.internal:443", "443", false},
	}
	for _, tt := range tests {
		if got := s.has(tt.addr, tt.port); got != tt.want {
			t.Errorf("has(%q, %q) = %v, want %v", tt.addr, tt.port, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"-5", 0, false},
		{"Fri, 20 Nov 2026 23:00:30 GMT", 30 * time.Second, true},
		{"Fri, 20 Nov 2026 22:00:00 GMT", 0, true},
		{"99999999999999999999", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
	if got, ok := parseRetryAfter("9223372036", now); !ok || got <= 0 {
		t.Errorf("parseRetryAfter(huge) = %v, %v, want a positive capped duration", got, ok)
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		ref string
		ok  bool
	}{
		{"quay.io/org/bundle:v1.2.3", true},
		{"quay.io/org/bundle@sha256:" + strings.Repeat("a", 64), true},
		{"docker.io/library/busybox:1", true},
		{"registry.example.com:5000/a/b/c:latest", true},
		{"quay.io/org/bundle", false},
		{"org/bundle:v1", false},
		{"busybox:1", false},
		{"quay.io/org/bundle@sha256:abc", false},
		{"quay.io/Org/bundle:v1", false},
		{"", false},
		{"quay.io/org/bundle:" + strings.Repeat("a", 2000), false},
	}
	for _, tt := range tests {
		_, err := ParseRef(tt.ref)
		if (err == nil) != tt.ok {
			t.Errorf("ParseRef(%q) error = %v, want ok %v", tt.ref, err, tt.ok)
		}
	}
}
