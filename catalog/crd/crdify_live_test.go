package crd

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// preflightConfig is the configuration OLM v1's preflight (operator-controller)
// gives crdify; scripts/record-crdify-golden.sh writes the same.
const preflightConfig = `conversion: Ignore
unhandledEnforcement: Error
validations:
- name: description
  enforcement: None
- name: enum
  enforcement: Error
  configuration:
    additionPolicy: Allow
`

// TestCrdifyLiveServedOrder runs the reference crdify ($CATALOGBOT_CRDIFY) on
// the served-version order pairs and compares its verdict and findings with
// ours: the preflight compares v1-10-0 -> v1, and the verdict flips with the
// direction, so agreeing on both pairs pins the order. The golden file keeps
// crdify's verdicts for runs without the binary.
func TestCrdifyLiveServedOrder(t *testing.T) {
	bin := os.Getenv("CATALOGBOT_CRDIFY")
	if bin == "" {
		t.Skip("set CATALOGBOT_CRDIFY to a crdify v0.6.0 binary to compare with the reference")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "preflight.yaml")
	if err := os.WriteFile(cfg, []byte(preflightConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	var pairs []crdPair
	for _, p := range generatedPairs() {
		if strings.HasPrefix(p.name, "served-order-") {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) != 2 {
		t.Fatalf("%d served-order pairs, want both directions", len(pairs))
	}
	writePairs(t, dir, pairs)
	verdicts := map[string]bool{}
	for _, p := range pairs {
		d := filepath.Join(dir, p.name)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// crdify exits 1 when it finds a failure; its JSON report is what counts.
		out, _ := exec.CommandContext(ctx, bin, "--config", cfg, "-o", "json",
			"file://"+filepath.Join(d, "old.json"), "file://"+filepath.Join(d, "new.json")).Output()
		cancel()
		var r crdifyResults
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: crdify output %q: %v", p.name, out, err)
		}
		want, got := verdictLine(p.name, crdifyKeys(r)), ourLine(t, p)
		if got != want {
			t.Errorf("differs from crdify:\n  ours:   %s\n  crdify: %s", got, want)
		}
		verdicts[strings.Split(want, "\t")[1]] = true
	}
	if !verdicts["safe"] || !verdicts["unsafe"] {
		t.Errorf("crdify's verdicts %v: the pairs should flip it both ways", verdicts)
	}
}
