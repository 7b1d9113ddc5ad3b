// Package sigclients checks catalogbot's signatures and provenance attestations with the clients that
// verify them in the field: the cosign CLI (verify and verify-attestation, offline, with the public key)
// and opm, whose containers/image enforces a containers policy requiring sigstoreSigned with
// use-sigstore-attachments. The tools come from $COSIGN and $OPM, else $CATALOGBOT_TOOLS/bin (built by
// scripts/build-reference-tools.sh); a test whose tool is absent skips and says so.
package sigclients
