package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// Ref names a Kubernetes object in the kubernetes.io claim.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// KubernetesClaims is the private kubernetes.io claim, as Kubernetes
// writes it.
type KubernetesClaims struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount Ref              `json:"serviceaccount"`
	Pod            *Ref             `json:"pod,omitempty"`
	Secret         *Ref             `json:"secret,omitempty"`
	Node           *Ref             `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

// Claims are a token's claims: the registered ones and kubernetes.io.
type Claims struct {
	jwt.RegisteredClaims
	Kubernetes *KubernetesClaims `json:"kubernetes.io,omitempty"`
}

// Bound is what a token is issued for: the service account and at most
// one bound object (a pod, with the node it runs on when known; a
// Secret; or a Node).
type Bound struct {
	Namespace, Name, UID string
	Pod, Secret, Node    *Ref
}

// NewClaims are the claims of a token for b, valid from now for
// lifetime, for audiences.
func NewClaims(b Bound, audiences []string, now time.Time, lifetime time.Duration) (*Claims, error) {
	if b.Secret != nil && (b.Pod != nil || b.Node != nil) {
		return nil, errors.New("a token can only be bound to one object")
	}
	kc := &KubernetesClaims{Namespace: b.Namespace, ServiceAccount: Ref{Name: b.Name, UID: b.UID}}
	switch {
	case b.Pod != nil:
		kc.Pod = b.Pod
		kc.Node = b.Node // the pod's node, when known
	case b.Secret != nil:
		kc.Secret = b.Secret
	case b.Node != nil:
		kc.Node = b.Node
	}
	now = now.Truncate(time.Second)
	return &Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   UserName(b.Namespace, b.Name),
			Audience:  jwt.ClaimStrings(slices.Clone(audiences)),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(lifetime)),
			ID:        string(uuid.NewUUID()),
		},
		Kubernetes: kc,
	}, nil
}

// Signer issues tokens with a private key.
type Signer struct {
	issuer string
	key    crypto.Signer
	method jwt.SigningMethod
	kid    string
}

// NewSigner signs tokens of issuer with key: ES256 for an ECDSA P-256
// key, RS256 for an RSA key.
func NewSigner(issuer string, key crypto.Signer) (*Signer, error) {
	if issuer == "" {
		return nil, errors.New("serviceaccount: an issuer is required")
	}
	method, err := methodFor(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	return &Signer{issuer: issuer, key: key, method: method, kid: kid}, nil
}

// Issuer is the iss claim of the tokens s signs.
func (s *Signer) Issuer() string { return s.issuer }

// PublicKey verifies what s signs.
func (s *Signer) PublicKey() crypto.PublicKey { return s.key.Public() }

// Sign sets c's issuer and signs it.
func (s *Signer) Sign(c *Claims) (string, error) {
	c.Issuer = s.issuer
	t := jwt.NewWithClaims(s.method, c)
	t.Header["kid"] = s.kid
	return t.SignedString(s.key)
}

func methodFor(pub crypto.PublicKey) (jwt.SigningMethod, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, errors.New("serviceaccount: ECDSA keys must be on P-256")
		}
		return jwt.SigningMethodES256, nil
	case *rsa.PublicKey:
		return jwt.SigningMethodRS256, nil
	}
	return nil, fmt.Errorf("serviceaccount: unsupported key type %T", pub)
}

// KeyID is the kid header of the tokens signed by pub's key, as
// Kubernetes derives it: the unpadded base64url SHA-256 of the DER
// public key.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("serviceaccount: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// ErrNotOurs says a bearer token is not a service account token of this
// issuer (not a JWT, or another issuer's): another authenticator's.
var ErrNotOurs = errors.New("not a service account token of this issuer")

// Leeway is the clock skew tolerated on exp, nbf and iat (go-jose's,
// which Kubernetes uses).
const Leeway = time.Minute

// Verifier checks tokens of one issuer.
type Verifier struct {
	issuer    string
	audiences []string
	keys      []jwt.VerificationKey
	now       func() time.Time
}

// NewVerifier checks tokens of issuer signed by one of keys and meant for
// one of audiences (none: the issuer, as kube-apiserver's default
// --api-audiences). now nil is time.Now.
func NewVerifier(issuer string, audiences []string, now func() time.Time, keys ...crypto.PublicKey) (*Verifier, error) {
	if issuer == "" || len(keys) == 0 {
		return nil, errors.New("serviceaccount: a verifier needs an issuer and a key")
	}
	var vkeys []jwt.VerificationKey
	for _, k := range keys {
		if _, err := methodFor(k); err != nil {
			return nil, err
		}
		vkeys = append(vkeys, k)
	}
	if len(audiences) == 0 {
		audiences = []string{issuer}
	}
	if now == nil {
		now = time.Now
	}
	return &Verifier{issuer: issuer, audiences: slices.Clone(audiences), keys: vkeys, now: now}, nil
}

// Verify returns the claims of token once its signature, issuer,
// audience and validity window are checked. A token that is not a JWT of
// this issuer fails with ErrNotOurs; the objects it is bound to are left
// to the caller.
func (v *Verifier) Verify(token string) (*Claims, error) {
	if strings.Count(token, ".") != 2 {
		return nil, ErrNotOurs
	}
	var unverified Claims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &unverified); err != nil || unverified.Issuer != v.issuer {
		return nil, ErrNotOurs
	}
	var c Claims
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		return jwt.VerificationKeySet{Keys: v.keys}, nil
	}, jwt.WithValidMethods([]string{"ES256", "RS256"}), jwt.WithoutClaimsValidation())
	if err != nil {
		if errors.Is(err, jwt.ErrTokenSignatureInvalid) {
			return nil, errors.New("invalid service account token: signature is invalid")
		}
		return nil, fmt.Errorf("invalid service account token: %w", err)
	}
	if c.Issuer != v.issuer {
		return nil, ErrNotOurs
	}
	now := v.now()
	switch {
	case c.ExpiresAt == nil:
		return nil, errors.New("service account token has no expiry")
	case now.After(c.ExpiresAt.Add(Leeway)):
		return nil, errors.New("service account token has expired")
	case c.NotBefore != nil && now.Add(Leeway).Before(c.NotBefore.Time):
		return nil, errors.New("service account token is not valid yet")
	case c.IssuedAt != nil && now.Add(Leeway).Before(c.IssuedAt.Time):
		return nil, errors.New("service account token is issued in the future")
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(v.audiences, a) }) {
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(c.Audience), v.audiences)
	}
	k := c.Kubernetes
	if k == nil || k.Namespace == "" || k.ServiceAccount.Name == "" || k.ServiceAccount.UID == "" {
		return nil, errors.New("service account token has no kubernetes.io claims")
	}
	if c.Subject != UserName(k.Namespace, k.ServiceAccount.Name) {
		return nil, errors.New("service account token: sub does not match the kubernetes.io claims")
	}
	return &c, nil
}
