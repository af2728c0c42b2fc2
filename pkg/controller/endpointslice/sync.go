package endpointslice

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/endpoints"
	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// errStaleCache: the informer has not yet shown the controller's own
// last writes for a Service; the sync is retried shortly.
var errStaleCache = errors.New("endpointslice cache behind the controller's writes")

// Reconcile brings the EndpointSlices of the Service key names in line
// with the pods its selector matches; it deletes them when the Service is
// gone or has no selector.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	existing, err := c.sliceLister.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName,
	}))
	if err != nil {
		return err
	}
	byName := make(map[string]*discoveryv1.EndpointSlice, len(existing))
	for _, s := range existing {
		byName[s.Name] = s
	}
	if c.written.behind(key, byName) {
		return errStaleCache
	}
	svc, err := c.svcLister.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return c.apply(ctx, key, plan{deletes: existing})
	}
	if err != nil {
		return err
	}
	if len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return c.apply(ctx, key, plan{deletes: existing})
	}
	pods, err := c.podLister.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	return c.apply(ctx, key, c.reconcile(svc, Desired(svc, pods), existing))
}

// group is the endpoints of one address type that share one port set.
type group struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   []discoveryv1.Endpoint
}

func groupKey(at discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	b.WriteString(string(at))
	for _, p := range ports {
		fmt.Fprintf(&b, ";%s/%d/%s/%s", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0),
			ptr.Deref(p.Protocol, ""), ptr.Deref(p.AppProtocol, ""))
	}
	return b.String()
}

// AddressTypes are the address types of svc's slices: its ipFamilies,
// else the family of its cluster IP; both for a headless Service that
// names none.
func AddressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		if f == corev1.IPv6Protocol {
			out = append(out, discoveryv1.AddressTypeIPv6)
		} else {
			out = append(out, discoveryv1.AddressTypeIPv4)
		}
	}
	switch {
	case len(out) > 0:
		return out
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone:
		if podutil.IsV6(svc.Spec.ClusterIP) {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	default:
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
	}
}

// Desired is the endpoints svc's slices should hold given the pods its
// selector matches, grouped by address type and port set (by groupKey).
func Desired(svc *corev1.Service, pods []*corev1.Pod) map[string]*group {
	out := map[string]*group{}
	for _, at := range AddressTypes(svc) {
		for _, pod := range pods {
			if !endpoints.ShouldBeInEndpoints(pod, true) {
				continue
			}
			ip := podIP(pod, at)
			if ip == "" {
				continue
			}
			ports := podPorts(svc, pod)
			k := groupKey(at, ports)
			g := out[k]
			if g == nil {
				g = &group{addressType: at, ports: ports}
				out[k] = g
			}
			g.endpoints = append(g.endpoints, podEndpoint(svc, pod, ip))
		}
	}
	for _, g := range out {
		slices.SortFunc(g.endpoints, func(a, b discoveryv1.Endpoint) int { return strings.Compare(epKey(a), epKey(b)) })
	}
	return out
}

func podPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	var out []discoveryv1.EndpointPort
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, err := endpoints.FindPort(pod, sp)
		if err != nil {
			continue
		}
		out = append(out, discoveryv1.EndpointPort{
			Name: ptr.To(sp.Name), Port: ptr.To(n), Protocol: ptr.To(cmp.Or(sp.Protocol, corev1.ProtocolTCP)),
			AppProtocol: sp.AppProtocol,
		})
	}
	sortPorts(out)
	return out
}

func sortPorts(ports []discoveryv1.EndpointPort) {
	slices.SortFunc(ports, func(a, b discoveryv1.EndpointPort) int {
		return cmp.Or(strings.Compare(ptr.Deref(a.Name, ""), ptr.Deref(b.Name, "")),
			cmp.Compare(ptr.Deref(a.Port, 0), ptr.Deref(b.Port, 0)),
			strings.Compare(string(ptr.Deref(a.Protocol, "")), string(ptr.Deref(b.Protocol, ""))))
	})
}

func podEndpoint(svc *corev1.Service, pod *corev1.Pod, ip string) discoveryv1.Endpoint {
	serving := svc.Spec.PublishNotReadyAddresses || podutil.IsReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ep := discoveryv1.Endpoint{
		Addresses: []string{ip},
		Conditions: discoveryv1.EndpointConditions{
			// Never ready while terminating, unless the Service publishes
			// not-ready addresses (as Kubernetes has it).
			Ready:       ptr.To(svc.Spec.PublishNotReadyAddresses || (serving && !terminating)),
			Serving:     ptr.To(serving),
			Terminating: ptr.To(terminating),
		},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if h := endpoints.Hostname(pod, svc); h != "" {
		ep.Hostname = ptr.To(h)
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = ptr.To(pod.Spec.NodeName)
	}
	return ep
}

// epKey identifies an endpoint across versions: its address.
func epKey(ep discoveryv1.Endpoint) string {
	if len(ep.Addresses) == 0 {
		return ""
	}
	return ep.Addresses[0]
}

func podIP(pod *corev1.Pod, at discoveryv1.AddressType) string {
	return podutil.IPOfFamily(pod, at == discoveryv1.AddressTypeIPv6)
}

// plan is the writes that bring a Service's slices to the desired state.
type plan struct {
	creates, updates, deletes []*discoveryv1.EndpointSlice
}

// reconcile plans the writes from the existing slices to desired: each
// existing slice keeps the endpoints it holds that are still wanted (in
// their new version), free room in existing slices is filled before new
// slices are made, and slices left empty are deleted.
func (c *Controller) reconcile(svc *corev1.Service, desired map[string]*group, existing []*discoveryv1.EndpointSlice) plan {
	var p plan
	byGroup := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !metav1.IsControlledBy(s, svc) {
			// Left by an earlier Service of the same name.
			p.deletes = append(p.deletes, s)
			continue
		}
		ports := slices.Clone(s.Ports)
		sortPorts(ports)
		k := groupKey(s.AddressType, ports)
		byGroup[k] = append(byGroup[k], s)
	}
	total := 0
	for _, g := range desired {
		total += len(g.endpoints)
	}
	if total == 0 {
		return c.placeholder(svc, byGroup, p)
	}
	for _, k := range slices.Sorted(maps.Keys(byGroup)) {
		if desired[k] == nil {
			p.deletes = append(p.deletes, byGroup[k]...)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(desired)) {
		g := desired[k]
		want := make(map[string]discoveryv1.Endpoint, len(g.endpoints))
		for _, ep := range g.endpoints {
			want[epKey(ep)] = ep
		}
		type kept struct {
			slice     *discoveryv1.EndpointSlice
			endpoints []discoveryv1.Endpoint
			changed   bool
		}
		var keep []*kept
		for _, s := range sortedByName(byGroup[k]) {
			kp := &kept{slice: s}
			for _, ep := range s.Endpoints {
				w, ok := want[epKey(ep)]
				if !ok {
					kp.changed = true
					continue
				}
				delete(want, epKey(ep))
				if !equality.Semantic.DeepEqual(w, ep) {
					kp.changed = true
				}
				kp.endpoints = append(kp.endpoints, w)
			}
			keep = append(keep, kp)
		}
		var rest []discoveryv1.Endpoint
		for _, ep := range g.endpoints {
			if _, ok := want[epKey(ep)]; ok {
				rest = append(rest, ep)
			}
		}
		for _, kp := range keep {
			for len(rest) > 0 && len(kp.endpoints) < c.maxPerSlice {
				kp.endpoints = append(kp.endpoints, rest[0])
				rest = rest[1:]
				kp.changed = true
			}
			if len(kp.endpoints) == 0 {
				p.deletes = append(p.deletes, kp.slice)
				continue
			}
			s := kp.slice.DeepCopy()
			s.Endpoints = kp.endpoints
			c.setMeta(svc, s)
			if kp.changed || !equality.Semantic.DeepEqual(s.ObjectMeta, kp.slice.ObjectMeta) {
				p.updates = append(p.updates, s)
			}
		}
		for len(rest) > 0 {
			n := min(len(rest), c.maxPerSlice)
			p.creates = append(p.creates, c.newSlice(svc, g.addressType, g.ports, rest[:n]))
			rest = rest[n:]
		}
	}
	return p
}

// placeholder plans the one empty slice a Service without endpoints
// keeps, reusing an existing slice of its primary address type.
func (c *Controller) placeholder(svc *corev1.Service, byGroup map[string][]*discoveryv1.EndpointSlice, p plan) plan {
	at := AddressTypes(svc)[0]
	var reuse *discoveryv1.EndpointSlice
	for _, k := range slices.Sorted(maps.Keys(byGroup)) {
		for _, s := range sortedByName(byGroup[k]) {
			if reuse == nil && s.AddressType == at {
				reuse = s
				continue
			}
			p.deletes = append(p.deletes, s)
		}
	}
	if reuse == nil {
		p.creates = append(p.creates, c.newSlice(svc, at, nil, nil))
		return p
	}
	s := reuse.DeepCopy()
	s.Endpoints, s.Ports = nil, nil
	c.setMeta(svc, s)
	if !equality.Semantic.DeepEqual(s, reuse) {
		p.updates = append(p.updates, s)
	}
	return p
}

func sortedByName(ss []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	return slices.SortedFunc(slices.Values(ss), func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
}

func (c *Controller) newSlice(svc *corev1.Service, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	prefix := svc.Name
	if len(prefix) > 57 {
		prefix = prefix[:57]
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{GenerateName: prefix + "-", Namespace: svc.Namespace},
		AddressType: at,
		Endpoints:   slices.Clone(eps),
		Ports:       ports,
	}
	c.setMeta(svc, s)
	return s
}

// setMeta gives s the labels and controller reference of svc's slices:
// the Service's labels, the headless label when it is headless, the
// service-name and managed-by labels.
func (c *Controller) setMeta(svc *corev1.Service, s *discoveryv1.EndpointSlice) {
	l := map[string]string{}
	for k, v := range svc.Labels {
		if k != discoveryv1.LabelServiceName && k != discoveryv1.LabelManagedBy && k != corev1.IsHeadlessService {
			l[k] = v
		}
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		l[corev1.IsHeadlessService] = ""
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = ControllerName
	s.Labels = l
	ref := *metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))
	if !metav1.IsControlledBy(s, svc) {
		s.OwnerReferences = append(slices.DeleteFunc(slices.Clone(s.OwnerReferences),
			func(r metav1.OwnerReference) bool { return r.Controller != nil && *r.Controller }), ref)
	}
}

// apply makes p's writes: creations and updates before deletions, so the
// Service's endpoints never all vanish at once.
func (c *Controller) apply(ctx context.Context, key string, p plan) error {
	api := c.Client.DiscoveryV1().EndpointSlices
	var errs []error
	for _, s := range p.creates {
		got, err := api(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("create endpointslice for %s: %w", key, err))
			continue
		}
		c.written.record(key, got.Name, got.ResourceVersion, false)
	}
	for _, s := range p.updates {
		got, err := api(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("update endpointslice %s/%s: %w", s.Namespace, s.Name, err))
			continue
		}
		c.written.record(key, got.Name, got.ResourceVersion, false)
	}
	for _, s := range p.deletes {
		err := api(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(s.UID))})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete endpointslice %s/%s: %w", s.Namespace, s.Name, err))
			continue
		}
		c.written.record(key, s.Name, "", true)
	}
	return errors.Join(errs...)
}
