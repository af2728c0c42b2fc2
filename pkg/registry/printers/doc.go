// Package printers holds what the server-side tables of every kind share:
// the Printer type, Typed (a printer over one Go type, which also reads
// unstructured objects), the column and cell helpers (NameColumn, Age,
// TemplateColumns, ...) and Default for kinds without a printer. A kind's
// own printer lives in its file in pkg/registry/kinds.
//
// The apiserver answers requests that accept
// "application/json;as=Table;g=meta.k8s.io;v=v1" with a metav1.Table. The
// printers decide which columns such a table has for each kind and render one
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
