package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
	"github.com/minik8s/minik8s/pkg/controller/kit"
	"github.com/minik8s/minik8s/pkg/serverless/fnmeta"
	"github.com/minik8s/minik8s/pkg/workflow/asl"
	"github.com/minik8s/minik8s/pkg/workflow/wfmeta"
)

// ConditionReady is a Workflow's condition: whether every Task's
// Function or Workflow exists.
const ConditionReady = "Ready"

// WorkflowController reports each Workflow's Task resources and whether
// they exist.
type WorkflowController struct {
	kit.Base
	api       dynamic.NamespaceableResourceInterface
	informers dynamicinformer.DynamicSharedInformerFactory
	workflows cache.SharedIndexInformer
	functions cache.SharedIndexInformer
}

// NewWorkflowController builds the workflow controller; informers may be
// shared with the run controller (nil: its own).
func NewWorkflowController(kc *kit.Context, dyn dynamic.Interface, informers dynamicinformer.DynamicSharedInformerFactory) (*WorkflowController, error) {
	if dyn == nil {
		dyn = kc.Dynamic
	}
	if dyn == nil {
		return nil, errors.New("workflow controller: a dynamic client is required")
	}
	if informers == nil {
		informers = dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	}
	c := &WorkflowController{Base: kc.NewBase("workflow", "workflow", 2, "workflow-engine"),
		api: dyn.Resource(wfmeta.WorkflowResource), informers: informers,
		workflows: informers.ForResource(wfmeta.WorkflowResource).Informer(),
		functions: informers.ForResource(fnmeta.Resource).Informer()}
	c.Loop.Reconcile = c.sync
	// A workflow's Ready depends on the functions and workflows of its
	// namespace: any of them coming or going queues the namespace's
	// workflows.
	namespace := func(obj any) {
		m, err := metaOf(obj)
		if err != nil {
			return
		}
		for _, o := range c.workflows.GetIndexer().List() {
			if wf := o.(metav1.Object); wf.GetNamespace() == m.GetNamespace() {
				c.Queue.Add(wf.GetNamespace() + "/" + wf.GetName())
			}
		}
	}
	self := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.Queue.Add(key)
		}
	}
	if err := c.Loop.Watch(c.workflows, cache.ResourceEventHandlerFuncs{
		AddFunc: namespace, UpdateFunc: func(_, obj any) { self(obj) }, DeleteFunc: namespace}); err != nil {
		return nil, err
	}
	if err := c.Loop.Watch(c.functions, cache.ResourceEventHandlerFuncs{AddFunc: namespace, DeleteFunc: namespace}); err != nil {
		return nil, err
	}
	return c, nil
}

// Start runs the informers and the loop until ctx ends.
func (c *WorkflowController) Start(ctx context.Context) error {
	c.informers.Start(ctx.Done())
	return c.Base.Start(ctx)
}

func (c *WorkflowController) sync(ctx context.Context, key string) error {
	obj, ok, err := c.workflows.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return err
	}
	wf := &minik8sv1.Workflow{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, wf); err != nil {
		return err
	}
	st := wf.Status.DeepCopy()
	st.ObservedGeneration = wf.Generation
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: wf.Generation}
	m, errs := asl.Parse(wf.Spec.Definition.Raw, field.NewPath("spec", "definition"))
	if len(errs) > 0 {
		st.Resources = nil
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "InvalidDefinition", errs.ToAggregate().Error()
	} else {
		st.Resources = m.Resources()
		var missing []string
		for _, r := range st.Resources {
			kind, name := wfmeta.SplitResource(r)
			inf := c.functions
			if kind == "workflow" {
				inf = c.workflows
			}
			if _, ok, _ := inf.GetIndexer().GetByKey(wf.Namespace + "/" + name); !ok {
				missing = append(missing, kind+" "+name)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			cond.Status, cond.Reason = metav1.ConditionFalse, "ResourceNotFound"
			cond.Message = fmt.Sprintf("Task resources that do not exist in namespace %s: %s; runs fail at those states until they do",
				wf.Namespace, strings.Join(missing, ", "))
		} else {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, "ResourcesFound", "every Task's function and workflow exists"
		}
	}
	apimeta.SetStatusCondition(&st.Conditions, cond)
	if equality.Semantic.DeepEqual(st, &wf.Status) {
		return nil
	}
	wf.Status = *st
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(wf)
	if err != nil {
		return err
	}
	out := &unstructured.Unstructured{Object: u}
	out.SetAPIVersion(minik8sv1.SchemeGroupVersion.String())
	out.SetKind("Workflow")
	_, err = c.api.Namespace(wf.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{})
	return err
}
