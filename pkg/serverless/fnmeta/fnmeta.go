// Package fnmeta holds the names and labels the serverless parts agree
// on: what the function controller creates for a Function, how the router
// finds its instances and what the autoscaler scales. It owns no
// behaviour.
package fnmeta

import minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"

// Labels on every instance (pod) of a function.
const (
	// FunctionLabel is the function's name on its Deployment, Service and pods.
	FunctionLabel = "minik8s.io/function"
	// RevisionLabel is the revision (status.revision, decimal) a pod runs.
	RevisionLabel = "minik8s.io/function-revision"
)

// Port is where the runtime server listens in every instance; PortName
// names it on the container.
const (
	Port     = 8080
	PortName = "http"
)

// Defaults of a Function's spec (applied by the registry).
const (
	DefaultHandler          = "main.handle"
	DefaultMinScale         = 0
	DefaultMaxScale         = 10
	DefaultTarget           = 4
	DefaultScaleToZeroAfter = "30s"
	DefaultTimeout          = "60s"
)

// Runtimes are the runtimes a Function may name.
var Runtimes = []string{"python3", "python3-ml"}

// DeploymentName and ServiceName name what the function controller
// creates for a function (owned by it).
func DeploymentName(fn string) string { return "fn-" + fn }
func ServiceName(fn string) string    { return "fn-" + fn }

// Repository is a function's image repository in the cluster's registry.
func Repository(namespace, fn string) string { return "functions/" + namespace + "/" + fn }

// Path is a function's path on the gateway and the router.
func Path(namespace, fn string) string { return "/function/" + namespace + "/" + fn }

// RouterService is the Service the router is published as (kube-system),
// port 80: the gateway and `kubectl fn invoke` reach functions through it.
const (
	RouterNamespace = "kube-system"
	RouterService   = "minik8s-functions"
)

// Resource is the Function resource of minik8s.io/v1.
var Resource = minik8sv1.SchemeGroupVersion.WithResource("functions")
