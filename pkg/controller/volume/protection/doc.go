// Package protection holds Kubernetes' storage object in use protection
// controllers. The apiserver puts kubernetes.io/pvc-protection on every
// new PersistentVolumeClaim and kubernetes.io/pv-protection on every new
// PersistentVolume, so that deleting one only marks it; these
// controllers remove the finalizer once nothing uses the object:
//
//   - PVC protection: a claim being deleted stays while a pod of its
//     namespace that is scheduled and not finished (Succeeded or Failed)
//     names it in spec.volumes; it goes once the last such pod is gone.
//     A pod not yet scheduled does not hold it (the kubelet refuses to
//     start a pod whose claim is being deleted).
//   - PV protection: a volume being deleted stays while it is Bound.
//
// They only ever remove their own finalizer; they never add one, and
// never write anything else.
package protection
