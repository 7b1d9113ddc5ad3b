package sigclients

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/internal/sigtools"
)

func TestCosignVerifies(t *testing.T) {
	cosign := tool(t, "COSIGN", "cosign")
	w := newWorld(t)
	home := t.TempDir()
	signedRef := w.host + "/acme/etcd-bundle:v1.0.0"
	image := w.signed(t, signedRef, "etcd")
	unsignedRef := w.host + "/acme/etcd-bundle:v1.0.1"
	w.pushBundle(t, unsignedRef, "etcd", "1.0.1")

	catalogRef := w.host + "/acme/catalog:v4.16"
	catalogImage := w.signedCatalog(t, catalogRef)

	offline := sigtools.CosignOffline(w.pubPEM)
	for _, ref := range []string{catalogRef, catalogImage} {
		for _, verb := range [][]string{{"verify"}, {"verify-attestation", "--type", "slsaprovenance1"}} {
			if out, ok := run(t, home, cosign, append(append(verb, offline...), ref)...); !ok {
				t.Fatalf("cosign %s %s refused the signed catalog image:\n%s", verb[0], ref, out)
			}
		}
	}
	for _, ref := range []string{signedRef, image} {
		out, ok := run(t, home, cosign, append(append([]string{"verify"}, offline...), ref)...)
		if !ok {
			t.Fatalf("cosign verify %s refused what catalogbot signed:\n%s", ref, out)
		}
		// cosign prints the verified payloads as JSON lines.
		if !strings.Contains(out, `"docker-manifest-digest":"`+strings.SplitN(image, "@", 2)[1]+`"`) {
			t.Errorf("cosign verify output does not show the digest:\n%s", out)
		}
		out, ok = run(t, home, cosign, append(append([]string{"verify-attestation", "--type", "slsaprovenance1"}, offline...), ref)...)
		if !ok {
			t.Fatalf("cosign verify-attestation %s refused catalogbot's provenance:\n%s", ref, out)
		}
		if !strings.Contains(out, `"payloadType":"application/vnd.in-toto+json"`) {
			t.Errorf("verify-attestation output:\n%s", out)
		}
	}

	// What cosign decoded is what catalogbot said.
	out, _ := run(t, home, cosign, append(append([]string{"verify-attestation", "--type", "slsaprovenance1"}, offline...), signedRef)...)
	var env struct{ Payload string }
	line := out[strings.Index(out, "{"):]
	if err := json.NewDecoder(strings.NewReader(line)).Decode(&env); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	body, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		PredicateType string `json:"predicateType"`
		Predicate     struct {
			BuildDefinition struct {
				ExternalParameters struct {
					Repository   string `json:"repository"`
					PullRequests []struct {
						Approvals []struct{ User string } `json:"approvals"`
					} `json:"pullRequests"`
				} `json:"externalParameters"`
			} `json:"buildDefinition"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	ext := st.Predicate.BuildDefinition.ExternalParameters
	if st.PredicateType != "https://slsa.dev/provenance/v1" || ext.Repository != "acme/operators" || ext.PullRequests[0].Approvals[0].User != "alice" {
		t.Errorf("the statement cosign verified: %s", body)
	}

	// Refusals: an unsigned image; a key that did not sign; another predicate type.
	if out, ok := run(t, home, cosign, append(append([]string{"verify"}, offline...), unsignedRef)...); ok {
		t.Errorf("cosign verify accepted an unsigned image:\n%s", out)
	} else {
		t.Logf("unsigned: %s", lastLine(out))
		if !strings.Contains(out, "no signatures found") && !strings.Contains(out, "no matching signatures") {
			t.Errorf("cosign verify refused the unsigned image for another reason:\n%s", out)
		}
	}
	if out, ok := run(t, home, cosign, append(append([]string{"verify-attestation", "--type", "slsaprovenance1"}, offline...), unsignedRef)...); ok {
		t.Errorf("cosign verify-attestation accepted an image without attestation:\n%s", out)
	} else {
		t.Logf("no attestation: %s", lastLine(out))
	}
	other := newWorld(t) // its key did not sign anything here
	otherArgs := append([]string{"verify"}, offline...)
	otherArgs[2] = other.pubPEM
	if out, ok := run(t, home, cosign, append(otherArgs, signedRef)...); ok {
		t.Errorf("cosign verify accepted another key:\n%s", out)
	} else {
		t.Logf("another key: %s", lastLine(out))
	}
	if out, ok := run(t, home, cosign, append(append([]string{"verify-attestation", "--type", "spdxjson"}, offline...), signedRef)...); ok {
		t.Errorf("cosign verify-attestation accepted a predicate type that was not attested:\n%s", out)
	} else {
		t.Logf("another predicate type: %s", lastLine(out))
	}
}
