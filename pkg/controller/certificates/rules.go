package certificates

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/minik8s/minik8s/pkg/bootstrap/token"
)

// Identities of nodes, as Kubernetes names them.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// clientUsages are the usages a client certificate may ask for;
// client auth is required.
var clientUsages = []certificatesv1.KeyUsage{
	certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth,
}

// ValidateNodeClient checks that a request asks for a node's client
// certificate and nothing more, as kubernetes.io/kube-apiserver-client-kubelet
// demands: O=[system:nodes], CN=system:node:<name>, no subject alternative
// names, usages digital signature and client auth (key encipherment
// allowed).
func ValidateNodeClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{NodesGroup}) {
		return fmt.Errorf("organization is %q, not [%q]", req.Subject.Organization, NodesGroup)
	}
	if name, ok := strings.CutPrefix(req.Subject.CommonName, NodeUserPrefix); !ok || name == "" {
		return fmt.Errorf("common name %q is not %s<node name>", req.Subject.CommonName, NodeUserPrefix)
	}
	if len(req.DNSNames) > 0 || len(req.EmailAddresses) > 0 || len(req.IPAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("subject alternative names are not allowed")
	}
	if err := validateClientUsages(usages); err != nil {
		return err
	}
	if !slices.Contains(usages, certificatesv1.UsageDigitalSignature) {
		return errors.New(`usages lack "digital signature"`)
	}
	return nil
}

func validateClientUsages(usages []certificatesv1.KeyUsage) error {
	for _, u := range usages {
		if !slices.Contains(clientUsages, u) {
			return fmt.Errorf("usage %q is not allowed for a client certificate", u)
		}
	}
	if !slices.Contains(usages, certificatesv1.UsageClientAuth) {
		return errors.New(`usages lack "client auth"`)
	}
	return nil
}

// approval says whether the approver approves csr (whose request is req)
// and why.
func approval(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) (bool, string) {
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return false, "not for the kubelet client signer"
	}
	if err := ValidateNodeClient(req, csr.Spec.Usages); err != nil {
		return false, "not a node client certificate: " + err.Error()
	}
	switch {
	case csr.Spec.Username == req.Subject.CommonName:
		return true, "Auto approving self kubelet client certificate renewal."
	case slices.Contains(csr.Spec.Groups, token.Group):
		return true, "Auto approving kubelet client certificate requested with a bootstrap token."
	}
	return false, fmt.Sprintf("requester %q is neither a bootstrap token nor the node", csr.Spec.Username)
}

// signs says whether the signer issues certificates for signerName.
func signs(signerName string) bool {
	return signerName == certificatesv1.KubeAPIServerClientKubeletSignerName || signerName == certificatesv1.KubeAPIServerClientSignerName
}

// signing says how the signer issues csr's certificate (whose request is
// req, for one of the signers it signs for): the usages, or why it must
// fail.
func signing(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var err error
	switch csr.Spec.SignerName {
	case certificatesv1.KubeAPIServerClientKubeletSignerName:
		err = ValidateNodeClient(req, csr.Spec.Usages)
	case certificatesv1.KubeAPIServerClientSignerName:
		err = validateClientUsages(csr.Spec.Usages)
		if err == nil && slices.Contains(req.Subject.Organization, "system:masters") {
			err = errors.New("system:masters certificates are not issued through the API")
		}
	default:
		err = fmt.Errorf("signer %q is not ours", csr.Spec.SignerName)
	}
	if err != nil {
		return 0, nil, err
	}
	ku := x509.KeyUsageDigitalSignature
	if slices.Contains(csr.Spec.Usages, certificatesv1.UsageKeyEncipherment) {
		ku |= x509.KeyUsageKeyEncipherment
	}
	return ku, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil
}
