// Package component runs the long-running parts of one process (etcd, the
// apiserver, the controllers, a node's kubelet, the add-ons) as one
// lifecycle: it starts them in order, each once the one before it is
// ready, and when one fails it stops the others in reverse order and
// returns that failure, named after its part.
//
// It owns start-up order, shutdown order and how a failure ends the
// process; it knows nothing of what the parts are (see pkg/controlplane,
// pkg/node and pkg/cli for the lists).
package component
