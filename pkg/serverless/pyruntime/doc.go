// Package pyruntime is the Python side of a function instance and of a
// function build: server.py, the runtime server every instance runs
// (`python3 /runtime/server.py`: it imports the handler and serves it over
// HTTP on fnmeta.Port), check.py, which the build runs with the host's
// python3 to reject code that does not compile or lacks its handler before
// an image is made, and where the runtimes' root filesystems
// (hack/build-runtimes.sh, `make deps`) are found.
//
// It owns the contract between the image and the runtime server: the
// files the image carries (ServerFiles), its entrypoint and environment
// (Entrypoint, Env, FunctionDir) and the start-up failure messages the
// server writes to the termination log (StartupFailureReason). It builds
// no image and talks to no cluster.
package pyruntime
