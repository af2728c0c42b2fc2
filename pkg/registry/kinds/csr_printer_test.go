package kinds

import (
	"testing"

	"k8s.io/utils/ptr"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCSRCells(t *testing.T) {
	gk := schema.GroupKind{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}
	csr := func(seconds *int32, cert string, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{ObjectMeta: objMeta("csr-x"), Spec: certificatesv1.CertificateSigningRequestSpec{
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, Username: "system:bootstrap:abcdef", ExpirationSeconds: seconds,
		}}
		for _, t := range conds {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t})
		}
		c.Status.Certificate = []byte(cert)
		return c
	}
	runCellCases(t, []cellCase{
		{name: "pending", gk: gk, obj: csr(nil, ""), want: map[string]interface{}{
			"Name": "csr-x", "Age": "10m", "SignerName": "kubernetes.io/kube-apiserver-client-kubelet",
			"Requestor": "system:bootstrap:abcdef", "RequestedDuration": "<none>", "Condition": "Pending",
		}},
		{name: "issued", gk: gk, obj: csr(ptr.To[int32](3600), "x", certificatesv1.CertificateApproved),
			want: map[string]interface{}{"RequestedDuration": "60m", "Condition": "Approved,Issued"}},
		{name: "denied", gk: gk, obj: csr(nil, "", certificatesv1.CertificateDenied), want: map[string]interface{}{"Condition": "Denied"}},
		{name: "failed", gk: gk, obj: csr(nil, "", certificatesv1.CertificateApproved, certificatesv1.CertificateFailed),
			want: map[string]interface{}{"Condition": "Approved,Failed"}},
	})
}
