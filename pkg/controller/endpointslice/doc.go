// Package endpointslice is Kubernetes' EndpointSlice controller: for
// every Service with a selector it keeps discovery.k8s.io/v1
// EndpointSlices listing the pods the selector matches, with their
// ready, serving and terminating conditions.
//
// Its slices carry the labels kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io
// and a controller ownerReference to the Service; each holds at most
// MaxEndpointsPerSlice endpoints of one address type (IPv4 or IPv6)
// sharing one set of ports. A changed endpoint is updated in the slice
// that holds it; slices are created only for what does not fit, and
// deleted when emptied. A Service with no endpoints keeps one empty
// placeholder slice, as in Kubernetes.
//
// It owns the slices it manages (by the managed-by label) and only them:
// slices of other managers, and the mirroring of user-managed Endpoints,
// are not its business. It reads Services, Pods and EndpointSlices from
// shared informers that the caller starts, and writes only EndpointSlices.
package endpointslice
