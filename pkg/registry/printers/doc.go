// Package printers holds the server-side table columns of Kubernetes'
// kinds, one Printer per kind (Pod, Service, ...), and the column and cell
// helpers every printer uses (NameColumn, Age, Typed, ...). A kind's file in
// pkg/registry/kinds wires its printer as the Resource's Printer.
//
// The apiserver answers requests that accept
// "application/json;as=Table;g=meta.k8s.io;v=v1" with a metav1.Table. This
// package decides which columns such a table has for each kind and renders one
// row's cells per object, matching what Kubernetes' own apiserver returns so
// that an unmodified kubectl prints the familiar NAME/READY/STATUS/... output.
//
// Columns with Priority 1 are the "-o wide" columns: the server always fills
// their cells and kubectl hides them unless asked for wide output. Kinds with no
// printer of their own use Default, which mirrors the apiserver's default table
// (Name and "Created At").
//
// The package is pure: it reads objects and a clock value passed in by the
// caller and never talks to storage.
package printers
