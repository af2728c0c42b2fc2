// Package function is the function controller: it turns each Function
// (minik8s.io/v1) into a running revision. It reads the function's files
// (inline, or a ConfigMap, zips unpacked), and when they or the settings
// that shape an instance change, checks the code, has the next revision's
// image built and pushed (Builder), and points the function's Deployment
// (fn-<name>) and Service at it. It reports the revision, image, URL,
// instance counts and the Ready condition (BuildFailed, SyntaxError,
// HandlerNotFound, SourceNotFound, InstanceFailed with the Python error)
// in the Function's status, and deletes the function's images before its
// finalizer lets it go.
//
// It owns the Deployment's template, never its replicas: those are the
// autoscaler's (pkg/serverless/autoscale). The Deployment, the Service
// and the source ConfigMap carry ownerReferences to the Function, so the
// garbage collector removes them with it.
package function
