// Package nodeipam assigns each Node a pod CIDR: a free subnet of
// Config.NodeMaskSize bits (a /24 by default) from the cluster CIDR
// (10.244.0.0/16 by default), written once to spec.podCIDR and
// spec.podCIDRs. The node's kubelet hands it to CNI's host-local IPAM,
// and every node routes to it (pkg/kubelet/network).
//
// The allocation map lives in memory and is rebuilt from the nodes'
// spec.podCIDR when the controller starts, so a restart never hands out
// a subnet twice; a subnet is free again once its node is gone. Because
// the map is in memory, exactly one instance may run at a time: run it
// under the controller manager's leader election.
//
// It reads Nodes through an informer and writes only spec.podCIDR(s),
// with optimistic concurrency, plus Events. A podCIDR set by someone
// else is respected (and reserved when it lies in the cluster CIDR); one
// that is set is never changed, as the API forbids.
package nodeipam
