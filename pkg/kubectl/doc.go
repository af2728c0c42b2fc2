// Package kubectl is minik8s' command-line client. It is the Kubernetes
// kubectl command tree (k8s.io/kubectl/pkg/cmd, a client library) so that
// every command, flag, output format and error reads exactly as Kubernetes
// users know it; minik8s-specific commands are added to the same tree.
// See docs/design/0002-kubectl.md.
package kubectl
