// Package certificates runs the CertificateSigningRequest controllers of
// Kubernetes' kube-controller-manager that TLS bootstrap needs:
//
//   - the approver ("csrapproving") approves, through /approval, the CSRs
//     for kubernetes.io/kube-apiserver-client-kubelet that ask for a node
//     client certificate (CN=system:node:<name>, O=system:nodes, no SANs,
//     client auth usages) when the requester is a bootstrap token (group
//     system:bootstrappers) or the very node renewing its own certificate.
//     Anything else stays pending for a person (kubectl certificate
//     approve / deny); the approver never denies.
//   - the signer ("csrsigning") issues, through /status, the certificates of
//     approved CSRs for kubernetes.io/kube-apiserver-client-kubelet and
//     kubernetes.io/kube-apiserver-client with the cluster CA, or marks them
//     Failed when the request does not fit the signer.
//   - the cleaner ("csrcleaner") deletes CSRs an hour after they were
//     issued, denied or failed (or once their certificate expired), a day
//     after they were made while pending, and PodCertificateRequests 15
//     minutes after they were made, as kube-controller-manager's csrcleaner
//     and PodCertificateRequest cleaner do.
//
// They read requests through informers and write through the API with
// optimistic concurrency (a conflict requeues). They hold no state of
// their own, so running them twice is harmless.
package certificates
