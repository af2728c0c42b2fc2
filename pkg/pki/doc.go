// Package pki owns the cluster's certificates and credentials, kept as
// separate files under the server's data dir (<data-dir>/pki):
//
//	ca.crt, ca.key             the cluster CA; created once and kept forever
//	apiserver.crt/.key         the apiserver serving certificate, signed by the CA;
//	                           re-issued when the wanted hosts grow or it nears expiry
//	admin.crt/.key             the admin client certificate
//	                           (CN=minik8s-admin, O=system:masters); the key is kept,
//	                           the certificate re-signed when it nears expiry
//	tokens.csv                 the static bearer-token file, in the format of
//	                           Kubernetes' --token-auth-file
//	                           (token,user,uid,"group1,group2"); holds the admin token
//	sa.key                     signs service account tokens (pkg/serviceaccount);
//	                           created once and kept, as kubeadm's sa.key: replacing
//	                           it revokes every token issued
//
// Keys are ECDSA P-256 (sa.key may also be an RSA key put there by hand). Every file is mode 0600 and written atomically
// (temporary file, fsync, rename), so a crash never leaves half a file; a
// certificate whose key no longer matches (a crash between writing the two) is
// simply re-issued on the next Ensure.
//
// The apiserver serves its certificate with the CA as the rest of the chain,
// so a joining node can find the CA its join token names by hash
// (pkg/bootstrap).
//
// The package also issues client certificates and tokens for other
// identities, signs certificate requests the CSR signer has approved
// (SignCertificateRequest, pkg/controller/certificates) and writes the
// admin kubeconfig. Checking the
// credentials on requests is pkg/apiserver/authn's job.
package pki
