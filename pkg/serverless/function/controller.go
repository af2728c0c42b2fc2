package function

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/serverless/pyruntime"
)

// Finalizer holds a deleted Function until its images are gone from the
// registry.
const Finalizer = "minik8s.io/function-images"

// ConditionReady is the Function's condition.
const ConditionReady = "Ready"

// Builder checks, builds and deletes functions' images.
type Builder interface {
	// Check looks at the code without running it; a *BuildError says
	// what is wrong with it.
	Check(ctx context.Context, files map[string][]byte, handler string) error
	// Build builds and pushes a revision's image and returns its reference.
	Build(ctx context.Context, r Revision) (image string, err error)
	// Delete removes every image of the function.
	Delete(ctx context.Context, namespace, name string) error
}

// Revision is what one revision's image is built from.
type Revision struct {
	Namespace, Name  string
	Number           int64
	Runtime, Handler string
	Timeout          time.Duration
	Files            map[string][]byte
}

// BuildError is code that cannot become a revision; Reason (SyntaxError,
// HandlerNotFound, BuildFailed) and Message go into the Ready condition.
type BuildError struct {
	Reason, Message string
}

func (e *BuildError) Error() string { return e.Reason + ": " + e.Message }

// Config tunes the controller.
type Config struct {
	Dynamic dynamic.Interface
	// Functions is the Function informer (dynamic) the controller and
	// its neighbours share.
	Functions cache.SharedIndexInformer
	Builder   Builder
	// URLBase is what a function's URL starts with, before
	// /function/<namespace>/<name> (default http://minik8s-gateway.kube-system).
	URLBase string
	Workers int
}

// Controller is the function controller.
type Controller struct {
	kit.Base
	cfg         Config
	functions   Lister
	deployments appslisters.DeploymentLister
	services    corelisters.ServiceLister
	configMaps  corelisters.ConfigMapLister
	pods        corelisters.PodLister

	// built remembers each function's last build, so a sync that reads
	// the function from a cache behind its status write does not build
	// the same revision again.
	mu    sync.Mutex
	built map[types.UID]builtRevision
}

type builtRevision struct {
	hash, image string
	revision    int64
}

// NewFunctionInformer is the dynamic informer of Functions the serverless
// parts share.
func NewFunctionInformer(dyn dynamic.Interface) cache.SharedIndexInformer {
	return dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0).ForResource(fnmeta.Resource).Informer()
}

// New builds the controller on kc's informers.
func New(kc *kit.Context, cfg Config) (*Controller, error) {
	if cfg.Dynamic == nil || cfg.Functions == nil || cfg.Builder == nil {
		return nil, errors.New("function controller: a dynamic client, the function informer and a builder are required")
	}
	if cfg.URLBase == "" {
		cfg.URLBase = "http://minik8s-gateway.kube-system"
	}
	workers, err := kit.Workers("function", cfg.Workers, 2)
	if err != nil {
		return nil, err
	}
	c := &Controller{Base: kc.NewBase("function", "function", workers, "function-controller"), cfg: cfg,
		functions: Lister{Indexer: cfg.Functions.GetIndexer()}, built: map[types.UID]builtRevision{}}
	c.Loop.Reconcile = c.sync
	deps := kc.Factory.Apps().V1().Deployments()
	svcs := kc.Factory.Core().V1().Services()
	cms := kc.Factory.Core().V1().ConfigMaps()
	pods := kc.Factory.Core().V1().Pods()
	c.deployments, c.services, c.configMaps, c.pods = deps.Lister(), svcs.Lister(), cms.Lister(), pods.Lister()
	if err := c.Loop.Watch(cfg.Functions, c.keyHandler(func(obj any) []string {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			return []string{key}
		}
		return nil
	})); err != nil {
		return nil, err
	}
	owned := c.keyHandler(func(obj any) []string {
		m, err := metaOf(obj)
		if err != nil || m.GetLabels()[fnmeta.FunctionLabel] == "" {
			return nil
		}
		return []string{m.GetNamespace() + "/" + m.GetLabels()[fnmeta.FunctionLabel]}
	})
	for _, inf := range []cache.SharedIndexInformer{deps.Informer(), svcs.Informer(), pods.Informer()} {
		if err := c.Loop.Watch(inf, owned); err != nil {
			return nil, err
		}
	}
	// A ConfigMap's change reaches the functions whose source it is.
	if err := c.Loop.Watch(cms.Informer(), c.keyHandler(func(obj any) []string {
		m, err := metaOf(obj)
		if err != nil {
			return nil
		}
		var keys []string
		for _, fn := range c.functions.List() {
			if cm := fn.Spec.Source.ConfigMap; cm != nil && fn.Namespace == m.GetNamespace() && cm.Name == m.GetName() {
				keys = append(keys, fn.Namespace+"/"+fn.Name)
			}
		}
		return keys
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("not an object: %T", obj)
	}
	return o, nil
}

func (c *Controller) keyHandler(keys func(obj any) []string) cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		for _, k := range keys(obj) {
			c.Queue.Add(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	fn, ok := c.functions.Get(ns, name)
	if !ok {
		return nil
	}
	fn = fn.DeepCopy()
	if fn.DeletionTimestamp != nil {
		return c.finalize(ctx, fn)
	}
	if !slices.Contains(fn.Finalizers, Finalizer) {
		fn.Finalizers = append(fn.Finalizers, Finalizer)
		return c.update(ctx, fn)
	}
	status := fn.Status.DeepCopy()
	status.ObservedGeneration = fn.Generation
	status.URL = c.cfg.URLBase + fnmeta.Path(fn.Namespace, fn.Name)
	ready := c.build(ctx, fn, status)
	if ready.Status == metav1.ConditionUnknown {
		// The registry or the apiserver failed: retried with backoff.
		c.setStatus(ctx, fn, status, ready)
		return errors.New(ready.Message)
	}
	if status.Image != "" {
		if err := c.ensureService(ctx, fn); err != nil {
			return err
		}
		dep, err := c.ensureDeployment(ctx, fn, status)
		if err != nil {
			return err
		}
		status.Instances, status.ReadyInstances = dep.Status.Replicas, dep.Status.ReadyReplicas
		if ready.Status == metav1.ConditionTrue {
			if failed := c.failedInstance(fn, status); failed != nil {
				ready = *failed
			}
		}
	}
	return c.setStatus(ctx, fn, status, ready)
}

// build brings the status's revision up to the function's files and
// settings, building a new image when they changed, and says how ready
// the function is.
func (c *Controller) build(ctx context.Context, fn *minik8sv1.Function, status *minik8sv1.FunctionStatus) metav1.Condition {
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
		Message: "revision " + strconv.FormatInt(status.Revision, 10) + " serves", ObservedGeneration: fn.Generation}
	fail := func(reason, msg string) metav1.Condition {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, reason, msg
		return ready
	}
	var cm *corev1.ConfigMap
	if ref := fn.Spec.Source.ConfigMap; ref != nil {
		cm, _ = c.configMaps.ConfigMaps(fn.Namespace).Get(ref.Name)
	}
	fs, err := files(fn, cm)
	if err != nil {
		var se *SourceError
		if errors.As(err, &se) {
			return fail(se.Reason, se.Message)
		}
		return fail("InvalidSource", err.Error())
	}
	hash := revisionHash(fn, fs)
	if hash == status.SourceHash && status.Image != "" {
		return ready
	}
	c.mu.Lock()
	last, ok := c.built[fn.UID]
	c.mu.Unlock()
	if ok && last.hash == hash && last.revision > status.Revision {
		status.Revision, status.Image, status.SourceHash = last.revision, last.image, last.hash
		ready.Message = "revision " + strconv.FormatInt(last.revision, 10) + " serves"
		return ready
	}
	if err := c.cfg.Builder.Check(ctx, fs, fn.Spec.Handler); err != nil {
		var be *BuildError
		if errors.As(err, &be) {
			return fail(be.Reason, be.Message)
		}
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, "CheckFailed", err.Error()
		return ready
	}
	rev := status.Revision + 1
	start := c.Clock.Now()
	image, err := c.cfg.Builder.Build(ctx, Revision{Namespace: fn.Namespace, Name: fn.Name, Number: rev,
		Runtime: fn.Spec.Runtime, Handler: fn.Spec.Handler, Timeout: timeout(fn), Files: fs})
	if err != nil {
		var be *BuildError
		if errors.As(err, &be) {
			return fail(be.Reason, be.Message)
		}
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, "BuildFailed", err.Error()
		return ready
	}
	c.Recorder.Eventf(fn, corev1.EventTypeNormal, "Built", "Built revision %d in %s: %s", rev,
		c.Clock.Since(start).Round(time.Millisecond), image)
	status.Revision, status.Image, status.SourceHash = rev, image, hash
	c.mu.Lock()
	c.built[fn.UID] = builtRevision{hash: hash, image: image, revision: rev}
	c.mu.Unlock()
	ready.Message = "revision " + strconv.FormatInt(rev, 10) + " serves"
	return ready
}

// failedInstance is a Ready=False condition when an instance of the
// current revision ended with an error (a module that fails to import at
// run time): its termination message, the Python error, is the message.
func (c *Controller) failedInstance(fn *minik8sv1.Function, status *minik8sv1.FunctionStatus) *metav1.Condition {
	pods, err := c.pods.Pods(fn.Namespace).List(labels.SelectorFromSet(labels.Set{
		fnmeta.FunctionLabel: fn.Name, fnmeta.RevisionLabel: strconv.FormatInt(status.Revision, 10)}))
	if err != nil {
		return nil
	}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.LastTerminationState.Terminated
			if t == nil {
				t = cs.State.Terminated
			}
			if t != nil && t.ExitCode != 0 && !cs.Ready {
				msg := t.Message
				if msg == "" {
					msg = fmt.Sprintf("instance %s exited with code %d", p.Name, t.ExitCode)
				}
				reason := "InstanceFailed"
				if t.Message != "" {
					// The runtime server's own words: HandlerNotFound, ImportError...
					reason = pyruntime.StartupFailureReason(t.Message)
				}
				return &metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason,
					Message: msg, ObservedGeneration: fn.Generation}
			}
		}
	}
	return nil
}

func timeout(fn *minik8sv1.Function) time.Duration {
	if fn.Spec.Timeout != nil && fn.Spec.Timeout.Duration > 0 {
		return fn.Spec.Timeout.Duration
	}
	d, _ := time.ParseDuration(fnmeta.DefaultTimeout)
	return d
}

func ownerRef(fn *minik8sv1.Function) metav1.OwnerReference {
	return *metav1.NewControllerRef(fn, minik8sv1.SchemeGroupVersion.WithKind("Function"))
}

func (c *Controller) ensureService(ctx context.Context, fn *minik8sv1.Function) error {
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fnmeta.ServiceName(fn.Name), Namespace: fn.Namespace,
			Labels: map[string]string{fnmeta.FunctionLabel: fn.Name}, OwnerReferences: []metav1.OwnerReference{ownerRef(fn)}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{fnmeta.FunctionLabel: fn.Name},
			Ports: []corev1.ServicePort{{Name: fnmeta.PortName, Port: 80, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString(fnmeta.PortName)}},
		},
	}
	have, err := c.services.Services(fn.Namespace).Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.Client.CoreV1().Services(fn.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	case err != nil:
		return err
	case !metav1.IsControlledBy(have, fn):
		return fmt.Errorf("service %s/%s exists and is not the function's", fn.Namespace, want.Name)
	}
	return nil
}

func (c *Controller) ensureDeployment(ctx context.Context, fn *minik8sv1.Function, status *minik8sv1.FunctionStatus) (*appsv1.Deployment, error) {
	template := c.podTemplate(fn, status)
	have, err := c.deployments.Deployments(fn.Namespace).Get(fnmeta.DeploymentName(fn.Name))
	if apierrors.IsNotFound(err) {
		maxUnavailable, maxSurge := intstr.FromInt32(0), intstr.FromString("100%")
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fnmeta.DeploymentName(fn.Name), Namespace: fn.Namespace,
				Labels: map[string]string{fnmeta.FunctionLabel: fn.Name}, OwnerReferences: []metav1.OwnerReference{ownerRef(fn)}},
			Spec: appsv1.DeploymentSpec{
				// The autoscaler owns replicas from here on.
				Replicas: ptr.To(ptr.Deref(fn.Spec.Scale.MinScale, 0)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{fnmeta.FunctionLabel: fn.Name}},
				Template: template,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge}},
				RevisionHistoryLimit: ptr.To[int32](2),
			},
		}
		out, err := c.Client.AppsV1().Deployments(fn.Namespace).Create(ctx, dep, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return dep, nil
		}
		return out, err
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(have, fn) {
		return nil, fmt.Errorf("deployment %s/%s exists and is not the function's", fn.Namespace, have.Name)
	}
	if have.Annotations[templateAnnotation] == template.Annotations[templateAnnotation] {
		return have, nil
	}
	next := have.DeepCopy()
	next.Spec.Template = template
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[templateAnnotation] = template.Annotations[templateAnnotation]
	return c.Client.AppsV1().Deployments(fn.Namespace).Update(ctx, next, metav1.UpdateOptions{})
}

// templateAnnotation records, on the Deployment and its template, which
// revision and settings the template was made from, so an unchanged
// function does not rewrite it (the apiserver's defaults make a direct
// comparison noisy).
const templateAnnotation = "minik8s.io/function-template"

func (c *Controller) podTemplate(fn *minik8sv1.Function, status *minik8sv1.FunctionStatus) corev1.PodTemplateSpec {
	rev := strconv.FormatInt(status.Revision, 10)
	lbls := map[string]string{fnmeta.FunctionLabel: fn.Name, fnmeta.RevisionLabel: rev}
	grace := int64(timeout(fn)/time.Second) + 5
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: lbls,
			Annotations: map[string]string{templateAnnotation: status.SourceHash + "/" + rev}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			// Instances spread over the nodes, as a preference.
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
				WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{fnmeta.FunctionLabel: fn.Name}}}},
			Containers: []corev1.Container{{
				Name: "function", Image: status.Image, ImagePullPolicy: corev1.PullIfNotPresent,
				Env: fn.Spec.Env, Resources: fn.Spec.Resources,
				Ports: []corev1.ContainerPort{{Name: fnmeta.PortName, ContainerPort: fnmeta.Port, Protocol: corev1.ProtocolTCP}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(fnmeta.PortName)}},
					PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1,
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

func (c *Controller) setStatus(ctx context.Context, fn *minik8sv1.Function, status *minik8sv1.FunctionStatus, ready metav1.Condition) error {
	// SetStatusCondition keeps the transition time unless the status changes.
	ready.LastTransitionTime = metav1.NewTime(c.Clock.Now())
	apimeta.SetStatusCondition(&status.Conditions, ready)
	if equality.Semantic.DeepEqual(*status, fn.Status) {
		return nil
	}
	fn.Status = *status
	u, err := toUnstructured(fn)
	if err != nil {
		return err
	}
	_, err = c.cfg.Dynamic.Resource(fnmeta.Resource).Namespace(fn.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

func (c *Controller) update(ctx context.Context, fn *minik8sv1.Function) error {
	u, err := toUnstructured(fn)
	if err != nil {
		return err
	}
	_, err = c.cfg.Dynamic.Resource(fnmeta.Resource).Namespace(fn.Namespace).Update(ctx, u, metav1.UpdateOptions{})
	return err
}

// finalize deletes a deleted function's images, then lets it go.
func (c *Controller) finalize(ctx context.Context, fn *minik8sv1.Function) error {
	if !slices.Contains(fn.Finalizers, Finalizer) {
		return nil
	}
	if err := c.cfg.Builder.Delete(ctx, fn.Namespace, fn.Name); err != nil {
		return fmt.Errorf("delete the images of %s/%s: %w", fn.Namespace, fn.Name, err)
	}
	c.mu.Lock()
	delete(c.built, fn.UID)
	c.mu.Unlock()
	fn.Finalizers = slices.DeleteFunc(fn.Finalizers, func(f string) bool { return f == Finalizer })
	err := c.update(ctx, fn)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func toUnstructured(fn *minik8sv1.Function) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fn)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(minik8sv1.SchemeGroupVersion.String())
	u.SetKind("Function")
	return u, nil
}
