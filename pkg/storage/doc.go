// Package storage is the narrow seam between the apiserver and the key-value
// store that holds cluster state. It knows keys, bytes and revisions; it knows
// nothing of Kubernetes objects. The etcd implementation lives in
// storage/etcd; everything above this seam is storage-agnostic.
package storage
