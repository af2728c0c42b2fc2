// Package endpointslicemirroring mirrors the Endpoints a user writes for a
// Service without a selector into EndpointSlices, as Kubernetes'
// endpointslicemirroring controller does, so that clients reading only
// EndpointSlices (our proxy, CoreDNS) see those endpoints too.
package endpointslicemirroring

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	utilnet "k8s.io/utils/net"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/controller/loop"
)

// ControllerName is the managed-by label value of the mirrored slices.
const ControllerName = "endpointslicemirroring-controller.k8s.io"

// SkipMirrorLabel on an Endpoints keeps it from being mirrored.
const SkipMirrorLabel = "endpointslice.kubernetes.io/skip-mirror"

// maxEndpointsPerSubset is how many addresses of one subset Kubernetes
// mirrors.
const maxEndpointsPerSubset = 1000

// Controller keeps one EndpointSlice per subset and address family of
// every mirrored Endpoints.
type Controller struct {
	kit.Base
	svcLister   corelisters.ServiceLister
	epLister    corelisters.EndpointsLister
	sliceLister discoverylisters.EndpointSliceLister
}

// New wires the controller to kc's Service, Endpoints and EndpointSlice
// informers.
func New(kc *kit.Context) (*Controller, error) {
	svcInf, epInf := kc.Factory.Core().V1().Services(), kc.Factory.Core().V1().Endpoints()
	sliceInf := kc.Factory.Discovery().V1().EndpointSlices()
	b := kc.NewBase("endpointslicemirroring", "endpoints", 2, "")
	c := &Controller{Base: b, svcLister: svcInf.Lister(), epLister: epInf.Lister(), sliceLister: sliceInf.Lister()}
	b.Loop.Reconcile = c.Reconcile
	b.Loop.Quiet = func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	return c, errors.Join(
		b.Loop.Watch(svcInf.Informer(), loop.KeyHandler(c.Queue)),
		b.Loop.Watch(epInf.Informer(), loop.KeyHandler(c.Queue)),
		b.Loop.Watch(sliceInf.Informer(), kit.ServiceSlicesHandler(ControllerName, c.Queue)))
}

// Reconcile makes the mirrored slices of namespace/name what its
// Endpoints say, or removes them when it is not to be mirrored.
func (c *Controller) Reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	desired := map[string]*discoveryv1.EndpointSlice{}
	if ep, mirror := c.toMirror(ns, name); mirror {
		desired = Mirror(ep)
	}
	existing, err := c.sliceLister.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelManagedBy: ControllerName, discoveryv1.LabelServiceName: name,
	}))
	if err != nil {
		return err
	}
	slices := c.Client.DiscoveryV1().EndpointSlices(ns)
	var errs []error
	for _, s := range existing {
		want, ok := desired[s.Name]
		if !ok {
			if err := slices.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		delete(desired, s.Name)
		if apiequality.Semantic.DeepEqual(want.Endpoints, s.Endpoints) && apiequality.Semantic.DeepEqual(want.Ports, s.Ports) &&
			maps.Equal(want.Labels, s.Labels) && want.AddressType == s.AddressType {
			continue
		}
		if want.AddressType != s.AddressType { // immutable: replace
			if err := slices.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			desired[s.Name] = want
			continue
		}
		update := s.DeepCopy()
		update.Endpoints, update.Ports, update.Labels, update.OwnerReferences = want.Endpoints, want.Ports, want.Labels, want.OwnerReferences
		if _, err := slices.Update(ctx, update, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range desired {
		if _, err := slices.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// toMirror is the Endpoints of namespace/name when Kubernetes would mirror
// it: its Service exists and has no selector (the endpointslice
// controller serves those with one), and it does not opt out.
func (c *Controller) toMirror(ns, name string) (*corev1.Endpoints, bool) {
	svc, err := c.svcLister.Services(ns).Get(name)
	if err != nil || svc.Spec.Selector != nil {
		return nil, false
	}
	ep, err := c.epLister.Endpoints(ns).Get(name)
	if err != nil || ep.Labels[SkipMirrorLabel] == "true" || ep.DeletionTimestamp != nil {
		return nil, false
	}
	return ep, true
}

// Mirror is the slices of ep, by name: one per subset and address family,
// owned by ep, labelled as ep plus the service name and managed-by.
func Mirror(ep *corev1.Endpoints) map[string]*discoveryv1.EndpointSlice {
	out := map[string]*discoveryv1.EndpointSlice{}
	lbls := map[string]string{}
	for k, v := range ep.Labels {
		if k != SkipMirrorLabel && k != discoveryv1.LabelManagedBy {
			lbls[k] = v
		}
	}
	lbls[discoveryv1.LabelServiceName] = ep.Name
	lbls[discoveryv1.LabelManagedBy] = ControllerName
	owner := metav1.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))
	for i, subset := range ep.Subsets {
		byFamily := map[discoveryv1.AddressType][]discoveryv1.Endpoint{}
		add := func(a corev1.EndpointAddress, ready bool) {
			family := discoveryv1.AddressTypeIPv4
			if utilnet.IsIPv6String(a.IP) {
				family = discoveryv1.AddressTypeIPv6
			} else if !utilnet.IsIPv4String(a.IP) {
				return
			}
			if len(byFamily[family]) >= maxEndpointsPerSubset {
				return
			}
			e := discoveryv1.Endpoint{Addresses: []string{a.IP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
				NodeName: a.NodeName, TargetRef: a.TargetRef}
			if a.Hostname != "" {
				e.Hostname = ptr.To(a.Hostname)
			}
			byFamily[family] = append(byFamily[family], e)
		}
		for _, a := range subset.Addresses {
			add(a, true)
		}
		for _, a := range subset.NotReadyAddresses {
			add(a, false)
		}
		var ports []discoveryv1.EndpointPort
		for _, p := range subset.Ports {
			ports = append(ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port), Protocol: ptr.To(p.Protocol), AppProtocol: p.AppProtocol})
		}
		for family, endpoints := range byFamily {
			name := sliceName(ep.Name, i, family)
			out[name] = &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ep.Namespace, Labels: maps.Clone(lbls), OwnerReferences: []metav1.OwnerReference{*owner}},
				AddressType: family, Endpoints: endpoints, Ports: ports,
			}
		}
	}
	return out
}

// sliceName is the slice of one subset and family: a stable name, so a
// sync on a cache behind the controller's own writes cannot make a
// second slice.
func sliceName(endpoints string, subset int, family discoveryv1.AddressType) string {
	suffix := fmt.Sprintf("-mirror-%d-%s", subset, strings.ToLower(string(family)))
	if max := 253 - len(suffix); len(endpoints) > max {
		endpoints = endpoints[:max]
	}
	return endpoints + suffix
}
