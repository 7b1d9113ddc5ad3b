package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/internal/sigtools"
	"github.com/catalogbot/catalogbot/sign"
)

// The images the App pushes after a merge, checked by the clients that verify them in the field: a merged
// bundle becomes a signed bundle image and the commit's catalog a signed, attested multi-platform catalog
// image; opm, under the containers policy of docs/signing.md (sigstoreSigned with the App's public key,
// use-sigstore-attachments), renders both and refuses the same content unsigned (copied without its
// signatures) or under a tag the App did not sign; the cosign CLI verifies the signature and the SLSA
// provenance attestation of each offline with the public key and refuses the unsigned copy. Against a
// registry without the referrers API and one with it (the App then also attaches both as OCI 1.1 referrers,
// which cosign's OCI 1.1 lookup reads). opm and cosign come from $OPM and $COSIGN, else
// $CATALOGBOT_TOOLS/bin; the test skips when either is absent.
func TestAppSignedImagesVerifiedByOpmAndCosign(t *testing.T) {
	opm := sigtools.Tool(t, "OPM", "opm")
	cosign := sigtools.Tool(t, "COSIGN", "cosign")
	for _, mode := range []struct {
		name      string
		referrers bool
	}{{"tag scheme", false}, {"referrers API", true}} {
		t.Run(mode.name, func(t *testing.T) {
			e := newRebuildEnv(t, backendNames[0], bundleImagePolicy)
			e.reg.referrers.Store(mode.referrers)
			keyFile, _ := writeSigningKey(t)
			e.cfg.RebuildSignKeyFile = keyFile
			pubFile := publicKeyFile(t, keyFile)
			e.start()
			before, sha := e.commitMain(e2eBundle("1.1.0", "registry+v1"), "merge #7: etcd 1.1.0")
			e.deliverPush(before, sha)
			if run := e.waitRun(jobs.BundleImageCheckRunName, sha); run.Conclusion != "success" || !strings.Contains(run.Summary, "signed, provenance attested") {
				t.Fatalf("bundle-image run: %s %q\n%s", run.Conclusion, run.Title, run.Summary)
			}
			if img := e.waitImageRun(sha); img.Conclusion != "success" || !strings.Contains(img.Summary, "provenance attested") {
				t.Fatalf("catalog image run: %s %q\n%s", img.Conclusion, img.Title, img.Summary)
			}
			host := e.reg.host
			bundleRef := host + "/acme/etcd-bundle:v1.1.0"
			catalogRefs := []string{host + "/acme/catalog:latest", host + "/acme/catalog:" + sha}

			home := sigtools.PolicyHome(t, filepath.Join("..", "docs", "signing.md"), host, pubFile)
			render := func(ref string) (string, bool) {
				return sigtools.Run(t, home, opm, "render", ref, "--use-http", "-o", "json")
			}
			if out, ok := render(bundleRef); !ok || !strings.Contains(out, `"schema": "olm.bundle"`) {
				t.Fatalf("opm render refused the App's signed bundle image %s:\n%s", bundleRef, out)
			}
			for _, ref := range catalogRefs {
				if out, ok := render(ref); !ok || !strings.Contains(out, `"schema": "olm.package"`) {
					t.Fatalf("opm render refused the App's signed catalog image %s:\n%s", ref, out)
				}
			}
			unsigned := host + "/acme/etcd-bundle-copy:v1.1.0"
			copyImage(t, e, bundleRef, unsigned)
			retagged := host + "/acme/catalog:retagged"
			copyImage(t, e, catalogRefs[0], retagged)
			for what, ref := range map[string]string{"unsigned": unsigned, "re-tagged": retagged} {
				out, ok := render(ref)
				if ok {
					t.Errorf("opm render accepted the %s image %s:\n%s", what, ref, out)
					continue
				}
				t.Logf("opm, %s: %s", what, sigtools.LastLine(out))
				if !sigtools.MentionsSignature(out) {
					t.Errorf("opm render refused the %s image %s, but not for its signature:\n%s", what, ref, out)
				}
			}

			cosignHome := t.TempDir()
			offline := sigtools.CosignOffline(pubFile)
			for _, ref := range append([]string{bundleRef}, catalogRefs...) {
				for _, verb := range [][]string{{"verify"}, {"verify-attestation", "--type", "slsaprovenance1"}} {
					if out, ok := sigtools.Run(t, cosignHome, cosign, append(append(verb, offline...), ref)...); !ok {
						t.Fatalf("cosign %s refused the App's image %s:\n%s", verb[0], ref, out)
					}
				}
			}
			for _, verb := range [][]string{{"verify"}, {"verify-attestation", "--type", "slsaprovenance1"}} {
				if out, ok := sigtools.Run(t, cosignHome, cosign, append(append(verb, offline...), unsigned)...); ok {
					t.Errorf("cosign %s accepted the unsigned copy %s:\n%s", verb[0], unsigned, out)
				} else {
					t.Logf("cosign %s, unsigned: %s", verb[0], sigtools.LastLine(out))
				}
			}
			if mode.referrers {
				// With the .sig tag gone, cosign's OCI 1.1 lookup finds the signature among the referrers only.
				d := headDigest(t, e, bundleRef)
				deleteTag(t, e, host+"/acme/etcd-bundle:sha256-"+strings.TrimPrefix(d, "sha256:")+".sig")
				if out, ok := sigtools.Run(t, cosignHome, cosign, append(append([]string{"verify"}, offline...), bundleRef)...); ok {
					t.Fatalf("cosign verify accepted %s without its .sig tag and without OCI 1.1 lookup:\n%s", bundleRef, out)
				}
				if out, ok := sigtools.Run(t, cosignHome, cosign, append(append([]string{"verify", "--experimental-oci11=true"}, offline...), bundleRef)...); !ok {
					t.Fatalf("cosign verify --experimental-oci11 did not find the App's signature among the referrers of %s:\n%s", bundleRef, out)
				}
			}
		})
	}
}

// publicKeyFile writes the public key of the PEM private key file next to it, as an operator hands it out.
func publicKeyFile(t *testing.T, keyFile string) string {
	t.Helper()
	k, err := sign.LoadKey(keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(filepath.Dir(keyFile), "sign.pub")
	if err := os.WriteFile(file, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// copyImage copies the image or index at src to the tag dst, without its signatures.
func copyImage(t *testing.T, e *rebuildEnv, src, dst string) {
	t.Helper()
	ctx := context.Background()
	reg := e.verifier()
	from, err := reg.Reference(src)
	if err != nil {
		t.Fatal(err)
	}
	to, err := reg.Reference(dst)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(from, reg.RemoteOptions(ctx)...)
	if err != nil {
		t.Fatal(err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err == nil {
			err = remote.WriteIndex(to, idx, reg.RemoteOptions(ctx)...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	img, err := desc.Image()
	if err == nil {
		err = remote.Write(to, img, reg.RemoteOptions(ctx)...)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func headDigest(t *testing.T, e *rebuildEnv, ref string) string {
	t.Helper()
	reg := e.verifier()
	r, err := reg.Reference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(r, reg.RemoteOptions(context.Background())...)
	if err != nil {
		t.Fatal(err)
	}
	return desc.Digest.String()
}

func deleteTag(t *testing.T, e *rebuildEnv, ref string) {
	t.Helper()
	reg := e.verifier()
	r, err := reg.Reference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Delete(r, reg.RemoteOptions(context.Background())...); err != nil {
		t.Fatal(err)
	}
}
