package endpoints

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/controller/podutil"
)

// Well-known labels and annotations, as Kubernetes names them.
const (
	// LabelHeadless marks the Endpoints of a headless Service.
	LabelHeadless = corev1.IsHeadlessService
	// AnnotationLastChangeTriggerTime is when the change to a pod or
	// Service that this version of the Endpoints reflects happened.
	AnnotationLastChangeTriggerTime = corev1.EndpointsLastChangeTriggerTime
)

// Reconcile brings the Endpoints of the Service key names in line with
// the pods its selector matches; it deletes them when the Service is gone.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	trigger := c.takeTrigger(key)
	if err := c.sync(ctx, ns, name, trigger); err != nil {
		c.putTrigger(key, trigger)
		return err
	}
	return nil
}

func (c *Controller) sync(ctx context.Context, ns, name string, trigger time.Time) error {
	svc, err := c.svcLister.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		err = c.Client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete endpoints %s/%s: %w", ns, name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
		// The user's Endpoints (or none): not this controller's business.
		return nil
	}
	pods, err := c.podLister.Pods(ns).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	subsets := Subsets(svc, pods)
	cur, err := c.epLister.Endpoints(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	want := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if cur != nil {
		want = cur.DeepCopy()
	}
	want.Labels = endpointsLabels(svc, want.Labels)
	want.Subsets = subsets
	if cur != nil && equality.Semantic.DeepEqual(cur.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(normalize(cur.Subsets), subsets) {
		return nil
	}
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	if !trigger.IsZero() {
		want.Annotations[AnnotationLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
	} else {
		delete(want.Annotations, AnnotationLastChangeTriggerTime)
	}
	if cur == nil {
		_, err = c.Client.CoreV1().Endpoints(ns).Create(ctx, want, metav1.CreateOptions{})
	} else {
		_, err = c.Client.CoreV1().Endpoints(ns).Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write endpoints %s/%s: %w", ns, name, err)
	}
	return nil
}

// endpointsLabels are the Service's labels, and the headless label when
// it is headless, over the Endpoints' own (kept otherwise).
func endpointsLabels(svc *corev1.Service, cur map[string]string) map[string]string {
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, svc.Labels)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		out[LabelHeadless] = ""
	} else if _, ok := svc.Labels[LabelHeadless]; !ok {
		delete(out, LabelHeadless)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Subsets is what the Endpoints of svc hold given the pods its selector
// matches: one subset per set of ports, in a canonical order.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	publishNotReady := svc.Spec.PublishNotReadyAddresses
	type group struct {
		ports           []corev1.EndpointPort
		ready, notReady []corev1.EndpointAddress
	}
	groups := map[string]*group{}
	for _, pod := range pods {
		if !ShouldBeInEndpoints(pod, publishNotReady) {
			continue
		}
		ip := podIP(svc, pod)
		if ip == "" {
			continue
		}
		var ports []corev1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, err := FindPort(pod, sp)
			if err != nil {
				continue
			}
			ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: n, Protocol: cmp.Or(sp.Protocol, corev1.ProtocolTCP), AppProtocol: sp.AppProtocol})
		}
		if len(ports) == 0 && (len(svc.Spec.Ports) > 0 || svc.Spec.ClusterIP != corev1.ClusterIPNone) {
			// Serves none of the ports; only a headless Service without
			// ports lists addresses alone.
			continue
		}
		sortPorts(ports)
		k := portsKey(ports)
		g := groups[k]
		if g == nil {
			g = &group{ports: ports}
			groups[k] = g
		}
		addr := corev1.EndpointAddress{
			IP: ip, Hostname: Hostname(pod, svc),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.NodeName != "" {
			addr.NodeName = &pod.Spec.NodeName
		}
		if publishNotReady || podutil.IsReady(pod) {
			g.ready = append(g.ready, addr)
		} else {
			g.notReady = append(g.notReady, addr)
		}
	}
	var out []corev1.EndpointSubset
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		sortAddresses(g.ready)
		sortAddresses(g.notReady)
		out = append(out, corev1.EndpointSubset{Addresses: g.ready, NotReadyAddresses: g.notReady, Ports: g.ports})
	}
	return out
}

// normalize is subsets in the order Subsets produces (for comparing
// what another writer left).
func normalize(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	out := make([]corev1.EndpointSubset, len(subsets))
	for i, s := range subsets {
		s = *s.DeepCopy()
		sortPorts(s.Ports)
		sortAddresses(s.Addresses)
		sortAddresses(s.NotReadyAddresses)
		out[i] = s
	}
	slices.SortStableFunc(out, func(a, b corev1.EndpointSubset) int { return strings.Compare(portsKey(a.Ports), portsKey(b.Ports)) })
	if len(out) == 0 {
		return nil
	}
	return out
}

func sortPorts(ports []corev1.EndpointPort) {
	slices.SortFunc(ports, func(a, b corev1.EndpointPort) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(string(a.Protocol), string(b.Protocol)))
	})
}

func portsKey(ports []corev1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		app := ""
		if p.AppProtocol != nil {
			app = *p.AppProtocol
		}
		fmt.Fprintf(&b, "%s/%d/%s/%s;", p.Name, p.Port, p.Protocol, app)
	}
	return b.String()
}

func sortAddresses(addrs []corev1.EndpointAddress) {
	slices.SortFunc(addrs, func(a, b corev1.EndpointAddress) int {
		an, bn := "", ""
		if a.TargetRef != nil {
			an = a.TargetRef.Name
		}
		if b.TargetRef != nil {
			bn = b.TargetRef.Name
		}
		return cmp.Or(strings.Compare(a.IP, b.IP), strings.Compare(an, bn))
	})
}

// podIP is pod's IP of svc's primary IP family: the family of its
// cluster IP, or its first ipFamily when headless; the pod's primary IP
// when svc names no family.
func podIP(svc *corev1.Service, pod *corev1.Pod) string {
	var wantV6 bool
	switch {
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone:
		wantV6 = podutil.IsV6(svc.Spec.ClusterIP)
	case len(svc.Spec.IPFamilies) > 0:
		wantV6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	default:
		return pod.Status.PodIP
	}
	return podutil.IPOfFamily(pod, wantV6)
}
