// Package apiserver serves the Kubernetes REST API over a storage.Store:
// request routing, the generic create/get/list/update/patch/delete/watch
// verbs for every resource in the registry table, content negotiation
// (JSON, YAML, protobuf, Table, PartialObjectMetadata), discovery, metrics,
// authentication, request deadlines and the health endpoints. It holds no
// per-kind handlers: what differs between kinds is the registry.Resource
// each kind's file in pkg/registry/kinds fills, whose hooks the handlers
// call. Service accounts are the exception kube-apiserver makes too
// (serviceaccounts.go): the TokenRequest subresource, the ServiceAccount
// admission of new pods and the default account of each new namespace.
package apiserver
