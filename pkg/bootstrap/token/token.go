package token

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names and keys of Kubernetes' bootstrap token Secrets.
const (
	SecretNamespace = metav1.NamespaceSystem
	SecretPrefix    = "bootstrap-token-"
	SecretType      = corev1.SecretTypeBootstrapToken

	KeyID                  = "token-id"
	KeySecret              = "token-secret"
	KeyExpiration          = "expiration"
	KeyDescription         = "description"
	KeyExtraGroups         = "auth-extra-groups"
	KeyUsageAuthentication = "usage-bootstrap-authentication"
	KeyUsageSigning        = "usage-bootstrap-signing"
)

// Identities a bootstrap token authenticates as.
const (
	// UserPrefix + the token id is the user name.
	UserPrefix = "system:bootstrap:"
	// Group is every bootstrap token's group.
	Group = "system:bootstrappers"
	// NodeGroup is the extra group of the tokens minik8s makes for nodes
	// (kubeadm's is system:bootstrappers:kubeadm:default-node-token).
	NodeGroup = "system:bootstrappers:minik8s:default-node-token"
)

// JoinPrefix starts a join token that carries the CA hash (k3s' format).
const JoinPrefix = "K10"

var (
	tokenRE      = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	extraGroupRE = regexp.MustCompile(`^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`)
	hashRE       = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Token is a bootstrap token.
type Token struct {
	ID     string // 6 characters [a-z0-9], public
	Secret string // 16 characters [a-z0-9]
}

// String is the bearer token "<id>.<secret>".
func (t Token) String() string { return t.ID + "." + t.Secret }

// SecretName is the name of the token's Secret in kube-system.
func (t Token) SecretName() string { return SecretPrefix + t.ID }

// User is the name the token authenticates as.
func (t Token) User() string { return UserPrefix + t.ID }

// Parse reads "<id>.<secret>".
func Parse(s string) (Token, error) {
	m := tokenRE.FindStringSubmatch(s)
	if m == nil {
		return Token{}, errors.New(`a bootstrap token is "<id>.<secret>": 6 and 16 characters of [a-z0-9]`)
	}
	return Token{ID: m[1], Secret: m[2]}, nil
}

// Generate makes a random token.
func Generate() (Token, error) {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	buf := make([]byte, 22)
	if _, err := rand.Read(buf); err != nil {
		return Token{}, fmt.Errorf("bootstrap token: %w", err)
	}
	out := make([]byte, len(buf))
	for i, b := range buf {
		// 256 is not a multiple of 36: reject the bytes that would bias
		// the first characters of the alphabet.
		for b >= 252 {
			var one [1]byte
			if _, err := rand.Read(one[:]); err != nil {
				return Token{}, fmt.Errorf("bootstrap token: %w", err)
			}
			b = one[0]
		}
		out[i] = alphabet[int(b)%len(alphabet)]
	}
	return Token{ID: string(out[:6]), Secret: string(out[6:])}, nil
}

// JoinToken is what a node joins with: a bootstrap token and, optionally,
// the hash of the cluster CA the node should trust.
type JoinToken struct {
	// CAHash is the lowercase hex SHA-256 of the CA certificate's DER; empty
	// when the node gets the CA another way.
	CAHash string
	Token  Token
}

// String is "K10<ca-hash>::<id>.<secret>", or "<id>.<secret>" without a hash.
func (j JoinToken) String() string {
	if j.CAHash == "" {
		return j.Token.String()
	}
	return JoinPrefix + j.CAHash + "::" + j.Token.String()
}

// ParseJoin reads "K10<ca-hash>::<id>.<secret>" or "<id>.<secret>".
func ParseJoin(s string) (JoinToken, error) {
	s = strings.TrimSpace(s)
	var j JoinToken
	if rest, ok := strings.CutPrefix(s, JoinPrefix); ok {
		hash, tok, found := strings.Cut(rest, "::")
		if !found {
			return JoinToken{}, errors.New(`a join token is "K10<ca-hash>::<id>.<secret>": no "::"`)
		}
		hash = strings.ToLower(hash)
		if !hashRE.MatchString(hash) {
			return JoinToken{}, errors.New("a join token's CA hash is 64 hex digits (SHA-256)")
		}
		j.CAHash, s = hash, tok
	}
	t, err := Parse(s)
	if err != nil {
		return JoinToken{}, err
	}
	j.Token = t
	return j, nil
}

// HashCert is the CA hash of a certificate's DER bytes.
func HashCert(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// CAHash is the CA hash of the first certificate in caPEM.
func CAHash(caPEM []byte) (string, error) {
	for rest := caPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return "", errors.New("no certificate in the CA data")
		}
		if block.Type == "CERTIFICATE" {
			return HashCert(block.Bytes), nil
		}
	}
}

// MatchesHash reports, in constant time, whether der hashes to hash.
func MatchesHash(der []byte, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashCert(der)), []byte(strings.ToLower(hash))) == 1
}

// Options describe a new token's Secret.
type Options struct {
	// TTL is how long the token is valid; 0 means it never expires.
	TTL         time.Duration
	Description string
	// ExtraGroups are added to system:bootstrappers; each must match
	// system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9].
	ExtraGroups []string
}

// ValidateExtraGroup checks one auth-extra-groups entry.
func ValidateExtraGroup(g string) error {
	if !extraGroupRE.MatchString(g) {
		return fmt.Errorf("extra group %q must match %s", g, extraGroupRE)
	}
	return nil
}

// NewSecret builds t's Secret; now is the creation time the TTL counts from.
func NewSecret(t Token, opts Options, now time.Time) (*corev1.Secret, error) {
	if _, err := Parse(t.String()); err != nil {
		return nil, err
	}
	if opts.TTL < 0 {
		return nil, fmt.Errorf("negative token TTL %s", opts.TTL)
	}
	for _, g := range opts.ExtraGroups {
		if err := ValidateExtraGroup(g); err != nil {
			return nil, err
		}
	}
	data := map[string][]byte{
		KeyID:                  []byte(t.ID),
		KeySecret:              []byte(t.Secret),
		KeyUsageAuthentication: []byte("true"),
		KeyUsageSigning:        []byte("true"),
	}
	if opts.TTL > 0 {
		data[KeyExpiration] = []byte(now.Add(opts.TTL).UTC().Format(time.RFC3339))
	}
	if opts.Description != "" {
		data[KeyDescription] = []byte(opts.Description)
	}
	if len(opts.ExtraGroups) > 0 {
		data[KeyExtraGroups] = []byte(strings.Join(opts.ExtraGroups, ","))
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: t.SecretName(), Namespace: SecretNamespace},
		Type:       SecretType,
		Data:       data,
	}, nil
}

// Verify checks that s is the Secret of t and lets t authenticate at now,
// as Kubernetes' bootstrap token authenticator does, and returns the
// token's groups: Group, then its extra groups. The error says why not;
// it must not reach the caller (a 401 tells nothing).
func Verify(s *corev1.Secret, t Token, now time.Time) ([]string, error) {
	switch {
	case s == nil:
		return nil, errors.New("no secret")
	case s.Namespace != SecretNamespace || s.Name != t.SecretName():
		return nil, fmt.Errorf("secret %s/%s is not token %s's", s.Namespace, s.Name, t.ID)
	case s.Type != SecretType:
		return nil, fmt.Errorf("secret %s has type %q, not %q", s.Name, s.Type, SecretType)
	case s.DeletionTimestamp != nil:
		return nil, fmt.Errorf("secret %s is being deleted", s.Name)
	case string(s.Data[KeyID]) != t.ID:
		return nil, fmt.Errorf("secret %s: %s does not match its name", s.Name, KeyID)
	case subtle.ConstantTimeCompare(s.Data[KeySecret], []byte(t.Secret)) != 1:
		return nil, fmt.Errorf("secret %s: wrong token secret", s.Name)
	case string(s.Data[KeyUsageAuthentication]) != "true":
		return nil, fmt.Errorf("secret %s: not for authentication (%s is not \"true\")", s.Name, KeyUsageAuthentication)
	}
	if exp, ok := s.Data[KeyExpiration]; ok {
		at, err := time.Parse(time.RFC3339, string(exp))
		if err != nil {
			return nil, fmt.Errorf("secret %s: bad %s: %w", s.Name, KeyExpiration, err)
		}
		if !now.Before(at) {
			return nil, fmt.Errorf("secret %s: expired at %s", s.Name, at.Format(time.RFC3339))
		}
	}
	groups := []string{Group}
	if extra := strings.TrimSpace(string(s.Data[KeyExtraGroups])); extra != "" {
		for _, g := range strings.Split(extra, ",") {
			g = strings.TrimSpace(g)
			if err := ValidateExtraGroup(g); err != nil {
				return nil, fmt.Errorf("secret %s: %w", s.Name, err)
			}
			if g != Group {
				groups = append(groups, g)
			}
		}
	}
	return groups, nil
}
