// Package e2e runs whole clusters as root on this machine: the control
// plane in the test process, kubelets running real pods on containerd,
// each node in a network namespace of its own on a LAN bridge the test
// creates, driven with client-go and the real kubectl. Tests skip, saying
// why, without root, containerd or the CNI plugins; CI has them all.
package e2e
