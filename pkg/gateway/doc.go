// Package gateway (docs/design/0009-gateway.md) is the seeds' "domain + path" gateway and the cluster's
// Ingress controller: one nginx (Debian's), run and reconfigured by us,
// that routes http://<host>/<path> to Services.
//
// # What it serves
//
//   - minik8s.io/v1 DNSRecords: spec.host, and paths each naming a
//     Service and port of the record's namespace. A path is a prefix of
//     whole segments that is stripped before forwarding, as the seeds'
//     nginx did: http://minik8s.com/path1 and /path1/ reach the Service
//     as /, /path1/x as /x, /path10 not at all. The backend's redirects
//     to its own root (relative, or to its address or the request's host)
//     are rewritten to stay below the path.
//   - networking.k8s.io/v1 Ingresses: rules (host or none), paths with
//     pathType Exact or Prefix (ImplementationSpecific is Prefix), and the
//     defaultBackend, with Kubernetes' semantics: the path is passed on
//     unchanged; Prefix /foo matches /foo, /foo/ and /foo/bar, not
//     /foobar; Exact only itself, and it wins over a Prefix of the same
//     path. Every Ingress is served whatever its ingressClassName: this
//     is the cluster's only Ingress controller.
//
// The default server also carries minik8s' own routes, claimed before any
// DNSRecord or Ingress: /function/ (and /workflow/, /trigger/) goes, path unchanged, to the Service
// kube-system/minik8s-functions (the functions' router, pkg/serverless)
// while that Service exists; nginx waits up to an hour for its answers,
// since the router enforces each function's own timeout.
//
// Where two objects claim the same host and path, the older one keeps it
// and the other reports the conflict in its status. Redirects nginx
// makes are relative (absolute_redirect off): its port is not the one
// clients use.
//
// # How traffic and names reach it
//
// nginx listens on Config.Port (10080) on the host it runs on, or in the
// node namespace Config.NetNS, and forwards to Services' clusterIPs, so
// the node's proxy (pkg/proxy) picks the endpoint. The Service
// kube-system/minik8s-gateway (port 80, published with pkg/hostservice)
// leads pods to it; every DNSRecord host and every Ingress host resolves,
// in the cluster DNS, to that Service's clusterIP: the gateway keeps a
// hosts(5) file that CoreDNS serves (pkg/dns Config.HostsFile).
//
// # What it owns
//
// Config.Dir (nginx.conf, its logs and temp files, the hosts file), the
// nginx process, the minik8s-gateway Service and its slice, and the status
// of DNSRecords and Ingresses (address, conditions). It writes nothing
// else. A change is applied by validating the new configuration with
// `nginx -t` and reloading (SIGHUP): nginx finishes requests in flight
// and other routes keep answering. A configuration nginx refuses is not
// applied; the error is logged and the old one stays.
//
// A DNSRecord is reported Routed only once nginx answers, on loopback,
// with the id of the configuration just written (a status server named
// minik8s-gateway.invalid): an nginx that cannot bind its port, or an
// nginx that is not ours holding it, makes records NotServing. nginx's
// process group (master and workers) ends with the gateway, even when
// the gateway is SIGKILLed, and a restart ends what an earlier run left
// (pkg/supervisor, pid file nginx.supervisor.pid).
package gateway
