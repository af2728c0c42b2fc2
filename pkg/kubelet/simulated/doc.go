// Package simulated is a kubelet provider that runs nothing: pods bound
// to a simulated node go Running at once with a made-up IP, and nodes
// report the capacity they are configured with — kwok's hollow nodes. One
// machine can host hundreds of such nodes for scale tests and the
// scheduler benchmark. A pod annotated minik8s.io/simulate-exit-after:
// <duration> (and optionally minik8s.io/simulate-exit-code) finishes on
// its own, so Job-like workloads can be exercised too.
//
// So that logs, exec, attach and port-forward can be tested end to end
// without containers, the provider serves them in a small, honest way:
// a container's log is what it "printed" (its start, the lines of the
// pod's minik8s.io/simulate-logs annotation, what attach sessions sent
// it, its exit); exec runs a tiny built-in shell (echo, cat, hostname,
// true, false, sleep, sh -c with exit N; see exec.go); attach behaves
// like `cat` as the main process; every declared container port answers
// as an echo server.
//
// Its stats summary (kubectl top) reports, per running container, the
// usage the pod's minik8s.io/simulate-cpu-usage and
// minik8s.io/simulate-memory-usage annotations name (zero without them),
// summed per pod and for the node (stats.go).
package simulated
