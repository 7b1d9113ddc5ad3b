// Package sign signs the images catalogbot pushes and attaches their provenance, in the forms the
// ecosystem's clients verify: cosign's simple-signing signatures (the sha256-<hex>.sig image of the
// repository) and in-toto SLSA provenance v1 statements in DSSE envelopes (the sha256-<hex>.att image).
// containers/image (podman, CRI-O, opm) reads the former with use-sigstore-attachments; cosign reads both.
// Where the registry answers the OCI 1.1 referrers API, both are written once more as referrers of the
// signed manifest, under cosign's artifact types.
//
// Publish is the one order every signed push follows, in the CLI and the App: the content by digest, its
// signatures and attestation, and only then its tags, so that a tag never names unsigned content.
//
// A Key is an ECDSA P-256 private key read from a PEM file. Sign signs one pushed image by digest — an
// index and each of its platform manifests — appending to the signatures already there. Verify reads them
// back and checks them against a public key; catalogbot's audit and the tests use it.
//
// The package talks to registries only through a registry.Client (its credentials, host guard, retries and
// budget) and never logs key material.
package sign
