// Package prometheus runs the cluster's monitoring: the real Prometheus
// (built by make deps: Debian's has no Kubernetes service discovery) as a
// child process of the control-plane host under pkg/supervisor, as the
// gateway runs nginx and pkg/dns runs CoreDNS, with a prometheus.yml we
// generate. Prometheus finds its targets itself, through
// kubernetes_sd_configs against our own apiserver: the apiserver, every
// node's kubelet (its /metrics and /metrics/cadvisor, scraped through the
// apiserver's nodes/<name>/proxy), every node's node exporter, the pods
// and the Services annotated prometheus.io/scrape=true. It reads the API
// and scrapes through the apiserver as a user of its own,
// system:minik8s:prometheus (a client certificate of the cluster's CA),
// which the default policy's ClusterRole of that name authorizes.
//
// It owns Config.Dir: prometheus.yml (written on every start), tls/ (the
// cluster's CA and Prometheus' client certificate and key, issued anew on
// every start, all mode 0600), data/ (the TSDB), prometheus.log (its
// output) and prometheus.supervisor.pid, by which a start ends a
// Prometheus an earlier, SIGKILLed run left behind. It does not publish
// the Service kube-system/prometheus (Service says what it is): the
// caller does, with pkg/hostservice. It does not run the node exporters:
// each node's agent does. See docs/design/0026-monitoring.md.
package prometheus
