// Package podenv resolves what a pod's containers see from the API,
// independent of how they run: environment variables (env, envFrom,
// valueFrom with fieldRef, resourceFieldRef, configMapKeyRef,
// secretKeyRef, $(VAR) expansion, service link variables) and the files
// of configMap, secret and downwardAPI volumes, as Kubernetes' kubelet
// computes them.
//
// It only reads the API (ConfigMaps, Secrets, Services); writing the
// files and starting the containers is the provider's.
package podenv
