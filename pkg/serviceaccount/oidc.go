package serviceaccount

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"math/big"
	"strings"
)

// OpenID Connect discovery, as kube-apiserver's ServiceAccountIssuerDiscovery:
// relying parties outside the cluster verify service account tokens with
// the issuer's public keys, found through the issuer's discovery document.
const (
	// DiscoveryPath is the issuer's OpenID provider configuration.
	DiscoveryPath = "/.well-known/openid-configuration"
	// JWKSPath is where the configuration points for the keys.
	JWKSPath = "/openid/v1/jwks"
)

// ProviderConfiguration is the discovery document: the subset of OpenID
// Connect Discovery 1.0 that kube-apiserver serves.
type ProviderConfiguration struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// JWK is one public key in a JSON Web Key Set (RFC 7517).
type JWK struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	// RSA
	N string `json:"n,omitempty"`
	E string `json:"e,omitempty"`
	// EC
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// JWKS is the key set document.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// Discovery is s's provider configuration, naming jwksURI for its keys.
func (s *Signer) Discovery(jwksURI string) ProviderConfiguration {
	return ProviderConfiguration{
		Issuer:        s.issuer,
		JWKSURI:       jwksURI,
		ResponseTypes: []string{"id_token"},
		SubjectTypes:  []string{"public"},
		SigningAlgs:   []string{s.method.Alg()},
	}
}

// KeySet is the public key that verifies what s signs, as a JWKS whose
// kid is the one in every token's header.
func (s *Signer) KeySet() (JWKS, error) {
	b64 := base64.RawURLEncoding.EncodeToString
	key := JWK{Use: "sig", Kid: s.kid, Alg: s.method.Alg()}
	switch pub := s.key.Public().(type) {
	case *rsa.PublicKey:
		key.Kty, key.N, key.E = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		size := (pub.Curve.Params().BitSize + 7) / 8
		x, y := make([]byte, size), make([]byte, size)
		ecdh, err := pub.Bytes()
		if err != nil {
			return JWKS{}, err
		}
		// The uncompressed point is 0x04 || X || Y, each of size bytes.
		copy(x, ecdh[1:1+size])
		copy(y, ecdh[1+size:])
		key.Kty, key.Crv, key.X, key.Y = "EC", pub.Curve.Params().Name, b64(x), b64(y)
	default:
		return JWKS{}, errors.New("serviceaccount: unsupported key type")
	}
	return JWKS{Keys: []JWK{key}}, nil
}

// JWKSURI is where an issuer served at host publishes its keys.
func JWKSURI(host string) string {
	return "https://" + strings.TrimSuffix(host, "/") + JWKSPath
}
