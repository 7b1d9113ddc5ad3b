package sign

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// maxKeyFileBytes bounds a key file; a PEM EC key is a few hundred bytes.
const maxKeyFileBytes = 64 << 10

// PEM block types of the private keys LoadKey reads.
const (
	pemPKCS8            = "PRIVATE KEY"
	pemEC               = "EC PRIVATE KEY"
	pemEncryptedSig     = "ENCRYPTED SIGSTORE PRIVATE KEY" // cosign generate-key-pair, since cosign 2.0
	pemEncryptedCosign  = "ENCRYPTED COSIGN PRIVATE KEY"   // cosign generate-key-pair, before 2.0
	pemPublicKey        = "PUBLIC KEY"
	supportedKeyFormats = "an unencrypted PKCS#8 (PRIVATE KEY) or SEC 1 (EC PRIVATE KEY) PEM, or a cosign key (ENCRYPTED SIGSTORE PRIVATE KEY) with its password"
)

// Key is a private signing key: ECDSA on P-256 with SHA-256, as cosign generate-key-pair makes. It is safe
// for concurrent use. Its String never shows the key.
type Key struct {
	sv  *signature.ECDSASignerVerifier
	pub *ecdsa.PublicKey
}

// String names the key by its public key's fingerprint, never the private key.
func (k *Key) String() string { return "ecdsa-p256 key " + k.Fingerprint() }

// LoadKey reads a PEM private key file. password is asked for only when the file is a cosign encrypted key
// (nil: such a key is refused). Errors name the file and what is wrong, never the key's bytes.
func LoadKey(path string, password func() ([]byte, error)) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	if len(data) > maxKeyFileBytes {
		return nil, fmt.Errorf("signing key %s: the file is larger than %d KiB; it is not a PEM key (want %s)", path, maxKeyFileBytes>>10, supportedKeyFormats)
	}
	k, err := ParseKey(data, password)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return k, nil
}

// ParseKey is LoadKey on the file's bytes.
func ParseKey(pemBytes []byte, password func() ([]byte, error)) (*Key, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("no PEM block found; want %s", supportedKeyFormats)
	}
	var priv crypto.PrivateKey
	var err error
	switch block.Type {
	case pemPKCS8, pemEC:
		priv, err = cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, nil)
	case pemEncryptedSig, pemEncryptedCosign:
		if password == nil {
			return nil, fmt.Errorf("the key is encrypted (%s) and no password was given", block.Type)
		}
		pw, perr := password()
		if perr != nil {
			return nil, fmt.Errorf("the key is encrypted: %w", perr)
		}
		if len(pw) == 0 {
			return nil, fmt.Errorf("the key is encrypted (%s) and the password is empty", block.Type)
		}
		priv, err = cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, func(bool) ([]byte, error) { return pw, nil })
		if err != nil {
			// The library's error for a wrong password says only that decryption failed.
			return nil, fmt.Errorf("cannot decrypt the key: the password is wrong or the file is damaged")
		}
	case pemPublicKey:
		return nil, fmt.Errorf("the file holds a public key; signing needs the private key (%s)", supportedKeyFormats)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key this accepts; want %s", block.Type, supportedKeyFormats)
	}
	if err != nil {
		// x509's errors describe the structure, never the key bytes.
		return nil, fmt.Errorf("cannot parse the %s block: %v", block.Type, err)
	}
	ec, ok := priv.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the key is %T; only ECDSA P-256 keys are accepted (cosign generate-key-pair or openssl ecparam -name prime256v1 makes one)", priv)
	}
	if ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("the key is ECDSA on %s; only P-256 is accepted (what cosign and containers/image verify by default)", ec.Curve.Params().Name)
	}
	sv, err := signature.LoadECDSASignerVerifier(ec, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	return &Key{sv: sv, pub: &ec.PublicKey}, nil
}

// PublicKeyPEM is the public key as a PEM "PUBLIC KEY" block: the file cosign verify --key and a
// containers policy's keyPath take.
func (k *Key) PublicKeyPEM() ([]byte, error) { return cryptoutils.MarshalPublicKeyToPEM(k.pub) }

// Fingerprint is the SHA-256 of the public key's DER, as "sha256:<hex>".
func (k *Key) Fingerprint() string { return fingerprint(k.pub) }

// Verifier is the key's public half.
func (k *Key) Verifier() *PublicKey { return &PublicKey{pub: k.pub} }

// PublicKey verifies what a Key signed.
type PublicKey struct {
	pub *ecdsa.PublicKey
}

// ParsePublicKey reads a PEM "PUBLIC KEY" (ECDSA P-256).
func ParsePublicKey(pemBytes []byte) (*PublicKey, error) {
	if len(pemBytes) > maxKeyFileBytes {
		return nil, fmt.Errorf("public key: larger than %d KiB", maxKeyFileBytes>>10)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("public key: only ECDSA P-256 keys are accepted")
	}
	return &PublicKey{pub: ec}, nil
}

// Fingerprint is the SHA-256 of the public key's DER, as "sha256:<hex>".
func (p *PublicKey) Fingerprint() string { return fingerprint(p.pub) }

func (p *PublicKey) verifier() (*signature.ECDSAVerifier, error) {
	return signature.LoadECDSAVerifier(p.pub, crypto.SHA256)
}

func fingerprint(pub *ecdsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "unknown"
	}
	return digestOf(der)
}
