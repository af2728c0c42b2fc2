// Package router is the functions' front door: an HTTP server the
// gateway's nginx forwards /function/<namespace>/<name>[/rest] to (the
// path unchanged), which finds an instance of the function and forwards
// the request to it, holding it while there is none, as Knative's
// activator does.
//
// # What it owns
//
// The routing of function calls and what it observes of them: the
// requests in flight per function and per instance, the time-weighted
// concurrency history the autoscaler reads (Router.AverageConcurrency,
// Router.Activity, Router.Stats), and the Prometheus series on /metrics.
// It reads pods (those labelled fnmeta.FunctionLabel) through its own
// informer and Functions through Config.Functions, and writes nothing to
// the apiserver: asking for instances is Config.Scaler's business (the
// autoscaler's Poke), creating them the function controller's.
//
// # Choosing an instance
//
// A pod of the function is usable when it has an IP, is not being
// deleted, has not finished, and either its Ready condition is True or
// the router's own probe (GET http://<ip>:8080/healthz answering 200)
// succeeded. The router probes pods that are not ready yet itself, every
// Config.ProbeInterval (25ms) while requests wait, so a cold start is not
// delayed by the kubelet's readiness period; it also probes pods of a
// revision newer than the one it serves, so an update switches over as
// soon as the new revision answers. Requests go to the newest revision
// (highest fnmeta.RevisionLabel) that has a usable pod, so during an
// update new requests reach the new revision once it is ready while
// those in flight finish on the old one. Once a revision has answered,
// requests do not go back to an older one while a pod of it lives: a new
// pod whose connection failed holds them until its probe passes again. Within it, the pod with the
// fewest requests in flight wins, ties broken at random.
//
// With no usable pod, the router calls Config.Scaler.Poke (again every
// second while it waits) and holds the request — it never answers "try
// again" — until a pod becomes usable, the function's spec.timeout
// (default 60s) passes (504), or the client goes away. A response that
// waited carries X-Minik8s-Cold-Start: true; every response carries
// X-Minik8s-Instance, the pod's name.
//
// # Forwarding
//
// The body is read first (at most Config.MaxBodyBytes, 6 MiB; more is
// 413), so that a request whose connection to a pod failed before any
// answer — refused, reset, closed — can be sent again to another pod;
// that pod is then not used until a probe of it succeeds again. Method,
// path, query, headers and body are passed on, with X-Forwarded-For
// appended. The whole call, waiting included, is bounded by the
// function's timeout: past it the answer is 504. Errors are JSON:
// {"error": "...", "reason": "NotFound|Timeout|RequestEntityTooLarge|BadGateway"}.
// A function the router does not know answers 404.
//
// When Config.NetNS is set, the router listens and dials the pods inside
// that network namespace (the node's, where pod IPs are routed).
//
// # Other paths
//
// GET /metrics serves the Prometheus series (minik8s_function_*), GET
// /healthz answers 200 while the router runs.
package router
