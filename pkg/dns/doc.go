// Package dns runs the cluster's DNS: the real CoreDNS binary as a child
// process of the control plane host, with a generated Corefile whose
// kubernetes plugin watches Services, Namespaces and EndpointSlices from
// our apiserver, and the kube-system/kube-dns Service (clusterIP, by
// default 10.96.0.10) plus a hand-made EndpointSlice that points pods at
// it.
//
// It owns <data-dir>/dns (Corefile, kubeconfig, coredns.log), the
// kube-dns Service and the EndpointSlice labelled
// endpointslice.kubernetes.io/managed-by=dns.minik8s.io. It does not
// program service routing: the proxy (pkg/proxy) DNATs the clusterIP to
// the slice's endpoints like any other Service. See docs/design/0007-dns.md.
package dns
