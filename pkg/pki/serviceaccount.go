package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ensureServiceAccountKey loads sa.key or, when it does not exist,
// creates an ECDSA P-256 key there. A key that exists but cannot be used
// is an error, never silently replaced: every token signed with it would
// stop working.
func (b *Bundle) ensureServiceAccountKey() error {
	path := b.path(ServiceAccountKeyFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		key, keyPEM, err := newKey()
		if err != nil {
			return err
		}
		if err := writeFileAtomic(path, keyPEM); err != nil {
			return err
		}
		b.ServiceAccountKey = key
		return nil
	case err != nil:
		return fmt.Errorf("pki: read service account key: %w", err)
	}
	key, err := parseKeyPEM(data)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", path, err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return fmt.Errorf("pki: %s: an ECDSA key must be on P-256 (ES256)", path)
		}
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("pki: %s: an RSA key must have at least 2048 bits", path)
		}
	default:
		return fmt.Errorf("pki: %s: unsupported key type %T (want ECDSA P-256 or RSA)", path, key)
	}
	b.ServiceAccountKey = key
	return nil
}
