package pki

import (
	"cmp"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// File names under Config.Dir.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "apiserver.crt"
	ServingKeyFile  = "apiserver.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
	TokensFile      = "tokens.csv"
	// ServiceAccountKeyFile signs service account tokens (serviceaccount.go).
	ServiceAccountKeyFile = "sa.key"
)

// The admin identity, both in its client certificate and in its token row.
const (
	AdminUser    = "minik8s-admin"
	MastersGroup = "system:masters"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// renewBefore: leaf certificates this close to expiry are re-issued by Ensure.
	renewBefore = 30 * 24 * time.Hour
	// backdate tolerates clocks that are a little behind ours.
	backdate = time.Hour
)

// now is the clock; tests move it.
var now = time.Now

// Config says where the PKI lives and which names the apiserver answers to.
type Config struct {
	Dir string // e.g. <data-dir>/pki
	// Hosts are DNS names and IPs for the serving certificate. localhost,
	// 127.0.0.1, ::1 and the machine hostname are always added.
	Hosts []string
}

// Bundle is the loaded PKI.
type Bundle struct {
	CAPEM                     []byte
	CAPool                    *x509.CertPool
	Serving                   tls.Certificate // apiserver serving cert signed by the CA, served with the CA as its chain
	AdminCert                 tls.Certificate // client cert CN=minik8s-admin O=system:masters signed by the CA
	AdminCertPEM, AdminKeyPEM []byte
	AdminToken                string // random bearer token for the admin
	TokenFile                 string // path of the static token file
	// ServiceAccountKey signs service account tokens (ECDSA P-256, or an
	// RSA key placed in sa.key by hand); kept forever once created.
	ServiceAccountKey crypto.Signer
	// FrontProxy is what the aggregation layer proxies with
	// (frontproxy.go): its own CA and the client certificate it signed.
	FrontProxy FrontProxy

	dir string
	// caName starts the CA's common name (default "minik8s-ca").
	caName string
	caCert *x509.Certificate
	caKey  crypto.Signer
	mu     sync.Mutex // serialises AddToken
}

// Ensure creates the CA, the serving certificate, the admin client
// certificate, the admin token, the service account signing key and the
// front proxy's CA and client certificate on
// first call and loads them on later
// calls. The CA is kept forever; the serving certificate is re-issued by the
// same CA when the wanted hosts include a name it lacks or it is within 30
// days of expiry; the admin certificate is re-signed (same key) within 30
// days of expiry. Ensure is meant to run once at server start-up, by one
// process at a time.
func Ensure(cfg Config) (*Bundle, error) {
	if cfg.Dir == "" {
		return nil, errors.New("pki: Config.Dir is empty")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: create %s: %w", cfg.Dir, err)
	}
	b := &Bundle{dir: cfg.Dir, TokenFile: filepath.Join(cfg.Dir, TokensFile)}
	if err := b.ensureCA(); err != nil {
		return nil, err
	}
	dns, ips := wantedHosts(cfg.Hosts)
	if err := b.ensureServing(dns, ips); err != nil {
		return nil, err
	}
	if err := b.ensureAdmin(); err != nil {
		return nil, err
	}
	if err := b.ensureAdminToken(); err != nil {
		return nil, err
	}
	if err := b.ensureServiceAccountKey(); err != nil {
		return nil, err
	}
	if err := b.ensureFrontProxy(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Bundle) path(name string) string { return filepath.Join(b.dir, name) }

// ensureCA loads the CA or, when ca.crt does not exist, creates one. Since
// ca.key is written before ca.crt, a missing ca.crt means nothing was ever
// signed by a key that might lie around, so a fresh CA is safe; a present
// ca.crt without a matching key is an error, never silently replaced.
func (b *Bundle) ensureCA() error {
	certPEM, err := os.ReadFile(b.path(CACertFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return b.createCA()
	case err != nil:
		return fmt.Errorf("pki: read CA certificate: %w", err)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", b.path(CACertFile), err)
	}
	if !cert.IsCA {
		return fmt.Errorf("pki: %s is not a CA certificate", b.path(CACertFile))
	}
	if t := now(); t.After(cert.NotAfter) {
		return fmt.Errorf("pki: CA certificate %s expired at %s", b.path(CACertFile), cert.NotAfter.Format(time.RFC3339))
	}
	keyPEM, err := os.ReadFile(b.path(CAKeyFile))
	if err != nil {
		return fmt.Errorf("pki: read CA key (the CA is never regenerated while %s exists): %w", CACertFile, err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", b.path(CAKeyFile), err)
	}
	if !publicKeyMatches(cert, key) {
		return fmt.Errorf("pki: %s does not match %s", b.path(CAKeyFile), b.path(CACertFile))
	}
	b.setCA(cert, key, certPEM)
	return nil
}

func (b *Bundle) createCA() error {
	key, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	suffix, err := randomHex(4)
	if err != nil {
		return err
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	t := now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The random suffix gives every cluster's CA a distinct subject, so
		// CAs (and the acceptable-CA names a server sends) of different
		// clusters can be told apart.
		Subject:               pkix.Name{CommonName: cmp.Or(b.caName, "minik8s-ca") + "-" + suffix, Organization: []string{"minik8s"}},
		NotBefore:             t.Add(-backdate),
		NotAfter:              t.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return fmt.Errorf("pki: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	certPEM := encodeCert(der)
	if err := writeFileAtomic(b.path(CAKeyFile), keyPEM); err != nil {
		return err
	}
	if err := writeFileAtomic(b.path(CACertFile), certPEM); err != nil {
		return err
	}
	b.setCA(cert, key, certPEM)
	return nil
}

func (b *Bundle) setCA(cert *x509.Certificate, key crypto.Signer, certPEM []byte) {
	b.caCert, b.caKey, b.CAPEM = cert, key, certPEM
	b.CAPool = x509.NewCertPool()
	b.CAPool.AddCert(cert)
}

// loadLeaf loads a certificate/key pair signed by our CA for usage; ok is
// false when the files are missing, unreadable, mismatched or not signed by
// the CA, i.e. whenever the pair must be issued afresh.
func (b *Bundle) loadLeaf(certFile, keyFile string, usage x509.ExtKeyUsage) (pair tls.Certificate, certPEM, keyPEM []byte, ok bool) {
	certPEM, err := os.ReadFile(b.path(certFile))
	if err != nil {
		return pair, nil, nil, false
	}
	keyPEM, err = os.ReadFile(b.path(keyFile))
	if err != nil {
		return pair, nil, nil, false
	}
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil || pair.Leaf == nil {
		return pair, nil, nil, false
	}
	if _, err := pair.Leaf.Verify(x509.VerifyOptions{
		Roots:       b.CAPool,
		KeyUsages:   []x509.ExtKeyUsage{usage},
		CurrentTime: now(),
	}); err != nil {
		return pair, nil, nil, false
	}
	return pair, certPEM, keyPEM, true
}

func nearExpiry(c *x509.Certificate) bool { return now().Add(renewBefore).After(c.NotAfter) }

func (b *Bundle) ensureServing(dns []string, ips []net.IP) error {
	pair, _, _, ok := b.loadLeaf(ServingCertFile, ServingKeyFile, x509.ExtKeyUsageServerAuth)
	if ok && !nearExpiry(pair.Leaf) && coversHosts(pair.Leaf, dns, ips) {
		b.setServing(pair)
		return nil
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	der, err := b.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "minik8s-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dns,
		IPAddresses: ips,
	}, key.Public(), leafValidity)
	if err != nil {
		return fmt.Errorf("pki: sign serving certificate: %w", err)
	}
	certPEM := encodeCert(der)
	// Key first: a crash in between leaves a mismatched pair, which the next
	// Ensure re-issues.
	if err := writeFileAtomic(b.path(ServingKeyFile), keyPEM); err != nil {
		return err
	}
	if err := writeFileAtomic(b.path(ServingCertFile), certPEM); err != nil {
		return err
	}
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	b.setServing(pair)
	return nil
}

// setServing makes the CA part of the served chain, so a node that joins
// with the CA's hash (pkg/bootstrap) can find the CA in the handshake.
func (b *Bundle) setServing(pair tls.Certificate) {
	pair.Certificate = append(pair.Certificate[:1:1], b.caCert.Raw)
	b.Serving = pair
}

func coversHosts(c *x509.Certificate, dns []string, ips []net.IP) bool {
	for _, d := range dns {
		if !slices.ContainsFunc(c.DNSNames, func(have string) bool { return strings.EqualFold(have, d) }) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// wantedHosts splits the configured hosts plus the defaults into DNS names
// and IPs, without duplicates.
func wantedHosts(hosts []string) ([]string, []net.IP) {
	all := append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)
	if h, err := os.Hostname(); err == nil && h != "" {
		all = append(all, h)
	}
	var dns []string
	var ips []net.IP
	for _, h := range all {
		h = strings.TrimSpace(h)
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

func (b *Bundle) ensureAdmin() error {
	keyPEM, err := os.ReadFile(b.path(AdminKeyFile))
	var key crypto.Signer
	if err == nil {
		key, err = parseKeyPEM(keyPEM)
	}
	if err != nil {
		// Missing or unreadable: the admin identity starts afresh.
		if key, keyPEM, err = newKey(); err != nil {
			return err
		}
		if err := writeFileAtomic(b.path(AdminKeyFile), keyPEM); err != nil {
			return err
		}
	}
	pair, certPEM, _, ok := b.loadLeaf(AdminCertFile, AdminKeyFile, x509.ExtKeyUsageClientAuth)
	if !ok || nearExpiry(pair.Leaf) || pair.Leaf.Subject.CommonName != AdminUser ||
		!slices.Contains(pair.Leaf.Subject.Organization, MastersGroup) {
		der, err := b.sign(clientTemplate(AdminUser, []string{MastersGroup}), key.Public(), leafValidity)
		if err != nil {
			return fmt.Errorf("pki: sign admin certificate: %w", err)
		}
		certPEM = encodeCert(der)
		if err := writeFileAtomic(b.path(AdminCertFile), certPEM); err != nil {
			return err
		}
		if pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return err
		}
	}
	b.AdminCert, b.AdminCertPEM, b.AdminKeyPEM = pair, certPEM, keyPEM
	return nil
}

func clientTemplate(user string, groups []string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: slices.Clone(groups)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// IssueClientCert signs a client certificate (CN=user, O=groups) with a new
// key. validity <= 0 means one year; it never outlives the CA.
func (b *Bundle) IssueClientCert(user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("pki: client certificate needs a user name")
	}
	if validity <= 0 {
		validity = leafValidity
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	der, err := b.sign(clientTemplate(user, groups), key.Public(), validity)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: sign client certificate for %q: %w", user, err)
	}
	return encodeCert(der), keyPEM, nil
}

// sign completes tmpl (serial, validity window) and signs it with the CA.
func (b *Bundle) sign(tmpl *x509.Certificate, pub crypto.PublicKey, validity time.Duration) ([]byte, error) {
	if b.caCert == nil || b.caKey == nil {
		return nil, errors.New("pki: bundle has no CA key (use Ensure)")
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	t := now()
	return b.signWindow(tmpl, pub, serial, t.Add(-backdate), t.Add(validity))
}

// signWindow signs tmpl valid from notBefore to notAfter, never beyond the CA.
func (b *Bundle) signWindow(tmpl *x509.Certificate, pub crypto.PublicKey, serial *big.Int, notBefore, notAfter time.Time) ([]byte, error) {
	tmpl.SerialNumber = serial
	tmpl.NotBefore = notBefore
	tmpl.NotAfter = notAfter
	if tmpl.NotAfter.After(b.caCert.NotAfter) {
		tmpl.NotAfter = b.caCert.NotAfter
	}
	tmpl.BasicConstraintsValid = true
	return x509.CreateCertificate(rand.Reader, tmpl, b.caCert, pub, b.caKey)
}

func newKey() (crypto.Signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func parseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no private key in PEM data")
		}
		switch block.Type {
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(block.Bytes)
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, err
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("unsupported private key type %T", k)
			}
			return s, nil
		}
	}
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no certificate in PEM data")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

func publicKeyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(key.Public())
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // never zero
}

func randomHex(n int) (string, error) {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf), nil
}

// WriteFileAtomic writes data to path with mode 0600 via a temporary file
// in the same directory, fsync and rename, then syncs the directory: a crash
// leaves the old file or the new one, never half of one. The directory must
// exist.
func WriteFileAtomic(path string, data []byte) error { return writeFileAtomic(path, data) }

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
