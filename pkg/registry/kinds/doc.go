// Package kinds is the table of kinds the apiserver serves, one file per
// kind. A kind's file builds its registry.Resource and holds what only that
// kind has: where it lives, its subresources (status, scale, binding,
// finalize, approval), its defaults, its validation on create and update,
// its table columns, its field selectors, its create/update/status/delete
// hooks and the state it keeps outside the objects (the Services' cluster
// IPs and node ports). All lists the kinds; nothing registers itself.
//
// What several kinds share stays in the helper packages: the pod spec of
// Pods and workload templates, names, labels, selectors, ports and enums in
// pkg/registry/validation and pkg/registry/defaults, the column and cell
// helpers in pkg/registry/printers. They know no table and dispatch on no
// type. The generic apiserver (pkg/apiserver) calls the Resource's hooks
// and must not name a kind of this package; this package must not reach
// into the apiserver.
package kinds
