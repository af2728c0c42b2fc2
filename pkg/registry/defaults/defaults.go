package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// Default fills in the server-side defaults for obj in place. It is safe to
// call on a nil object, on an object that has already been defaulted (it is
// idempotent) and on kinds this package does not know (no-op).
func Default(obj runtime.Object) {
	switch o := obj.(type) {
	// core/v1
	case *corev1.Pod:
		if o != nil {
			defaultPod(o)
		}
	case *corev1.PodTemplate:
		if o != nil {
			defaultPodTemplateSpec(&o.Template)
		}
	case *corev1.Service:
		if o != nil {
			defaultService(o)
		}
	case *corev1.Namespace:
		if o != nil {
			defaultNamespace(o)
		}
	case *corev1.Node:
		if o != nil {
			defaultNode(o)
		}
	case *corev1.Secret:
		if o != nil {
			defaultSecret(o)
		}
	case *corev1.Endpoints:
		if o != nil {
			defaultEndpoints(o)
		}
	case *corev1.PersistentVolume:
		if o != nil {
			defaultPersistentVolume(o)
		}
	case *corev1.PersistentVolumeClaim:
		if o != nil {
			defaultPersistentVolumeClaim(o)
		}
	case *corev1.ReplicationController:
		if o != nil {
			defaultReplicationController(o)
		}

	// apps/v1
	case *appsv1.Deployment:
		if o != nil {
			defaultDeployment(o)
		}
	case *appsv1.ReplicaSet:
		if o != nil {
			defaultReplicaSet(o)
		}
	case *appsv1.DaemonSet:
		if o != nil {
			defaultDaemonSet(o)
		}
	case *appsv1.StatefulSet:
		if o != nil {
			defaultStatefulSet(o)
		}

	// batch/v1
	case *batchv1.Job:
		if o != nil {
			defaultJob(o)
		}
	case *batchv1.CronJob:
		if o != nil {
			defaultCronJob(o)
		}

	// autoscaling/v2
	case *autoscalingv2.HorizontalPodAutoscaler:
		if o != nil {
			defaultHPA(o)
		}

	// discovery.k8s.io/v1
	case *discoveryv1.EndpointSlice:
		if o != nil {
			defaultEndpointSlice(o)
		}

	// storage.k8s.io/v1
	case *storagev1.StorageClass:
		if o != nil {
			defaultStorageClass(o)
		}

	// certificates.k8s.io/v1
	case *certificatesv1.CertificateSigningRequest:
		if o != nil {
			defaultCSR(o)
		}

	// minik8s.io/v1
	case *minik8sv1.DNSRecord:
		if o != nil {
			defaultDNSRecord(o)
		}
	}
	// ConfigMap, Event, ServiceAccount, Lease, Ingress and unknown kinds have
	// no server-side defaults worth applying.
}
