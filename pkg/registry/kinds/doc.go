// Package kinds is the table of kinds the apiserver serves, one file per
// kind. A kind's file builds its registry.Resource: where it lives, its
// subresources (status, scale, binding, finalize, approval), its defaults,
// its validation on create and update, its table columns, its field
// selectors, its create/update/status/delete hooks and the state it keeps
// outside the objects (the Services' cluster IPs and node ports). All lists
// the kinds; nothing registers itself.
//
// A kind's file wires everything of that kind and holds what no other kind
// shares. Checks, defaults and columns that several kinds share (pod
// templates, label selectors, ports, ages) stay in the helper packages
// pkg/registry/defaults, pkg/registry/validation and pkg/registry/printers,
// which know no table and dispatch on no type. The generic apiserver
// (pkg/apiserver) calls the Resource's hooks and must not name a kind of
// this package; this package must not reach into the apiserver.
package kinds
