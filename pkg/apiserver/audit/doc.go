// Package audit owns the apiserver's audit log: one JSON line per request
// in Kubernetes' audit.k8s.io/v1 Event format (who, what, on which
// object, with which outcome and authorization decision), written after
// the response, filtered by a Policy in Kubernetes' audit.k8s.io/v1
// Policy format (levels None, Metadata, Request, RequestResponse, rules
// matched in order). A denied or sensitive request leaves a trace that
// survives the process.
//
// It owns the log file (rotated at a size, one backup kept) and the
// Event placed in each request's context, which the authorization layer
// annotates with its decision (Annotate).
package audit
