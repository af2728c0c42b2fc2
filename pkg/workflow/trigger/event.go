package trigger

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	minik8sv1 "github.com/minik8s/minik8s/pkg/apis/minik8s/v1"
)

// sourceKey is what one event informer watches: a resource in one
// namespace ("" for all namespaces, and for cluster-scoped kinds).
type sourceKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

func (k sourceKey) String() string {
	ns := k.namespace
	if ns == "" {
		ns = "*"
	}
	return k.gvr.String() + " in " + ns
}

// eventHandler gets the changes a source's informer sees after its
// initial list: typ is ADDED, MODIFIED or DELETED; old is the previous
// state of a MODIFIED object.
type eventHandler func(key sourceKey, typ string, obj, old *unstructured.Unstructured)

// source is one running event informer and the triggers that use it.
type source struct {
	cancel   context.CancelFunc
	informer cache.SharedIndexInformer
	triggers map[string]bool
}

// sources runs one informer per sourceKey that some trigger needs.
type sources struct {
	dyn    dynamic.Interface
	handle eventHandler
	log    *slog.Logger

	mu    sync.Mutex
	byKey map[sourceKey]*source
	of    map[string]sourceKey // trigger key -> its source
}

func newSources(dyn dynamic.Interface, h eventHandler, log *slog.Logger) *sources {
	return &sources{dyn: dyn, handle: h, log: log, byKey: map[sourceKey]*source{}, of: map[string]sourceKey{}}
}

// set makes trigger use the source key, starting its informer (until ctx
// ends) if no other trigger uses it, and releases the source it used
// before.
func (s *sources) set(ctx context.Context, trigger string, key sourceKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.of[trigger]; ok {
		if old == key {
			return
		}
		s.releaseLocked(trigger)
	}
	s.of[trigger] = key
	if src, ok := s.byKey[key]; ok {
		src.triggers[trigger] = true
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	inf := dynamicinformer.NewFilteredDynamicInformer(s.dyn, key.gvr, key.namespace, 0, cache.Indexers{}, nil).Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			// Objects there when the informer starts are not news.
			if u, ok := obj.(*unstructured.Unstructured); ok && !initial {
				s.handle(key, minik8sv1.EventAdded, u, nil)
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			u, ok1 := obj.(*unstructured.Unstructured)
			old, ok2 := oldObj.(*unstructured.Unstructured)
			if ok1 && ok2 {
				s.handle(key, minik8sv1.EventModified, u, old)
			}
		},
		DeleteFunc: func(obj any) {
			if u, ok := unwrap(obj).(*unstructured.Unstructured); ok {
				s.handle(key, minik8sv1.EventDeleted, u, nil)
			}
		},
	})
	if err != nil { // only when the informer has stopped: it has not started
		s.log.Error("event source handler", "source", key.String(), "err", err)
	}
	s.byKey[key] = &source{cancel: cancel, informer: inf, triggers: map[string]bool{trigger: true}}
	s.log.Info("watching event source", "source", key.String())
	go inf.RunWithContext(ctx)
}

// release drops trigger's source, stopping its informer when no other
// trigger uses it.
func (s *sources) release(trigger string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(trigger)
}

func (s *sources) releaseLocked(trigger string) {
	key, ok := s.of[trigger]
	if !ok {
		return
	}
	delete(s.of, trigger)
	src := s.byKey[key]
	delete(src.triggers, trigger)
	if len(src.triggers) == 0 {
		src.cancel()
		delete(s.byKey, key)
		s.log.Info("stopped watching event source", "source", key.String())
	}
}

// triggersOf are the keys of the triggers that use key.
func (s *sources) triggersOf(key sourceKey) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.byKey[key]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(src.triggers))
	for t := range src.triggers {
		out = append(out, t)
	}
	return out
}

// running are the keys of the running sources (tests).
func (s *sources) running() []sourceKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sourceKey
	for k := range s.byKey {
		out = append(out, k)
	}
	return out
}

// synced reports whether the informer of key has listed (tests).
func (s *sources) synced(key sourceKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.byKey[key]
	return ok && src.informer.HasSynced()
}

func (s *sources) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, src := range s.byKey {
		src.cancel()
		delete(s.byKey, k)
	}
	clear(s.of)
}

// eventKey is the source an event trigger watches: namespace "" means
// the trigger's, "*" all; a cluster-scoped kind has none.
func eventKey(tr *minik8sv1.Trigger, gvr schema.GroupVersionResource, namespaced bool) sourceKey {
	ns := tr.Spec.Event.Namespace
	switch {
	case !namespaced || ns == "*":
		ns = ""
	case ns == "":
		ns = tr.Namespace
	}
	return sourceKey{gvr: gvr, namespace: ns}
}

// matches says whether an event fires tr: its type is one of the
// trigger's, the object is in the trigger's namespace and matches its
// selector, an ADDED object was created no earlier than the trigger, and
// a MODIFIED one really changed.
func matches(tr *minik8sv1.Trigger, typ string, obj, old *unstructured.Unstructured) bool {
	ev := tr.Spec.Event
	if ev == nil || suspended(tr) || tr.DeletionTimestamp != nil {
		return false
	}
	if len(ev.Types) > 0 && !slices.Contains(ev.Types, typ) {
		return false
	}
	if ns := obj.GetNamespace(); ns != "" {
		switch ev.Namespace {
		case "*":
		case "":
			if ns != tr.Namespace {
				return false
			}
		default:
			if ns != ev.Namespace {
				return false
			}
		}
	}
	switch typ {
	case minik8sv1.EventAdded:
		if obj.GetCreationTimestamp().Time.Before(tr.CreationTimestamp.Time) {
			return false
		}
	case minik8sv1.EventModified:
		if old == nil || old.GetResourceVersion() == obj.GetResourceVersion() {
			return false
		}
	}
	if ev.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(ev.Selector)
		if err != nil || !sel.Matches(labels.Set(obj.GetLabels())) {
			return false
		}
	}
	return true
}

// eventFiring is one event that fires one trigger.
type eventFiring struct {
	trigger   string
	uid       types.UID
	eventType string
	object    *unstructured.Unstructured
}

// onEvent queues a firing for every trigger on key the event matches.
func (c *Controller) onEvent(key sourceKey, typ string, obj, old *unstructured.Unstructured) {
	for _, tk := range c.sources.triggersOf(key) {
		tr, err := c.getTrigger(tk)
		if err != nil || tr == nil || !matches(tr, typ, obj, old) {
			continue
		}
		c.fires.Queue.Add(&eventFiring{trigger: tk, uid: tr.UID, eventType: typ, object: obj})
	}
}

// fireEvent fires a trigger for one event, if it still should.
func (c *Controller) fireEvent(ctx context.Context, f *eventFiring) error {
	tr, err := c.getTrigger(f.trigger)
	if err != nil {
		return err
	}
	if tr == nil || tr.UID != f.uid || tr.Spec.Event == nil || suspended(tr) {
		return nil
	}
	if ok, what := c.targetExists(tr); !ok {
		c.Recorder.Eventf(tr, corev1.EventTypeWarning, ReasonTargetNotFound, "Not firing on %s of %s %s/%s: %s not found",
			f.eventType, f.object.GetKind(), f.object.GetNamespace(), f.object.GetName(), what)
		return nil
	}
	payload, err := json.Marshal(f.object.Object)
	if err != nil {
		return fmt.Errorf("encode %s/%s: %w", f.object.GetNamespace(), f.object.GetName(), err)
	}
	return c.fire(ctx, tr, payload, f.eventType, nil, nil)
}
