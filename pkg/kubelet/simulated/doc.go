// Package simulated is a kubelet provider that runs nothing: pods bound
// to a simulated node go Running at once with a made-up IP, and nodes
// report the capacity they are configured with — kwok's hollow nodes. One
// machine can host hundreds of such nodes for scale tests and the
// scheduler benchmark. A pod annotated minik8s.io/simulate-exit-after:
// <duration> (and optionally minik8s.io/simulate-exit-code) finishes on
// its own, so Job-like workloads can be exercised too.
package simulated
