package bootstrap

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/minik8s/minik8s/pkg/bootstrap/token"
	"github.com/minik8s/minik8s/pkg/pki"
)

// Files under Config.Dir.
const (
	// KubeconfigFile is the node's kubeconfig; its user is the certificate
	// in CredentialFile.
	KubeconfigFile = "kubelet.kubeconfig"
	// CredentialFile holds the node's client certificate and its key, one
	// file so that both change at once (the kubelet's
	// kubelet-client-current.pem).
	CredentialFile = "pki/kubelet-client-current.pem"
)

// Node identities.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// DefaultRenewBefore is how close to expiry a saved certificate is renewed.
const DefaultRenewBefore = 30 * 24 * time.Hour

// Config says which node joins which cluster, and where its credential lives.
type Config struct {
	// Server is the apiserver's URL (https://host:port).
	Server string
	// Token is the join token, "K10<ca-hash>::<id>.<secret>" or
	// "<id>.<secret>"; it may be empty when Dir holds a valid credential.
	Token string
	// CAPEM is the cluster CA. Optional when Token carries the CA hash
	// (then it must match it); required otherwise.
	CAPEM []byte
	// NodeName is the node; its certificate says system:node:<NodeName>.
	NodeName string
	// Dir holds the node's credential (KubeconfigFile, CredentialFile).
	Dir string
	// RenewBefore: a saved certificate this close to expiry is renewed
	// (default DefaultRenewBefore).
	RenewBefore time.Duration
	// UserAgent of the returned config and of the requests made here.
	UserAgent string
	Logger    *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (c *Config) complete() error {
	if c.Server == "" || c.NodeName == "" || c.Dir == "" {
		return errors.New("bootstrap: a server URL, a node name and a directory are required")
	}
	if c.RenewBefore <= 0 {
		c.RenewBefore = DefaultRenewBefore
	}
	if c.UserAgent == "" {
		c.UserAgent = "minik8s-kubelet"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Join returns the node's own credential for the apiserver: the saved one
// while it is valid (renewing it when it nears expiry), else a new one got
// with the join token. It blocks until the certificate is issued or ctx
// ends.
func Join(ctx context.Context, cfg Config) (*rest.Config, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("node", cfg.NodeName)
	var join token.JoinToken
	if cfg.Token != "" {
		var err error
		if join, err = token.ParseJoin(cfg.Token); err != nil {
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	}
	if len(cfg.CAPEM) > 0 && join.CAHash != "" {
		if err := checkHash(cfg.CAPEM, join.CAHash); err != nil {
			return nil, err
		}
	}

	saved, err := loadSaved(cfg)
	switch {
	case err != nil:
		log.Info("no usable saved credential", "dir", cfg.Dir, "why", err)
	case !sameCA(saved.caPEM, cfg.CAPEM, join.CAHash):
		log.Info("the saved credential is for another cluster CA", "dir", cfg.Dir)
	case cfg.Now().Add(cfg.RenewBefore).Before(saved.leaf.NotAfter):
		log.Info("using the saved credential", "expires", saved.leaf.NotAfter)
		return writeCredential(cfg, saved.caPEM, nil)
	default:
		log.Info("renewing the saved credential", "expires", saved.leaf.NotAfter)
		rc, err := writeCredential(cfg, saved.caPEM, nil)
		if err == nil {
			if rc, err = request(ctx, cfg, rc, saved.caPEM); err == nil {
				return rc, nil
			}
		}
		if cfg.Token == "" {
			log.Warn("renewal failed: going on with the saved credential", "err", err)
			return writeCredential(cfg, saved.caPEM, nil)
		}
		log.Warn("renewal failed: joining with the token", "err", err)
	}

	if cfg.Token == "" {
		return nil, errors.New("bootstrap: no valid saved credential and no join token")
	}
	caPEM := cfg.CAPEM
	if len(caPEM) == 0 {
		if join.CAHash == "" {
			return nil, errors.New(`bootstrap: a join token without a CA hash ("K10<ca-hash>::") needs the cluster CA`)
		}
		if caPEM, err = DiscoverCA(ctx, cfg.Server, join.CAHash); err != nil {
			return nil, err
		}
	}
	boot := &rest.Config{
		Host: cfg.Server, BearerToken: join.Token.String(), UserAgent: cfg.UserAgent,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
	}
	log.Info("joining with a bootstrap token", "server", cfg.Server, "token", join.Token.ID)
	return request(ctx, cfg, boot, caPEM)
}

// request asks for a node certificate with a new key, as whoever rc
// authenticates, waits for it and saves it.
func request(ctx context.Context, cfg Config, rc *rest.Config, caPEM []byte) (*rest.Config, error) {
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: generate key: %w", err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: NodeUserPrefix + cfg.NodeName, Organization: []string{NodesGroup}},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: certificate request: %w", err)
	}
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	name, uid, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	cfg.Logger.Info("waiting for the certificate signing request to be approved and signed", "csr", name,
		"hint", "kubectl certificate approve "+name)
	certPEM, err := csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: certificate signing request %s: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	cred := append(bytes.Clone(certPEM), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	if _, err := checkCredential(cred, caPEM, cfg.NodeName, cfg.Now()); err != nil {
		return nil, fmt.Errorf("bootstrap: the issued certificate (csr %s): %w", name, err)
	}
	cfg.Logger.Info("got the node's certificate", "csr", name)
	return writeCredential(cfg, caPEM, cred)
}

type savedCredential struct {
	caPEM []byte
	leaf  *x509.Certificate
}

// loadSaved reads the saved credential and checks it is this node's,
// signed by the saved CA and unexpired.
func loadSaved(cfg Config) (*savedCredential, error) {
	kc, err := clientcmd.LoadFromFile(filepath.Join(cfg.Dir, KubeconfigFile))
	if err != nil {
		return nil, err
	}
	ctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return nil, errors.New("kubeconfig has no current context")
	}
	cluster, ok := kc.Clusters[ctx.Cluster]
	if !ok || len(cluster.CertificateAuthorityData) == 0 {
		return nil, errors.New("kubeconfig has no cluster CA")
	}
	cred, err := os.ReadFile(filepath.Join(cfg.Dir, CredentialFile))
	if err != nil {
		return nil, err
	}
	leaf, err := checkCredential(cred, cluster.CertificateAuthorityData, cfg.NodeName, cfg.Now())
	if err != nil {
		return nil, err
	}
	return &savedCredential{caPEM: cluster.CertificateAuthorityData, leaf: leaf}, nil
}

// checkCredential verifies a certificate+key PEM: a pair, signed by the CA
// for client auth, valid at now, for system:node:<nodeName>.
func checkCredential(cred, caPEM []byte, nodeName string, now time.Time) (*x509.Certificate, error) {
	pair, err := tls.X509KeyPair(cred, cred)
	if err != nil {
		return nil, err
	}
	leaf := pair.Leaf
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, err
	}
	if want := NodeUserPrefix + nodeName; leaf.Subject.CommonName != want {
		return nil, fmt.Errorf("certificate is for %q, not %q", leaf.Subject.CommonName, want)
	}
	return leaf, nil
}

// sameCA: the saved CA is the one the caller gave or the token names.
func sameCA(saved, given []byte, hash string) bool {
	if len(given) > 0 {
		return bytes.Equal(bytes.TrimSpace(saved), bytes.TrimSpace(given))
	}
	if hash != "" {
		return checkHash(saved, hash) == nil
	}
	return true
}

func checkHash(caPEM []byte, hash string) error {
	got, err := token.CAHash(caPEM)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if got != hash {
		return fmt.Errorf("bootstrap: the cluster CA's hash is %s, the join token says %s", got, hash)
	}
	return nil
}

// writeCredential saves cred (unless nil: keep the saved one) and the
// kubeconfig pointing at it, and returns the config it describes.
func writeCredential(cfg Config, caPEM, cred []byte) (*rest.Config, error) {
	credPath, err := filepath.Abs(filepath.Join(cfg.Dir, CredentialFile))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(credPath), 0o700); err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	if cred != nil {
		if err := pki.WriteFileAtomic(credPath, cred); err != nil {
			return nil, err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["default"] = &clientcmdapi.Cluster{Server: cfg.Server, CertificateAuthorityData: caPEM}
	kc.AuthInfos["default"] = &clientcmdapi.AuthInfo{ClientCertificate: credPath, ClientKey: credPath}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: "default"}
	kc.CurrentContext = "default"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.Dir, KubeconfigFile)
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, data) {
		if err := pki.WriteFileAtomic(path, data); err != nil {
			return nil, err
		}
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = cfg.UserAgent
	return rc, nil
}
