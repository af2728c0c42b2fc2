// Package podcert obtains the credentials of a pod's `podCertificate`
// projected volume sources, as Kubernetes' kubelet does
// (pkg/kubelet/podcertificate): for each source it generates a private
// key of the source's type, asks the source's signer for a certificate
// through a certificates.k8s.io/v1 PodCertificateRequest (the pod, its
// service account and this node by name and UID, the key's stub PKCS#10
// request, the source's maxExpirationSeconds and user annotations), and
// hands out the key and the issued chain once the signer has written
// them into the request's status. From the status' beginRefreshAt on it
// asks again with a new key, handing out the current credentials until
// the new ones are issued. A request Denied or Failed is final for the
// source, as upstream.
//
// The package holds the keys in memory only (a restarted kubelet asks
// anew) and reads the API live, one get per pending request each time
// the pod's volumes are written. It owns no files: the provider writes
// what Credentials returns into the projected volume.
package podcert
