// Package daemon makes sure a containerd daemon answers on a socket, starting
// one when none does, as k3s does for its nodes.
//
// It owns the containerd process it starts (its config file, its log) and
// nothing else: it never stops a containerd it did not start, and it never
// touches containers, images or namespaces inside containerd. The container
// runtime in the parent package talks to whatever daemon answers.
package daemon
