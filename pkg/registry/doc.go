// Package registry is the table of resources the apiserver serves. One entry
// per resource says where it lives (group, version, plural, scope), which
// subresources it has, which fields selectors may use and how it deletes;
// the generic handlers in pkg/apiserver do the rest. Adding a kind is adding
// an entry here (and its defaults, validation and printer in the
// subpackages), never a new handler.
package registry
