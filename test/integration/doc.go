// Package integration runs the real control plane in-process (embedded
// etcd, TLS apiserver, generated credentials) and drives it the way users
// and components do: with client-go's typed clientset and informers, and
// with the real kubectl command tree.
package integration
