package authz

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Node identities, as Kubernetes names them.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// ClusterConfigName is the ConfigMap in kube-system every node reads
// (pkg/clusterconfig.Name; not imported, to keep this package below it).
const ClusterConfigName = "minik8s-cluster-config"

const podsByNode = "spec.nodeName"

// Node authorizes kubelets: what Kubernetes' Node authorizer and
// NodeRestriction admission allow them, by the pods bound to each node.
type Node struct {
	pods    cache.Indexer
	volumes corelisters.PersistentVolumeLister
	synced  []cache.InformerSynced
	// live reads what the caches do not have yet (a pod bound a moment
	// ago): a denial must not come from a cache that lags.
	live kubernetes.Interface
}

// NewNode reads pods and volumes from f (the caller starts f) and, on a
// cache miss, through live.
func NewNode(f informers.SharedInformerFactory, live kubernetes.Interface) (*Node, error) {
	podInf := f.Core().V1().Pods().Informer()
	if err := podInf.AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	pvInf := f.Core().V1().PersistentVolumes()
	return &Node{pods: podInf.GetIndexer(), volumes: pvInf.Lister(), live: live,
		synced: []cache.InformerSynced{podInf.HasSynced, pvInf.Informer().HasSynced}}, nil
}

// nodeName is the node a user is, or "".
func nodeName(u User) string {
	name, ok := strings.CutPrefix(u.Name, NodeUserPrefix)
	if !ok || !slices.Contains(u.Groups, NodesGroup) {
		return ""
	}
	return name
}

// Authorize allows a node what a kubelet needs, and only for itself and
// its pods; everything else is left to the other authorizers.
func (n *Node) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	node := nodeName(a.User)
	if node == "" || !a.IsResource {
		return NoOpinion, "", nil
	}
	allow := func(ok bool, why string) (Decision, string, error) {
		if ok {
			return Allow, "", nil
		}
		return NoOpinion, why, nil
	}
	read := a.Verb == "get" || a.Verb == "list" || a.Verb == "watch"
	noRelation := "no relationship found between node '" + node + "' and this object"
	switch a.APIGroup + "/" + a.Resource {
	case "/nodes":
		switch {
		case a.Subresource != "" && a.Subresource != "status":
			// nodes/proxy reaches any kubelet with the apiserver's
			// certificate, which kubelets trust: never a node's.
			return NoOpinion, "node '" + node + "' cannot reach kubelets through the apiserver", nil
		case read:
			return Allow, "", nil
		case a.Verb == "create":
			// The object's name is not in the URL: a node registers its
			// own (the kubelet) and the apiserver does not read bodies here.
			return Allow, "", nil
		case a.Subresource == "" || a.Subresource == "status":
			return allow(a.Name == node && a.Verb != "deletecollection", "node '"+node+"' can only modify its own Node object")
		}
	case "/pods":
		switch {
		case a.Subresource == "" && read:
			return Allow, "", nil
		case a.Subresource == "status" && (a.Verb == "update" || a.Verb == "patch" || a.Verb == "get"):
			return allow(n.podOnNode(ctx, a.Namespace, a.Name, node), "node '"+node+"' can only update the status of its own pods")
		case a.Subresource == "" && a.Verb == "delete":
			return allow(n.podOnNode(ctx, a.Namespace, a.Name, node), "node '"+node+"' can only delete its own pods")
		case a.Subresource == "" && (a.Verb == "update" || a.Verb == "patch"):
			// Virtual nodes (the Slurm provider) annotate their pods with
			// the job they became; the spec stays immutable.
			return allow(n.podOnNode(ctx, a.Namespace, a.Name, node), "node '"+node+"' can only modify its own pods")
		case a.Subresource == "eviction" && a.Verb == "create":
			return Allow, "", nil
		}
	case "/secrets", "/configmaps":
		if a.Verb != "get" {
			return NoOpinion, "", nil
		}
		if a.Resource == "configmaps" && a.Namespace == "kube-system" && a.Name == ClusterConfigName {
			return Allow, "", nil
		}
		return allow(n.podUses(ctx, node, a.Namespace, func(p *corev1.Pod) bool { return podRefers(p, a.Resource, a.Name) }), noRelation)
	case "/persistentvolumeclaims":
		if a.Verb != "get" || a.Subresource != "" {
			return NoOpinion, "", nil
		}
		return allow(n.podUses(ctx, node, a.Namespace, func(p *corev1.Pod) bool { return podRefers(p, "persistentvolumeclaims", a.Name) }), noRelation)
	case "/persistentvolumes":
		// A volume names no secret; the node-side local-path reaper lists
		// them and deletes the ones on this node it removed the directory of.
		if read {
			return Allow, "", nil
		}
		return allow(a.Verb == "delete" && n.volumeOnNode(a.Name, node), "node '"+node+"' can only delete volumes on itself")
	case "/serviceaccounts":
		// Tokens for its pods' service accounts, and reading those (their
		// UIDs go in the pods' PodCertificateRequests).
		if !(a.Subresource == "token" && a.Verb == "create") && !(a.Subresource == "" && a.Verb == "get") {
			return NoOpinion, "", nil
		}
		return allow(n.podUses(ctx, node, a.Namespace, func(p *corev1.Pod) bool { return serviceAccountOf(p) == a.Name }), noRelation)
	case "/services", "discovery.k8s.io/endpointslices":
		return allow(read, "")
	case "/endpoints":
		// GlusterFS volumes name their server by an Endpoints object.
		return allow(a.Verb == "get", "")
	case "/events", "events.k8s.io/events":
		return allow(a.Verb == "create" || a.Verb == "update" || a.Verb == "patch", "")
	case "coordination.k8s.io/leases":
		if a.Namespace != corev1.NamespaceNodeLease {
			return NoOpinion, "", nil
		}
		return allow(a.Verb == "create" || (a.Name == node && (read || a.Verb == "update" || a.Verb == "patch" || a.Verb == "delete")),
			"node '"+node+"' can only access its own Lease")
	case "certificates.k8s.io/clustertrustbundles":
		// Public trust anchors that projected volumes carry.
		return allow(read, "")
	case "certificates.k8s.io/podcertificaterequests":
		// What a node asks for its pods: the NodeRestriction admission
		// checks that the request is for a pod bound to it. A node never
		// writes the status (the signer's).
		// It reads the requests made for it, to see them issued.
		if a.Subresource != "" {
			return NoOpinion, "nodes may not access the status subresource of PodCertificateRequests", nil
		}
		if a.Verb == "get" {
			return allow(n.requestForNode(ctx, a.Namespace, a.Name, node), noRelation)
		}
		return allow(a.Verb == "create", "")
	case "certificates.k8s.io/certificatesigningrequests":
		// Renewal of its own certificate (the approver checks whose).
		return allow(a.Subresource == "" && (a.Verb == "create" || read), "")
	}
	return NoOpinion, "", nil
}

// volumeOnNode says whether volume name's required node affinity is
// node's hostname alone.
func (n *Node) volumeOnNode(name, node string) bool {
	pv, err := n.volumes.Get(name)
	if err != nil {
		p, err := n.live.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		pv = p
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) != 1 {
		return false
	}
	for _, e := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions {
		if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && slices.Equal(e.Values, []string{node}) {
			return true
		}
	}
	return false
}

func (n *Node) cachesSynced() bool {
	for _, s := range n.synced {
		if !s() {
			return false
		}
	}
	return true
}

// podOnNode says whether pod ns/name is bound to node (or gone: deleting
// what is not there is harmless).
func (n *Node) podOnNode(ctx context.Context, ns, name, node string) bool {
	if obj, ok, _ := n.pods.GetByKey(ns + "/" + name); ok && n.cachesSynced() {
		if p := obj.(*corev1.Pod); p.Spec.NodeName == node {
			return true
		}
	}
	p, err := n.live.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && p.Spec.NodeName == node
}

// requestForNode says whether PodCertificateRequest ns/name was made
// for node (or is gone: its absence is no secret of another node).
func (n *Node) requestForNode(ctx context.Context, ns, name, node string) bool {
	r, err := n.live.CertificatesV1().PodCertificateRequests(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && string(r.Spec.NodeName) == node
}

// podUses says whether a pod in ns bound to node satisfies uses: the
// cache first, then a live list of the node's pods.
func (n *Node) podUses(ctx context.Context, node, ns string, uses func(*corev1.Pod) bool) bool {
	objs, _ := n.pods.ByIndex(podsByNode, node)
	for _, o := range objs {
		if p := o.(*corev1.Pod); p.Namespace == ns && uses(p) {
			return true
		}
	}
	list, err := n.live.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return false
	}
	for i := range list.Items {
		if uses(&list.Items[i]) {
			return true
		}
	}
	return false
}

func serviceAccountOf(p *corev1.Pod) string {
	if p.Spec.ServiceAccountName != "" {
		return p.Spec.ServiceAccountName
	}
	return "default"
}

// podRefers says whether the pod names the object (secrets, configmaps
// or persistentvolumeclaims) name: in volumes, projections, env and
// image pull secrets.
func podRefers(p *corev1.Pod, resource, name string) bool {
	found := false
	check := func(r, n string) {
		if r == resource && n == name {
			found = true
		}
	}
	for _, s := range p.Spec.ImagePullSecrets {
		check("secrets", s.Name)
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			check("secrets", v.Secret.SecretName)
		case v.ConfigMap != nil:
			check("configmaps", v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			check("persistentvolumeclaims", v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			check("persistentvolumeclaims", p.Name+"-"+v.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					check("secrets", s.Secret.Name)
				}
				if s.ConfigMap != nil {
					check("configmaps", s.ConfigMap.Name)
				}
			}
		}
	}
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil {
					check("secrets", e.SecretRef.Name)
				}
				if e.ConfigMapRef != nil {
					check("configmaps", e.ConfigMapRef.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if e.ValueFrom.SecretKeyRef != nil {
					check("secrets", e.ValueFrom.SecretKeyRef.Name)
				}
				if e.ValueFrom.ConfigMapKeyRef != nil {
					check("configmaps", e.ValueFrom.ConfigMapKeyRef.Name)
				}
			}
		}
	}
	for _, c := range p.Spec.EphemeralContainers {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				check("secrets", e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				check("configmaps", e.ConfigMapRef.Name)
			}
		}
	}
	return found
}
