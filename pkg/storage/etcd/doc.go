// Package etcd implements storage.Store on etcd v3, and starts an embedded
// etcd server when the cluster does not bring its own. Optimistic concurrency
// is etcd's: every conditional write is a transaction comparing ModRevision.
// A health monitor makes calls fail at once while etcd does not answer.
package etcd
