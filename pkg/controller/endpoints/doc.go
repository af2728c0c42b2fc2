// Package endpoints is Kubernetes' Endpoints controller: for every
// Service with a selector it keeps an Endpoints object of the same name
// whose subsets list the addresses of the pods the selector matches.
//
// Ready pods go in addresses, the others in notReadyAddresses (all in
// addresses when spec.publishNotReadyAddresses is set). Pods without an
// IP, pods that finished (Succeeded or Failed) and pods being deleted
// (unless publishNotReadyAddresses) are left out. Each service port's
// targetPort is resolved per pod (a name resolves to the pod's container
// port of that name; a pod lacking it is left out for that port), and
// addresses are grouped into subsets by the set of ports they serve.
//
// It owns the Endpoints of Services with a selector, and only them: it
// creates, updates and, when the Service goes away, deletes them. The
// Endpoints of a Service without a selector are the user's and are never
// touched. It reads Services, Pods and Endpoints from shared informers
// that the caller starts, and writes only Endpoints, through the API.
package endpoints
