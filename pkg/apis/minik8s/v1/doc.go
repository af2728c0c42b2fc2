// Package v1 owns the minik8s.io/v1 API kinds: minik8s' own resources,
// served by the apiserver beside the Kubernetes ones (DNSRecord, the host
// name and URL paths the gateway routes to Services).
//
// It holds the types, their deep copies (generated: run go generate here
// after changing a type) and their scheme registration; defaulting,
// validation and printing live with the built-in kinds' in
// pkg/registry/defaults, pkg/registry/validation and pkg/registry/printers.
//
// +k8s:deepcopy-gen=package
// +groupName=minik8s.io
package v1

//go:generate go run k8s.io/code-generator/cmd/deepcopy-gen@v0.37.2 --output-file zz_generated.deepcopy.go --go-header-file /dev/null .
