package sigtools

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/internal/opmrun"
)

// Tool finds a reference tool (from $env, else $CATALOGBOT_TOOLS/bin/name, else the user's cache) or skips
// the test, saying why.
func Tool(t testing.TB, env, name string) string {
	t.Helper()
	path, why := opmrun.Tool("", env, name)
	if why != "" {
		t.Skipf("skipping: %s", why)
	}
	return path
}

// Run runs a tool with HOME (and the configuration and caches) in home, and returns its combined output and
// whether it succeeded. It gives up after two minutes.
func Run(t testing.TB, home string, bin string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "TUF_ROOT="+filepath.Join(home, ".sigstore"),
		"DOCKER_CONFIG="+filepath.Join(home, ".docker"), "SIGSTORE_NO_CACHE=true", "COSIGN_EXPERIMENTAL=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: timed out\n%s", filepath.Base(bin), strings.Join(args, " "), out.String())
	}
	return out.String(), err == nil
}

// CosignOffline are the arguments of cosign verify and verify-attestation that check a signature with the
// public key in pubPEM and nothing else: no transparency log, no certificate, a plain-HTTP loopback
// registry.
func CosignOffline(pubPEM string) []string {
	return []string{"--key", pubPEM, "--insecure-ignore-tlog=true", "--allow-http-registry=true", "--allow-insecure-registry=true", "--offline=true"}
}

// PolicyHome writes, under a new HOME, the containers policy and registries.d file that docs/signing.md
// (the file at doc) tells a node to use, with the registry host in place of quay.io/acme (the whole
// registry, so that every repository of the test is covered) and the public key file pubPEM: images of the
// registry are accepted only when signed by the key (sigstoreSigned, matchRepoDigestOrExact), and
// signatures are looked for where cosign stores them (use-sigstore-attachments).
func PolicyHome(t testing.TB, doc, host, pubPEM string) string {
	t.Helper()
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	block := func(lang, after string) string {
		s := string(text)
		i := strings.Index(s, after)
		if i < 0 {
			t.Fatalf("%s no longer says %q", doc, after)
		}
		m := regexp.MustCompile("(?s)```" + lang + "\n(.*?)```").FindStringSubmatch(s[i:])
		if m == nil {
			t.Fatalf("%s has no %s block after %q", doc, lang, after)
		}
		out := strings.ReplaceAll(m[1], "quay.io/acme", host)
		return strings.ReplaceAll(out, "/etc/containers/catalogbot-sign.pub", pubPEM)
	}
	policy := block("json", "/etc/containers/policy.json")
	var parsed map[string]any
	if err := json.Unmarshal([]byte(policy), &parsed); err != nil {
		t.Fatalf("the policy.json of %s is not JSON: %v", doc, err)
	}
	regd := block("yaml", "registries.d/catalogbot.yaml")
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "containers")
	if err := os.MkdirAll(filepath.Join(dir, "registries.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.json"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "registries.d", "catalogbot.yaml"), []byte(regd), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// LastLine is the last non-empty line of out (a tool's error).
func LastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// MentionsSignature says whether a refusal names the signature (and not, say, a network failure).
func MentionsSignature(out string) bool {
	return strings.Contains(out, "signature") || strings.Contains(out, "Signature")
}
