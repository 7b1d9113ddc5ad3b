package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile checks the properties the deploy files rely on; no daemon
// is needed (deploy/imagebuild's tests build a real image without one).
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	stages := regexp.MustCompile(`(?m)^FROM `).FindAllStringIndex(df, -1)
	if len(stages) < 2 {
		t.Fatalf("got %d stages, want a multi-stage build", len(stages))
	}
	final := df[stages[len(stages)-1][0]:]
	for _, want := range []string{
		"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w -X main.version=${VERSION}`, "./cmd/catalogbot",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile does not contain %q", want)
		}
	}
	for _, want := range []string{
		"/etc/ssl/certs/ca-certificates.crt",
		"USER 65532:65532",
		`ENTRYPOINT ["/usr/local/bin/catalogbot"]`,
		"org.opencontainers.image.version",
		"org.opencontainers.image.revision",
	} {
		if !strings.Contains(final, want) {
			t.Errorf("the final stage does not contain %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^RUN .*\b(apt-get|apk) .*\bgit\b`).MatchString(df) {
		t.Errorf("the image installs git; the App fetches with go-git")
	}
	if regexp.MustCompile(`(?m)^USER (root|0)\b`).MatchString(final) {
		t.Errorf("the final stage runs as root")
	}
}
