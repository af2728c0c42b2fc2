// Package fn is `kubectl fn`, the command-line client of serverless
// functions (minik8s.io/v1 Function): deploy packs a .py file, a folder or
// a .zip into the function's source ConfigMap and creates or updates the
// Function; invoke calls it through the apiserver's Service proxy and the
// function router; logs prints its pods' logs; list and delete are
// kubectl's get and delete of functions, with their flags.
//
// It is both a command of minik8s' kubectl tree (NewCommand) and the
// kubectl plugin bin/kubectl-fn (NewPluginCommand) that any kubectl finds
// on PATH. It only talks to the apiserver; it does not build, route or
// scale functions (pkg/serverless does).
package fn
