package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controlplane"
)

type kubeconfigFlags struct {
	kubeconfig string
	user       string
	groups     []string
	expiration time.Duration
	out        string
}

// kubeconfigCommand makes a kubeconfig for a new user, the Kubernetes
// way: a CSR for the kube-apiserver-client signer, approved by the
// caller (who needs approve on that signer: an administrator).
func kubeconfigCommand() *cobra.Command {
	f := &kubeconfigFlags{}
	cmd := &cobra.Command{
		Use:   "kubeconfig --user NAME [--group GROUP]...",
		Short: "Write a kubeconfig with a client certificate for a user (who can do nothing until bound to a role)",
		Long: `Creates a key and a CertificateSigningRequest for CN=<user>, O=<groups> with the
kubernetes.io/kube-apiserver-client signer, approves it with the given (admin)
kubeconfig, waits for the certificate and writes a kubeconfig for the user.
The user starts with no permissions: bind a role, e.g.
  kubectl create rolebinding alice-view --clusterrole=view --user=alice -n team`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeUserKubeconfig(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "/var/lib/minik8s/"+controlplane.KubeconfigName, "an administrator's kubeconfig")
	fl.StringVar(&f.user, "user", "", "the user's name (the certificate's CN)")
	fl.StringSliceVar(&f.groups, "group", nil, "a group of the user (the certificate's O); repeatable")
	fl.DurationVar(&f.expiration, "expiration", 365*24*time.Hour, "how long the certificate is valid")
	fl.StringVarP(&f.out, "output-file", "o", "", "write the kubeconfig here (mode 0600) instead of to stdout")
	return cmd
}

func writeUserKubeconfig(ctx context.Context, f *kubeconfigFlags) error {
	switch {
	case f.user == "":
		return errors.New("--user is required")
	case strings.HasPrefix(f.user, "system:"):
		return fmt.Errorf("user %q: names beginning with system: are Kubernetes' own identities", f.user)
	case f.expiration < 10*time.Minute:
		return errors.New("--expiration must be at least 10m")
	}
	for _, g := range f.groups {
		if g == "system:masters" {
			return errors.New("group system:masters bypasses authorization; bind the user to cluster-admin instead")
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return err
	}
	admin, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: f.user, Organization: f.groups}}, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "user-" + strings.ToLower(f.user) + "-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: ptr.To(int32(f.expiration / time.Second)),
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("certificate request: %w", err)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Minik8sKubeconfig",
		Message: "approved by minik8s kubeconfig for user " + f.user,
	})
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approve %s: %w", csr.Name, err)
	}
	var cert []byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cert = got.Status.Certificate
		return len(cert) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("certificate of %s not issued: %w", csr.Name, err)
	}
	raw, err := clientcmd.LoadFromFile(f.kubeconfig)
	if err != nil {
		return err
	}
	caData := rc.CAData
	if len(caData) == 0 && rc.CAFile != "" {
		if caData, err = os.ReadFile(rc.CAFile); err != nil {
			return err
		}
	}
	clusterName := "minik8s"
	if c := raw.Contexts[raw.CurrentContext]; c != nil && c.Cluster != "" {
		clusterName = c.Cluster
	}
	out := clientcmdapi.NewConfig()
	out.Clusters[clusterName] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: caData}
	out.AuthInfos[f.user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}
	ctxName := f.user + "@" + clusterName
	out.Contexts[ctxName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: f.user}
	out.CurrentContext = ctxName
	data, err := clientcmd.Write(*out)
	if err != nil {
		return err
	}
	if f.out == "" {
		_, err = os.Stdout.Write(data)
		return err
	}
	return os.WriteFile(f.out, data, 0o600)
}
