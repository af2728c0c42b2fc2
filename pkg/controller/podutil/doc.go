// Package podutil answers the questions about a Pod that several
// controllers ask alike: is it ready, still active, on its way out, or
// finished, and which of its IPs is of a family.
//
// It only reads Pods: it writes nothing and must not import a controller
// package.
package podutil
