// Package registry is the shape of the table of resources the apiserver
// serves. A Resource says where a kind lives (group, version, plural,
// scope), which subresources it has, and the strategy the generic handlers
// in pkg/apiserver follow for its objects: defaults, validation, table
// columns, the hooks around create, update, status and delete, field
// selectors, and the state kept outside the objects (WriteHook). The kinds
// themselves fill their entries in pkg/registry/kinds, one file each; this
// package names no kind.
package registry
