// Package cli is the `minik8s` multi-call command line: one cobra command
// per component, each holding its flags in a small struct and making one
// call into the component's package.
package cli
