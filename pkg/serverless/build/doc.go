// Package build builds function images without a daemon and pushes them
// to the cluster's registry (pkg/serverless/registry), with
// go-containerregistry: an OCI image of a runtime's base root filesystem
// (one layer, the runtime's tarball as it is) and one small layer with
// the function's files and the runtime server, under a config that names
// the entrypoint, environment, working directory and port.
//
// Builds are made to repeat cheaply. The base layer is the base tarball
// uncompressed: its digest is the tarball's sha256, computed once per
// tarball (path, size and modification time) and Builder. It is pushed
// once per registry, into BaseRepository, and mounted from there into
// each function's repository, so a new function or a new revision uploads
// only its files. The files layer is reproducible (sorted entries, fixed
// times and owners), so the same files give the same image.
//
// Images are referenced by digest, so that a pod runs exactly the revision
// built for it; each is also tagged. Delete removes every tagged manifest
// of a repository. The package owns nothing on disk and never runs the
// registry's garbage collection: blobs of deleted images stay until it
// runs.
package build
