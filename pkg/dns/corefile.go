package dns

import (
	"fmt"
	"net"
	"strings"
)

// corefile renders the Corefile for cfg (completed). The server block
// serves the root zone, as kubeadm's: the kubernetes plugin answers for the
// cluster domain and the reverse zones, everything else is forwarded to the
// host's upstream resolvers when there are any.
func corefile(cfg Config, kubeconfigPath string) string {
	var b strings.Builder
	zones := cfg.ClusterDomain + " in-addr.arpa ip6.arpa"
	host, port, _ := net.SplitHostPort(cfg.Listen)
	fmt.Fprintf(&b, ".:%s {\n", port)
	if host != "" && host != "0.0.0.0" && host != "::" {
		fmt.Fprintf(&b, "    bind %s\n", host)
	}
	b.WriteString("    errors\n")
	fmt.Fprintf(&b, "    ready %s\n", cfg.ReadyAddress)
	if cfg.HealthAddress != "" {
		fmt.Fprintf(&b, "    health %s\n", cfg.HealthAddress)
	}
	if cfg.MetricsAddress != "" {
		fmt.Fprintf(&b, "    prometheus %s\n", cfg.MetricsAddress)
	}
	if len(cfg.AllowNets) > 0 {
		fmt.Fprintf(&b, "    acl {\n        allow net %s\n        block\n    }\n", strings.Join(cfg.AllowNets, " "))
	}
	if cfg.HostsFile != "" {
		fmt.Fprintf(&b, "    hosts %s {\n        ttl 5\n        reload 1s\n        fallthrough\n    }\n", cfg.HostsFile)
	}
	fmt.Fprintf(&b, "    kubernetes %s {\n", zones)
	fmt.Fprintf(&b, "        kubeconfig %s %s\n", kubeconfigPath, kubeconfigContext)
	b.WriteString("        pods insecure\n")
	b.WriteString("        fallthrough in-addr.arpa ip6.arpa\n")
	b.WriteString("        ttl 30\n")
	b.WriteString("    }\n")
	if cfg.Upstream != "" {
		fmt.Fprintf(&b, "    forward . %s\n", cfg.Upstream)
	}
	// As kubeadm's Corefile: the kubernetes plugin answers from its own
	// watch-fed cache, so caching its answers again would only serve
	// stale ones (a name asked just before its Service's watch event
	// would stay NXDOMAIN for 30s).
	fmt.Fprintf(&b, "    cache 30 {\n        disable success %s\n        disable denial %s\n    }\n", cfg.ClusterDomain, cfg.ClusterDomain)
	b.WriteString("    loop\n")
	b.WriteString("    reload\n")
	b.WriteString("}\n")
	return b.String()
}
