package registry

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// Builtin is the table of Kubernetes kinds minik8s serves.
func Builtin() []*Resource {
	return []*Resource{
		{GroupVersionResource: gvr("", "v1", "namespaces"), Kind: "Namespace", ShortNames: []string{"ns"}, Status: true,
			FieldLabels: namespaceFields, NoGeneration: true},
		{GroupVersionResource: gvr("", "v1", "nodes"), Kind: "Node", ShortNames: []string{"no"}, Status: true,
			FieldLabels: nodeFields, NoGeneration: true},
		{GroupVersionResource: gvr("", "v1", "pods"), Kind: "Pod", Namespaced: true, ShortNames: []string{"po"},
			Categories: []string{"all"}, Status: true, Binding: true, FieldLabels: podFields,
			GracefulDelete: podGracefulDelete},
		{GroupVersionResource: gvr("", "v1", "services"), Kind: "Service", Namespaced: true, ShortNames: []string{"svc"},
			Categories: []string{"all"}, Status: true, FieldLabels: serviceFields, NoGeneration: true,
			PrepareForUpdate: keepServiceAllocations},
		{GroupVersionResource: gvr("", "v1", "endpoints"), Kind: "Endpoints", Namespaced: true, ShortNames: []string{"ep"}, NoGeneration: true},
		{GroupVersionResource: gvr("", "v1", "configmaps"), Kind: "ConfigMap", Namespaced: true, ShortNames: []string{"cm"}, NoGeneration: true},
		{GroupVersionResource: gvr("", "v1", "secrets"), Kind: "Secret", Namespaced: true, Encrypted: true,
			FieldLabels: secretFields, NoGeneration: true},
		{GroupVersionResource: gvr("", "v1", "events"), Kind: "Event", Namespaced: true, ShortNames: []string{"ev"},
			FieldLabels: eventFields, NoGeneration: true},
		{GroupVersionResource: gvr("", "v1", "serviceaccounts"), Kind: "ServiceAccount", Namespaced: true, ShortNames: []string{"sa"}, NoGeneration: true},
		{GroupVersionResource: gvr("", "v1", "persistentvolumes"), Kind: "PersistentVolume", ShortNames: []string{"pv"}, Status: true, NoGeneration: true},
		{GroupVersionResource: gvr("", "v1", "persistentvolumeclaims"), Kind: "PersistentVolumeClaim", Namespaced: true,
			ShortNames: []string{"pvc"}, Status: true, NoGeneration: true},
		{GroupVersionResource: gvr("apps", "v1", "deployments"), Kind: "Deployment", Namespaced: true, ShortNames: []string{"deploy"},
			Categories: []string{"all"}, Status: true, Scale: deploymentScale},
		{GroupVersionResource: gvr("apps", "v1", "replicasets"), Kind: "ReplicaSet", Namespaced: true, ShortNames: []string{"rs"},
			Categories: []string{"all"}, Status: true, Scale: replicaSetScale, FieldLabels: replicaSetFields},
		{GroupVersionResource: gvr("batch", "v1", "jobs"), Kind: "Job", Namespaced: true, Categories: []string{"all"}, Status: true,
			FieldLabels: jobFields, PrepareForCreate: generateJobSelector},
		{GroupVersionResource: gvr("batch", "v1", "cronjobs"), Kind: "CronJob", Namespaced: true, ShortNames: []string{"cj"},
			Categories: []string{"all"}, Status: true},
		{GroupVersionResource: gvr("autoscaling", "v2", "horizontalpodautoscalers"), Kind: "HorizontalPodAutoscaler", Namespaced: true,
			ShortNames: []string{"hpa"}, Categories: []string{"all"}, Status: true},
		{GroupVersionResource: gvr("discovery.k8s.io", "v1", "endpointslices"), Kind: "EndpointSlice", Namespaced: true, NoGeneration: true},
		{GroupVersionResource: gvr("coordination.k8s.io", "v1", "leases"), Kind: "Lease", Namespaced: true, NoGeneration: true},
		{GroupVersionResource: gvr("storage.k8s.io", "v1", "storageclasses"), Kind: "StorageClass", ShortNames: []string{"sc"}, NoGeneration: true},
		{GroupVersionResource: gvr("networking.k8s.io", "v1", "ingresses"), Kind: "Ingress", Namespaced: true, ShortNames: []string{"ing"},
			Status: true},
		{GroupVersionResource: gvr("certificates.k8s.io", "v1", "certificatesigningrequests"), Kind: "CertificateSigningRequest",
			ShortNames: []string{"csr"}, Status: true, NoGeneration: true, FieldLabels: csrFields,
			CreatedBy: csrCreatedBy, PrepareForUpdate: csrKeepSpec, PrepareForStatusUpdate: csrKeepApproval, Approval: csrKeepAllButApproval},
	}
}

func namespaceFields(obj runtime.Object) fields.Set {
	ns := obj.(*corev1.Namespace)
	return fields.Set{"status.phase": string(ns.Status.Phase)}
}

func nodeFields(obj runtime.Object) fields.Set {
	n := obj.(*corev1.Node)
	return fields.Set{"spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable)}
}

func podFields(obj runtime.Object) fields.Set {
	p := obj.(*corev1.Pod)
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

func serviceFields(obj runtime.Object) fields.Set {
	s := obj.(*corev1.Service)
	return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
}

func secretFields(obj runtime.Object) fields.Set {
	return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
}

func eventFields(obj runtime.Object) fields.Set {
	e := obj.(*corev1.Event)
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}

func replicaSetFields(obj runtime.Object) fields.Set {
	return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
}

func jobFields(obj runtime.Object) fields.Set {
	return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
}

// podGracefulDelete: a pod bound to a node stays (Terminating) until its
// kubelet has stopped the containers and deletes it with grace 0.
func podGracefulDelete(obj runtime.Object, requested *int64) (int64, bool) {
	p := obj.(*corev1.Pod)
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	if requested != nil {
		grace = *requested
	}
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return 0, false
	}
	if grace == 0 {
		return 0, false
	}
	return grace, true
}

var deploymentScale = &ScaleAccessor{
	Get: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
		d := obj.(*appsv1.Deployment)
		return replicas(d.Spec.Replicas), d.Status.Replicas, d.Spec.Selector
	},
	Set: func(obj runtime.Object, n int32) { obj.(*appsv1.Deployment).Spec.Replicas = &n },
}

var replicaSetScale = &ScaleAccessor{
	Get: func(obj runtime.Object) (int32, int32, *metav1.LabelSelector) {
		rs := obj.(*appsv1.ReplicaSet)
		return replicas(rs.Spec.Replicas), rs.Status.Replicas, rs.Spec.Selector
	},
	Set: func(obj runtime.Object, n int32) { obj.(*appsv1.ReplicaSet).Spec.Replicas = &n },
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// ScaleOf renders obj's /scale subresource.
func ScaleOf(r *Resource, obj runtime.Object) (*autoscalingv1.Scale, error) {
	spec, status, sel := r.Scale.Get(obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	s := &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:       autoscalingv1.ScaleSpec{Replicas: spec},
		Status:     autoscalingv1.ScaleStatus{Replicas: status},
	}
	if sel != nil {
		if s2, err := metav1.LabelSelectorAsSelector(sel); err == nil {
			s.Status.Selector = s2.String()
		}
	}
	return s, nil
}

// keepServiceAllocations keeps the cluster IPs and node ports an update
// leaves out, as Kubernetes does: clients never have to echo allocations.
func keepServiceAllocations(obj, old runtime.Object) {
	svc, prev := obj.(*corev1.Service), old.(*corev1.Service)
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy = nil, nil
		return
	}
	if svc.Spec.ClusterIP == "" && prev.Spec.Type != corev1.ServiceTypeExternalName {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = prev.Spec.ClusterIP, prev.Spec.ClusterIPs
	}
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].NodePort != 0 {
			continue
		}
		for _, p := range prev.Spec.Ports {
			if p.Port == svc.Spec.Ports[i].Port && p.Protocol == svc.Spec.Ports[i].Protocol {
				svc.Spec.Ports[i].NodePort = p.NodePort
			}
		}
	}
}

// generateJobSelector gives a new Job, unless spec.manualSelector is set,
// the selector Kubernetes generates: its own UID, carried as labels by its
// pod template (prefixed and legacy forms), so its pods never match
// another Job's.
func generateJobSelector(obj runtime.Object) {
	job := obj.(*batchv1.Job)
	if ptr.Deref(job.Spec.ManualSelector, false) {
		return
	}
	uid := string(job.UID)
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		batchv1.ControllerUidLabel: uid, batchv1.JobNameLabel: job.Name,
		"controller-uid": uid, "job-name": job.Name,
	} {
		job.Spec.Template.Labels[k] = v
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}}
	}
}
