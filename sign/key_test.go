package sign

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadKeyFormats(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(priv)
	sec1, _ := x509.MarshalECPrivateKey(priv)
	// cosign generate-key-pair's format (scrypt + secretbox around PKCS#8), made once for these tests with
	// cryptoutils.GeneratePEMEncodedECDSAKeyPair and the password "s3cret": a test key, signing nothing.
	encrypted, err := os.ReadFile(filepath.Join("testdata", "cosign-encrypted.key"))
	if err != nil {
		t.Fatal(err)
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384der, _ := x509.MarshalPKCS8PrivateKey(p384)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsader, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	pubder, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	pw := func(s string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(s), nil } }

	for _, tc := range []struct {
		name    string
		pem     []byte
		pw      func() ([]byte, error)
		wantErr string
	}{
		{"pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil, ""},
		{"sec1", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}), nil, ""},
		{"cosign encrypted", encrypted, pw("s3cret"), ""},
		{"cosign encrypted, wrong password", encrypted, pw("wrong"), "password is wrong"},
		{"cosign encrypted, no password", encrypted, nil, "no password was given"},
		{"cosign encrypted, empty password", encrypted, pw(""), "password is empty"},
		{"P-384", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p384der}), nil, "only P-256"},
		{"RSA", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsader}), nil, "only ECDSA P-256"},
		{"public key", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubder}), nil, "holds a public key"},
		{"not PEM", []byte("hello"), nil, "no PEM block"},
		{"damaged", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8[:20]}), nil, "cannot parse"},
		{"certificate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}), nil, "not a private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k.pem")
			if err := os.WriteFile(path, tc.pem, 0o600); err != nil {
				t.Fatal(err)
			}
			k, err := LoadKey(path, tc.pw)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := k.PublicKeyPEM(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want one naming %s and saying %q", err, path, tc.wantErr)
			}
			// No key material in the message: no line of the PEM body appears in it.
			for _, line := range strings.Split(string(tc.pem), "\n") {
				if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
					t.Errorf("the error shows the key: %v", err)
				}
			}
		})
	}
}

func TestLoadKeyBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.pem")
	if err := os.WriteFile(path, make([]byte, maxKeyFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(path, nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("err = %v", err)
	}
	if _, err := LoadKey(filepath.Join(t.TempDir(), "missing.pem"), nil); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("err = %v", err)
	}
}

func TestKeyStringShowsNoSecret(t *testing.T) {
	k, path := newKey(t)
	data, _ := os.ReadFile(path)
	block, _ := pem.Decode(data)
	if s := k.String(); !strings.HasPrefix(s, "ecdsa-p256 key sha256:") || strings.Contains(s, string(block.Bytes)) {
		t.Errorf("String() = %q", s)
	}
	pubPEM, err := k.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(pubPEM)
	if err != nil || pub.Fingerprint() != k.Fingerprint() {
		t.Errorf("public key round trip: %v, %s != %s", err, pub.Fingerprint(), k.Fingerprint())
	}
}
