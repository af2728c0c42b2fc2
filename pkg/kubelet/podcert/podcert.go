package podcert

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// refreshJitter spreads the refreshes of many pods: each waits up to this
// long past its beginRefreshAt, as Kubernetes' kubelet.
const refreshJitter = 5 * time.Minute

// overdue is how long past beginRefreshAt a refresh that has not
// happened is reported (CertificateOverdueForRefresh), as upstream.
const overdue = 10 * time.Minute

// Config is what a Manager is built from.
type Config struct {
	// Client creates PodCertificateRequests and reads them, the pods'
	// service accounts and the node (required).
	Client kubernetes.Interface
	// NodeName is this node (required).
	NodeName string
	// Recorder receives the pods' Warning events (Denied, Failed,
	// CertificateOverdueForRefresh, CertificateExpired). Nil: none.
	Recorder record.EventRecorder
	Clock    clock.PassiveClock
	Logger   *slog.Logger
	// Jitter is how long past beginRefreshAt one credential is refreshed;
	// default a random duration below 5 minutes.
	Jitter func() time.Duration
}

// Manager keeps the credentials of every podCertificate source of the
// node's pods.
type Manager struct {
	cfg Config

	mu    sync.Mutex
	creds map[sourceKey]*credential
}

// sourceKey is one podCertificate source of one pod.
type sourceKey struct {
	pod    types.UID
	volume string
	index  int
}

// credential is a source's state: what it hands out (key and chain, once
// issued), the request it waits for (pending, with the key that request
// is for), or why it never will (final).
type credential struct {
	mu sync.Mutex

	key, chain     []byte
	beginRefreshAt time.Time
	notAfter       time.Time
	warnedOverdue  bool
	warnedExpired  bool

	pending    string
	pendingKey []byte

	final error
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Manager, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("podcert: a client and a node name are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func() time.Duration { return time.Duration(mathrand.Int64N(int64(refreshJitter))) }
	}
	return &Manager{cfg: cfg, creds: map[sourceKey]*credential{}}, nil
}

// Credentials returns the PEM private key and certificate chain of source
// index of pod's projected volume: the ones issued last, or an error
// while none is (the request just made or still pending, denied, failed).
// It asks for new ones when the current ones are due for refresh.
func (m *Manager) Credentials(ctx context.Context, pod *corev1.Pod, volume string, index int, src *corev1.PodCertificateProjection) (key, chain []byte, err error) {
	k := sourceKey{pod: pod.UID, volume: volume, index: index}
	m.mu.Lock()
	c := m.creds[k]
	if c == nil {
		c = &credential{}
		m.creds[k] = c
	}
	m.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.final == nil && c.pending != "" {
		if err := m.checkPending(ctx, pod, c); err != nil {
			return m.current(c, err)
		}
	}
	if c.final != nil {
		return nil, nil, c.final
	}
	now := m.cfg.Clock.Now()
	if c.chain != nil {
		m.warn(pod, c, now)
	}
	if c.pending == "" && (c.chain == nil || !now.Before(c.beginRefreshAt)) {
		if err := m.request(ctx, pod, src, c); err != nil {
			return m.current(c, err)
		}
	}
	if c.chain == nil {
		return nil, nil, fmt.Errorf("PodCertificateRequest %s/%s for signer %q is not issued yet", pod.Namespace, c.pending, src.SignerName)
	}
	return c.key, c.chain, nil
}

// current returns c's credentials when it has some, logging err (a
// refresh that did not go through yet), or err.
func (m *Manager) current(c *credential, err error) ([]byte, []byte, error) {
	if c.chain == nil {
		return nil, nil, err
	}
	m.cfg.Logger.Warn("refresh pod certificate", "err", err)
	return c.key, c.chain, nil
}

// warn reports, once each, credentials overdue for refresh and expired.
func (m *Manager) warn(pod *corev1.Pod, c *credential, now time.Time) {
	if !c.warnedOverdue && now.After(c.beginRefreshAt.Add(overdue)) {
		c.warnedOverdue = true
		m.event(pod, "CertificateOverdueForRefresh", "PodCertificate refresh overdue")
	}
	if !c.warnedExpired && now.After(c.notAfter) {
		c.warnedExpired = true
		m.event(pod, "CertificateExpired", "PodCertificate expired")
	}
}

func (m *Manager) event(pod *corev1.Pod, reason, format string, args ...any) {
	if m.cfg.Recorder != nil {
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, reason, format, args...)
	}
}

// checkPending reads c's pending request and takes its outcome: issued
// credentials, or a final denial or failure. A request that is gone (the
// PodCertificateRequest cleaner deletes old ones) is asked again.
func (m *Manager) checkPending(ctx context.Context, pod *corev1.Pod, c *credential) error {
	pcr, err := m.cfg.Client.CertificatesV1().PodCertificateRequests(pod.Namespace).Get(ctx, c.pending, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		c.pending, c.pendingKey = "", nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("while getting PodCertificateRequest %s/%s: %w", pod.Namespace, c.pending, err)
	}
	for _, cond := range pcr.Status.Conditions {
		switch cond.Type {
		case certificatesv1.PodCertificateRequestConditionTypeDenied:
			c.final = fmt.Errorf("PodCertificateRequest %s/%s was permanently denied: reason=%q message=%q", pcr.Namespace, pcr.Name, cond.Reason, cond.Message)
			m.event(pod, certificatesv1.PodCertificateRequestConditionTypeDenied, "PodCertificateRequest %s/%s was denied, reason=%q, message=%q", pcr.Namespace, pcr.Name, cond.Reason, cond.Message)
			return nil
		case certificatesv1.PodCertificateRequestConditionTypeFailed:
			c.final = fmt.Errorf("PodCertificateRequest %s/%s permanently failed: reason=%q message=%q", pcr.Namespace, pcr.Name, cond.Reason, cond.Message)
			m.event(pod, certificatesv1.PodCertificateRequestConditionTypeFailed, "PodCertificateRequest %s/%s failed, reason=%q, message=%q", pcr.Namespace, pcr.Name, cond.Reason, cond.Message)
			return nil
		case certificatesv1.PodCertificateRequestConditionTypeIssued:
			st := pcr.Status
			if st.BeginRefreshAt == nil || st.NotAfter == nil {
				return fmt.Errorf("PodCertificateRequest %s/%s is issued without beginRefreshAt or notAfter", pcr.Namespace, pcr.Name)
			}
			c.key, c.chain = c.pendingKey, cleanChain([]byte(st.CertificateChain))
			c.beginRefreshAt = st.BeginRefreshAt.Add(m.cfg.Jitter())
			c.notAfter = st.NotAfter.Time
			c.warnedOverdue, c.warnedExpired = false, false
			c.pending, c.pendingKey = "", nil
			return nil
		}
	}
	return nil
}

// request makes a new key and asks the signer for its certificate.
func (m *Manager) request(ctx context.Context, pod *corev1.Pod, src *corev1.PodCertificateProjection, c *credential) error {
	saName := pod.Spec.ServiceAccountName
	if saName == "" {
		saName = "default"
	}
	sa, err := m.cfg.Client.CoreV1().ServiceAccounts(pod.Namespace).Get(ctx, saName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("while fetching service account: %w", err)
	}
	node, err := m.cfg.Client.CoreV1().Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("while getting node object: %w", err)
	}
	key, stub, err := NewKey(src.KeyType)
	if err != nil {
		return fmt.Errorf("while generating keypair: %w", err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return err
	}
	req := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       pod.Namespace,
			GenerateName:    "req-",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName:                src.SignerName,
			PodName:                   pod.Name,
			PodUID:                    pod.UID,
			ServiceAccountName:        saName,
			ServiceAccountUID:         sa.UID,
			NodeName:                  types.NodeName(m.cfg.NodeName),
			NodeUID:                   node.UID,
			MaxExpirationSeconds:      src.MaxExpirationSeconds,
			StubPKCS10Request:         stub,
			UnverifiedUserAnnotations: src.UserAnnotations,
		},
	}
	created, err := m.cfg.Client.CertificatesV1().PodCertificateRequests(pod.Namespace).Create(ctx, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("while creating PodCertificateRequest: %w", err)
	}
	c.pending, c.pendingKey = created.Name, keyPEM
	return nil
}

// Forget drops the credentials of a pod that left the node.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.creds {
		if k.pod == uid {
			delete(m.creds, k)
		}
	}
}

// NewKey generates a private key of a podCertificate key type and the
// stub PKCS#10 request (no subject, signed by the key) that proves it.
func NewKey(keyType string) (crypto.Signer, []byte, error) {
	var key crypto.Signer
	var err error
	switch keyType {
	case "RSA3072":
		key, err = rsa.GenerateKey(rand.Reader, 3072)
	case "RSA4096":
		key, err = rsa.GenerateKey(rand.Reader, 4096)
	case "ECDSAP256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ECDSAP384":
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "ECDSAP521":
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	case "ED25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		return nil, nil, fmt.Errorf("unknown key type %q", keyType)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("generate %s key: %w", keyType, err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, nil, fmt.Errorf("while generating stub PKCS#10 request: %w", err)
	}
	return key, stub, nil
}

// EncodeKey is key as a PEM "PRIVATE KEY" (PKCS#8) block.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("while marshaling key to PKCS#8: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// cleanChain keeps the chain's certificates only, without headers or
// text between the blocks.
func cleanChain(in []byte) []byte {
	var out bytes.Buffer
	for rest := in; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		out.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}))
	}
	return out.Bytes()
}
