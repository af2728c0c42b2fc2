package authz

import (
	"maps"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The users minik8s's own components run as. Each is bound to a
// ClusterRole of its own name holding what that component does and no
// more, as Kubernetes bootstraps system:kube-scheduler and the
// controllers' roles.
const (
	UserScheduler         = "system:kube-scheduler"
	UserControllerManager = "system:kube-controller-manager"
	UserPrometheus        = "system:minik8s:prometheus"
	UserGateway           = "system:minik8s:gateway"
	UserFunctions         = "system:minik8s:functions"
	UserHostServices      = "system:minik8s:host-services"
	// UserSharedStorage is the GlusterFS provisioner (pkg/glusterfs'
	// ProvisionerCN, which its server admits too).
	UserSharedStorage = "system:minik8s:glusterfs-provisioner"
)

// ControllerRolePrefix names a controller's ClusterRole:
// system:controller:<its service account in kube-system>.
const ControllerRolePrefix = "system:controller:"

var (
	apps      = []string{"apps"}
	batch     = []string{"batch"}
	storage   = []string{"storage.k8s.io"}
	minik8sIO = []string{"minik8s.io"}
	discovery = []string{"discovery.k8s.io"}
	every     = []string{"*"}
	crud      = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	readPatch = []string{"get", "list", "watch", "update", "patch"}
)

// eventsRule lets a component record Events (both APIs).
func eventsRule() rbacv1.PolicyRule {
	return rule([]string{"create", "update", "patch"}, []string{"", "events.k8s.io"}, "events")
}

// leaseRule lets a component hold a leader-election Lease.
func leaseRule() rbacv1.PolicyRule {
	return rule([]string{"get", "list", "watch", "create", "update", "patch"}, []string{"coordination.k8s.io"}, "leases")
}

// ControllerRoles are the controller manager's controllers' roles, by
// the name of each one's service account in kube-system.
func ControllerRoles() map[string][]rbacv1.PolicyRule {
	podWriter := rule([]string{"get", "list", "watch", "create", "delete", "patch"}, core, "pods")
	return map[string][]rbacv1.PolicyRule{
		"namespace-controller": {
			rule([]string{"get", "list", "watch", "delete"}, core, "namespaces"),
			rule([]string{"update"}, core, "namespaces/finalize", "namespaces/status"),
			rule([]string{"get", "list", "watch", "delete", "deletecollection"}, every, "*"),
		},
		"node-controller": { // nodeipam and nodelifecycle, as in Kubernetes
			rule([]string{"get", "list", "watch", "update", "patch", "delete"}, core, "nodes"),
			rule([]string{"update", "patch"}, core, "nodes/status"),
			rule([]string{"get", "list", "watch", "delete"}, core, "pods"),
			rule([]string{"update", "patch"}, core, "pods/status"),
			eventsRule(),
		},
		"certificate-controller": { // csrapproving, csrsigning and csrcleaner
			rule([]string{"get", "list", "watch", "delete"}, []string{"certificates.k8s.io"}, "certificatesigningrequests", "podcertificaterequests"),
			rule([]string{"update"}, []string{"certificates.k8s.io"}, "certificatesigningrequests/approval", "certificatesigningrequests/status"),
			{Verbs: []string{"approve"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
				ResourceNames: []string{"kubernetes.io/kube-apiserver-client-kubelet"}},
			{Verbs: []string{"sign"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"},
				ResourceNames: []string{"kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"}},
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "subjectaccessreviews"),
			eventsRule(),
		},
		"replicaset-controller": {
			rule(readPatch, apps, "replicasets"),
			rule([]string{"update"}, apps, "replicasets/status", "replicasets/finalizers"),
			podWriter, eventsRule(),
		},
		"replication-controller": {
			rule([]string{"get", "list", "watch", "update"}, core, "replicationcontrollers"),
			rule([]string{"update"}, core, "replicationcontrollers/status", "replicationcontrollers/finalizers"),
			rule([]string{"list", "watch", "patch", "create", "delete"}, core, "pods"),
			eventsRule(),
		},
		"deployment-controller": {
			rule(readPatch, apps, "deployments"),
			rule([]string{"update"}, apps, "deployments/status", "deployments/finalizers"),
			rule(crud, apps, "replicasets"),
			rule([]string{"get", "list", "watch", "update"}, core, "pods"),
			eventsRule(),
		},
		"daemon-set-controller": {
			rule([]string{"get", "list", "watch"}, apps, "daemonsets"),
			rule([]string{"update"}, apps, "daemonsets/status", "daemonsets/finalizers"),
			rule([]string{"list", "watch"}, core, "nodes"),
			podWriter, rule([]string{"create"}, core, "pods/binding"),
			rule(crud, apps, "controllerrevisions"),
			eventsRule(),
		},
		"statefulset-controller": {
			rule([]string{"get", "list", "watch"}, apps, "statefulsets"),
			rule([]string{"update"}, apps, "statefulsets/status", "statefulsets/finalizers"),
			rule(crud, core, "pods"),
			rule(crud, apps, "controllerrevisions"),
			rule([]string{"get", "list", "watch", "create", "update", "patch"}, core, "persistentvolumeclaims"),
			eventsRule(),
		},
		"disruption-controller": {
			rule([]string{"get", "list", "watch"}, apps, "deployments", "replicasets", "statefulsets"),
			rule([]string{"get", "list", "watch"}, core, "replicationcontrollers", "pods"),
			rule([]string{"get", "list", "watch"}, []string{"policy"}, "poddisruptionbudgets"),
			rule([]string{"update"}, []string{"policy"}, "poddisruptionbudgets/status"),
			rule([]string{"get"}, every, "*/scale"),
			eventsRule(),
		},
		"endpoint-controller": {
			rule([]string{"get", "list", "watch"}, core, "services", "pods"),
			rule([]string{"get", "list", "watch", "create", "update", "delete"}, core, "endpoints"),
			rule([]string{"create"}, core, "endpoints/restricted"),
			eventsRule(),
		},
		"endpointslice-controller": {
			rule([]string{"get", "list", "watch"}, core, "services", "pods", "nodes"),
			rule([]string{"update"}, core, "services/finalizers"),
			rule([]string{"get", "list", "watch", "create", "update", "delete"}, discovery, "endpointslices"),
			eventsRule(),
		},
		"endpointslicemirroring-controller": {
			rule([]string{"get", "list", "watch"}, core, "services", "endpoints"),
			rule([]string{"update"}, core, "endpoints/finalizers"),
			rule([]string{"get", "list", "watch", "create", "update", "delete"}, discovery, "endpointslices"),
			eventsRule(),
		},
		"job-controller": {
			rule(readPatch, batch, "jobs"),
			rule([]string{"update"}, batch, "jobs/status", "jobs/finalizers"),
			podWriter, eventsRule(),
		},
		"cronjob-controller": {
			rule(readPatch, batch, "cronjobs"),
			rule([]string{"update"}, batch, "cronjobs/status", "cronjobs/finalizers"),
			rule(crud, batch, "jobs"),
			rule([]string{"list", "watch", "delete"}, core, "pods"),
			eventsRule(),
		},
		"ttl-after-finished-controller": {
			rule([]string{"get", "list", "watch", "delete"}, batch, "jobs"),
			eventsRule(),
		},
		"resourcequota-controller": {
			rule([]string{"list", "watch"}, every, "*"),
			rule([]string{"update"}, core, "resourcequotas/status"),
			eventsRule(),
		},
		"generic-garbage-collector": {
			rule([]string{"get", "list", "watch", "patch", "update", "delete"}, every, "*"),
			eventsRule(),
		},
		"clusterrole-aggregation-controller": {
			rule([]string{"escalate", "get", "list", "watch", "update", "patch"}, []string{rbacv1.GroupName}, "clusterroles"),
		},
		"service-account-controller": {
			rule([]string{"create"}, core, "serviceaccounts"),
			eventsRule(),
		},
		"root-ca-cert-publisher": {
			rule([]string{"create", "update"}, core, "configmaps"),
			eventsRule(),
		},
		"pod-garbage-collector": {
			rule([]string{"list", "watch", "delete"}, core, "pods"),
			rule([]string{"patch", "update"}, core, "pods/status"),
			rule([]string{"get", "list"}, core, "nodes"),
			eventsRule(),
		},
		"persistent-volume-binder": {
			rule([]string{"get", "list", "watch", "create", "update", "delete"}, core, "persistentvolumes"),
			rule([]string{"update"}, core, "persistentvolumes/status"),
			rule([]string{"get", "list", "watch", "update"}, core, "persistentvolumeclaims"),
			rule([]string{"update"}, core, "persistentvolumeclaims/status"),
			rule([]string{"get", "list", "watch"}, core, "pods", "nodes"),
			rule([]string{"get", "list", "watch"}, storage, "storageclasses"),
			eventsRule(),
		},
		"pv-protection-controller": {
			rule([]string{"get", "list", "watch", "update"}, core, "persistentvolumes"),
			eventsRule(),
		},
		"pvc-protection-controller": {
			rule([]string{"get", "list", "watch", "update"}, core, "persistentvolumeclaims"),
			rule([]string{"get", "list", "watch"}, core, "pods"),
			eventsRule(),
		},
		"local-path-provisioner": {
			rule([]string{"get", "list", "watch", "create", "delete"}, core, "persistentvolumes"),
			rule([]string{"get", "list", "watch", "update"}, core, "persistentvolumeclaims"),
			rule([]string{"get", "list", "watch"}, core, "nodes"),
			rule([]string{"get", "list", "watch"}, storage, "storageclasses"),
			eventsRule(),
		},
		"horizontal-pod-autoscaler": {
			rule([]string{"get", "list", "watch"}, []string{"autoscaling"}, "horizontalpodautoscalers"),
			rule([]string{"update"}, []string{"autoscaling"}, "horizontalpodautoscalers/status"),
			rule([]string{"get", "update"}, every, "*/scale"),
			rule([]string{"list", "watch"}, core, "pods"),
			rule([]string{"list", "watch"}, []string{"metrics.k8s.io"}, "pods"),
			eventsRule(),
		},
		// minik8s's own: workflows, their runs (which call functions
		// through the router) and triggers, which watch any kind a user
		// names as an event source.
		"workflow-controller": {
			rule(readPatch, minik8sIO, "workflows"),
			rule([]string{"update", "patch"}, minik8sIO, "workflows/status"),
			rule([]string{"get", "list", "watch"}, minik8sIO, "functions"),
			eventsRule(),
		},
		"workflow-engine": {
			rule([]string{"get", "list", "watch"}, minik8sIO, "workflows", "functions"),
			rule(crud, minik8sIO, "workflowruns"),
			rule([]string{"update", "patch"}, minik8sIO, "workflowruns/status"),
			rule([]string{"get", "list", "watch"}, core, "endpoints", "services"),
			rule([]string{"create", "get"}, core, "services/proxy"),
			eventsRule(),
		},
		"trigger-controller": {
			rule(readPatch, minik8sIO, "triggers"),
			rule([]string{"update", "patch"}, minik8sIO, "triggers/status"),
			rule(crud, minik8sIO, "workflowruns"),
			rule([]string{"get", "list", "watch"}, every, "*"),
			rule([]string{"create", "get"}, core, "services/proxy"),
			eventsRule(),
		},
	}
}

// componentRoles are the ClusterRoles of the users above, by user.
func componentRoles() map[string][]rbacv1.PolicyRule {
	hostServices := []rbacv1.PolicyRule{
		rule([]string{"get", "list", "watch", "create", "update", "patch"}, core, "services", "endpoints"),
		rule([]string{"get", "list", "watch", "create", "update", "patch"}, discovery, "endpointslices"),
		rule([]string{"get"}, core, "nodes"),
	}
	return map[string][]rbacv1.PolicyRule{
		UserScheduler: {
			eventsRule(), leaseRule(),
			rule([]string{"get", "list", "watch"}, core, "nodes", "namespaces", "services", "replicationcontrollers",
				"persistentvolumeclaims", "persistentvolumes"),
			rule([]string{"get", "list", "watch", "delete"}, core, "pods"),
			rule([]string{"create"}, core, "pods/binding", "bindings"),
			rule([]string{"patch", "update"}, core, "pods/status"),
			rule([]string{"patch", "update"}, core, "persistentvolumeclaims", "persistentvolumes"),
			rule([]string{"get", "list", "watch"}, apps, "replicasets", "statefulsets"),
			rule([]string{"get", "list", "watch"}, []string{"policy"}, "poddisruptionbudgets"),
			rule([]string{"get", "list", "watch"}, storage, "storageclasses", "csinodes", "csidrivers", "csistoragecapacities"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "tokenreviews"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "subjectaccessreviews"),
		},
		// The controller manager's own credential: its shared informers
		// read everything; it gives each controller the token of that
		// controller's service account.
		UserControllerManager: {
			eventsRule(), leaseRule(),
			rule([]string{"list", "watch"}, every, "*"),
			rule([]string{"get", "create", "update"}, core, "serviceaccounts"),
			rule([]string{"create"}, core, "serviceaccounts/token"),
			rule([]string{"get"}, core, "namespaces", "configmaps"),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, "tokenreviews"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, "subjectaccessreviews"),
		},
		// Prometheus' kubernetes_sd_configs and its scrapes of the
		// apiserver and, through it, the kubelets.
		UserPrometheus: {
			rule([]string{"get", "list", "watch"}, core, "nodes", "nodes/metrics", "services", "endpoints", "pods"),
			rule([]string{"get"}, core, "nodes/proxy"),
			rule([]string{"get", "list", "watch"}, discovery, "endpointslices"),
			rule([]string{"get", "list", "watch"}, []string{"networking.k8s.io"}, "ingresses"),
			urls([]string{"get"}, "/metrics", "/metrics/cadvisor"),
		},
		UserGateway: {
			rule([]string{"get", "list", "watch"}, core, "services", "endpoints", "nodes"),
			rule([]string{"get", "list", "watch"}, discovery, "endpointslices"),
			rule([]string{"get", "list", "watch"}, []string{"networking.k8s.io"}, "ingresses", "ingressclasses"),
			rule([]string{"update", "patch"}, []string{"networking.k8s.io"}, "ingresses/status"),
			rule([]string{"get", "list", "watch"}, minik8sIO, "dnsrecords"),
			rule([]string{"update", "patch"}, minik8sIO, "dnsrecords/status"),
			eventsRule(),
		},
		// The function builder, router and autoscaler (pkg/serverless),
		// and the HTTP triggers of workflows it serves.
		UserFunctions: append(slices.Clone(hostServices),
			rule(readPatch, minik8sIO, "functions"),
			rule([]string{"get", "list", "watch"}, minik8sIO, "workflows", "triggers"),
			rule([]string{"get", "list", "watch", "create"}, minik8sIO, "workflowruns"),
			rule([]string{"update", "patch"}, minik8sIO, "functions/status"),
			rule(crud, apps, "deployments"),
			rule([]string{"get", "update", "patch"}, apps, "deployments/scale"),
			rule([]string{"get", "list", "watch"}, apps, "replicasets"),
			rule([]string{"get", "list", "watch"}, core, "pods", "configmaps"),
			rule([]string{"delete"}, core, "services"),
			eventsRule(), leaseRule(),
		),
		UserHostServices: hostServices,
		UserSharedStorage: {
			rule([]string{"get", "list", "watch", "create", "delete"}, core, "persistentvolumes"),
			rule([]string{"get", "list", "watch"}, core, "persistentvolumeclaims"),
			rule([]string{"get", "list", "watch", "create"}, storage, "storageclasses"),
			eventsRule(),
		},
	}
}

// componentPolicy is the roles and bindings of minik8s's components and
// controllers, in a stable order.
func componentPolicy() ([]*rbacv1.ClusterRole, []*rbacv1.ClusterRoleBinding) {
	var roles []*rbacv1.ClusterRole
	var bindings []*rbacv1.ClusterRoleBinding
	add := func(name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) {
		roles = append(roles, withRules(name, nil, rules...))
		bindings = append(bindings, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: []rbacv1.Subject{subject}})
	}
	users := componentRoles()
	for _, u := range slices.Sorted(maps.Keys(users)) {
		add(u, users[u], rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	controllers := ControllerRoles()
	for _, sa := range slices.Sorted(maps.Keys(controllers)) {
		add(ControllerRolePrefix+sa, controllers[sa], rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: metav1.NamespaceSystem})
	}
	return roles, bindings
}
