// Package openapi builds and serves the OpenAPI documents of the minik8s API
// server.
//
// The documents are generated at start-up by reflection over the Go types of
// the served kinds (the upstream k8s.io/api structs):
//
//   - /openapi/v2 serves one Swagger 2.0 document for all resources, as JSON
//     by default and as the gnostic protobuf encoding when the Accept header
//     asks for application/com.github.proto-openapi.spec.v2@v1.0+protobuf
//     (that is what client-go's discovery OpenAPISchema requests).
//   - /openapi/v3 serves the OpenAPI v3 discovery document, which maps every
//     group version ("api/v1", "apis/apps/v1", ...) to a hashed URL.
//   - /openapi/v3/api/<version> and /openapi/v3/apis/<group>/<version> serve
//     one OpenAPI 3.0 document per group version, as JSON or protobuf.
//
// Schemas follow the conventions the Kubernetes clients rely on: component
// names derived from the Go package path (io.k8s.api.core.v1.Pod), the
// x-kubernetes-group-version-kind extension on top-level kinds and on every
// operation, x-kubernetes-patch-strategy / x-kubernetes-patch-merge-key taken
// from the struct tags (used by kubectl apply's strategic merge patches), and
// the dryRun / fieldManager / fieldValidation query parameters on writes,
// which tell kubectl that field validation happens on the server.
//
// Descriptions come from the SwaggerDoc methods generated into k8s.io/api,
// model names from OpenAPIModelName where a type has one. Markers that only
// exist as Go comments (+listType, +listMapKey, +enum, +default) are not
// visible at run time, so x-kubernetes-list-type and friends are not
// emitted. Structured-merge-diff (server-side apply, Definitions) reads a
// list with patch strategy merge as x-kubernetes-list-type=map keyed by its
// merge key (a set without one), as Kubernetes does; other lists are atomic.
package openapi
