// Package namespace finishes the deletion of namespaces: once a namespace
// is marked for deletion it deletes every namespaced object in it, then
// removes the "kubernetes" finalizer so the apiserver can drop the
// namespace. It reads through informers and writes through the API; it
// never touches storage.
package namespace
