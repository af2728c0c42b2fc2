package pki

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names used in the admin kubeconfig.
const (
	KubeconfigCluster = "minik8s"
	KubeconfigContext = "minik8s"
	KubeconfigUser    = "admin"
)

// WriteKubeconfig writes a kubeconfig for serverURL with one cluster
// "minik8s", one user "admin" and one context "minik8s" (the current one).
// The CA and the admin client certificate and key are embedded as data;
// nothing else (no token, no file references) goes in. The file is written
// atomically with mode 0600; its directory is created (0700) if missing.
func WriteKubeconfig(path, serverURL string, b *Bundle) error {
	if b == nil || len(b.CAPEM) == 0 || len(b.AdminCertPEM) == 0 || len(b.AdminKeyPEM) == 0 {
		return errors.New("pki: WriteKubeconfig needs a bundle from Ensure")
	}
	if serverURL == "" {
		return errors.New("pki: WriteKubeconfig needs a server URL")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigCluster] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: b.CAPEM,
	}
	cfg.AuthInfos[KubeconfigUser] = &clientcmdapi.AuthInfo{
		ClientCertificateData: b.AdminCertPEM,
		ClientKeyData:         b.AdminKeyPEM,
	}
	cfg.Contexts[KubeconfigContext] = &clientcmdapi.Context{
		Cluster:  KubeconfigCluster,
		AuthInfo: KubeconfigUser,
	}
	cfg.CurrentContext = KubeconfigContext
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("pki: encode kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("pki: kubeconfig dir: %w", err)
	}
	return writeFileAtomic(path, data)
}
