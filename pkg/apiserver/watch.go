package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/storage"
)

func mustParseFields(s string) fields.Selector {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return fields.Everything()
	}
	return sel
}

// progressTimeout bounds the request for a bookmark, which holds up the
// events of its watch.
const progressTimeout = 2 * time.Second

func errorsIsCompacted(err error) bool { return errors.Is(err, storage.ErrCompacted) }

func fieldErrors(name string, value any, msg string) field.ErrorList {
	return field.ErrorList{field.Forbidden(field.NewPath(name), fmt.Sprintf("%s (got %v)", msg, value))}
}

// watchStream writes watch events in the negotiated framing.
type watchStream struct {
	s       *Server
	res     *registry.Resource
	out     output
	w       http.ResponseWriter
	flusher http.Flusher
	enc     streaming.Encoder
	tables  tableOptions
}

func (ws *watchStream) send(t watch.EventType, obj runtime.Object) error {
	var rendered runtime.Object = obj
	// An ERROR event's Status goes out as it is, whatever the rendering.
	if ws.out.kind != outputObject && t != watch.Error {
		var err error
		if t == watch.Bookmark && ws.out.kind == outputTable {
			m, _ := meta.Accessor(obj)
			rendered = &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
				ListMeta: metav1.ListMeta{ResourceVersion: m.GetResourceVersion()}}
		} else if rendered, err = ws.s.render(ws.res, ws.out, obj, nil, ws.tables); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := ws.out.info.Serializer.Encode(rendered, &buf); err != nil {
		return err
	}
	if err := ws.enc.Encode(&metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: buf.Bytes()}}); err != nil {
		return err
	}
	ws.flusher.Flush()
	return nil
}

// bookmark sends a BOOKMARK: an empty object carrying only the revision
// up to which the client has seen every event.
func (ws *watchStream) bookmark(rev int64, annotations map[string]string) error {
	obj := ws.res.New()
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	m.SetAnnotations(annotations)
	return ws.send(watch.Bookmark, obj)
}

// serveWatch streams changes as Kubernetes does: optional initial ADDED
// events (resourceVersion unset or 0, or sendInitialEvents=true followed by
// a BOOKMARK marking their end), then every change after the start
// revision, with periodic BOOKMARKs when allowed, and a 410 ERROR event when
// the start revision has been compacted away.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	out, err := negotiate(s.codecsFor(res), r.Header.Get("Accept"), true)
	if err != nil {
		return err
	}
	if out.info.StreamSerializer == nil {
		return apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "watch", res.GroupResource(), "",
			fmt.Sprintf("%s does not support streaming; use application/json", out.info.MediaType), 0, false)
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return fmt.Errorf("response writer %T cannot stream", w)
	}
	opts, err := s.listOptions(r)
	if err != nil {
		return err
	}
	if info.Name != "" {
		// /watch/namespaces/{ns}/pods/{name}: a watch on one object.
		opts.FieldSelector = fields.AndSelectors(fields.OneTermEqualSelector("metadata.name", info.Name), mustParseFields(opts.FieldSelector)).String()
	}
	sel, err := parseSelection(res, opts)
	if err != nil {
		return err
	}
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if opts.SendInitialEvents != nil {
		if !opts.AllowWatchBookmarks {
			return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", fieldErrors("allowWatchBookmarks", opts.AllowWatchBookmarks, "sendInitialEvents requires setting allowWatchBookmarks to true"))
		}
		if opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
			return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("ListOptions").GroupKind(), "", fieldErrors("resourceVersionMatch", opts.ResourceVersionMatch, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
		}
	}
	legacyInitial := opts.SendInitialEvents == nil && (opts.ResourceVersion == "" || opts.ResourceVersion == "0")

	timeout := time.Duration(30+rand.IntN(30)) * time.Minute
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds != 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	if timeout < 0 {
		// As Kubernetes: a watch whose time is up before it starts ends
		// at once, with nothing sent.
		w.Header().Set("Content-Type", out.info.MediaType)
		w.WriteHeader(http.StatusOK)
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()

	var startRev int64
	var initial *listResult
	if sendInitial || legacyInitial {
		if initial, err = s.list(ctx, res, info.Namespace, &metav1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector}); err != nil {
			return err
		}
		startRev = initial.revision
	} else {
		if startRev, err = parseResourceVersion(opts.ResourceVersion); err != nil {
			return err
		}
	}

	s.metrics.watchers.WithLabelValues(res.Group, res.Resource).Inc()
	defer s.metrics.watchers.WithLabelValues(res.Group, res.Resource).Dec()

	// Open the store watch before sending anything so no change slips
	// between the initial state and the stream.
	events := s.store.Watch(ctx, listPrefix(res, info.Namespace), startRev)

	ws := &watchStream{s: s, res: res, out: out, w: w, flusher: flusher, tables: tableOptionsFrom(r)}
	ws.enc = streaming.NewEncoder(out.info.StreamSerializer.Framer.NewFrameWriter(w), out.info.StreamSerializer.Serializer)
	w.Header().Set("Content-Type", out.info.MediaType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()

	if initial != nil {
		for _, obj := range initial.items {
			if ws.send(watch.Added, obj) != nil {
				return nil
			}
		}
		if sendInitial {
			if ws.bookmark(startRev, map[string]string{metav1.InitialEventsAnnotationKey: "true"}) != nil {
				return nil
			}
		}
	}

	var ticks <-chan time.Time
	if opts.AllowWatchBookmarks {
		t := time.NewTicker(s.cfg.BookmarkInterval)
		defer t.Stop()
		ticks = t.C
	}
	lastRev := startRev
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
			// The answer comes back on the event channel as a progress
			// result. While storage does not answer there is none, and
			// this returns at once.
			pctx, cancel := context.WithTimeout(ctx, progressTimeout)
			_ = s.store.RequestProgress(pctx)
			cancel()
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			switch {
			case ev.Err != nil:
				st := statusFor(storageError(ev.Err, res.GroupResource(), ""))
				if errorsIsCompacted(ev.Err) {
					st = statusFor(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", startRev, ev.Revision)))
				}
				st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
				_ = ws.send(watch.Error, st)
				return nil
			case ev.Progress:
				if opts.AllowWatchBookmarks && ev.Revision > lastRev {
					lastRev = ev.Revision
					if ws.bookmark(ev.Revision, nil) != nil {
						return nil
					}
				}
			case ev.Event != nil:
				lastRev = ev.Revision
				t, obj, err := s.watchEvent(res, sel, ev.Event)
				if err != nil {
					st := statusFor(err)
					st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
					_ = ws.send(watch.Error, st)
					return nil
				}
				if obj != nil && ws.send(t, obj) != nil {
					return nil
				}
			}
		}
	}
}

// watchEvent turns a storage change into the API event a selecting
// client sees: an object entering the selection is ADDED, one leaving it
// DELETED, as in Kubernetes. A nil object means "nothing to send".
func (s *Server) watchEvent(res *registry.Resource, sel selection, ev *storage.Event) (watch.EventType, runtime.Object, error) {
	cur, err := decodeStored(res, storage.KV{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision})
	if err != nil {
		return "", nil, err
	}
	if ev.Type == storage.EventDelete {
		if sel.matches(res, cur) {
			return watch.Deleted, cur, nil
		}
		return "", nil, nil
	}
	now := sel.matches(res, cur)
	before := false
	switch {
	case sel.empty():
		// Everything is selected: the previous object need not be read
		// (nor converted, for a custom resource).
		before = ev.PrevValue != nil
	case ev.PrevValue != nil:
		prev, err := decodeStored(res, storage.KV{Key: ev.Key, Value: ev.PrevValue, ModRevision: ev.Revision})
		if err != nil {
			return "", nil, err
		}
		before = sel.matches(res, prev)
	}
	switch {
	case now && before:
		return watch.Modified, cur, nil
	case now:
		return watch.Added, cur, nil
	case before:
		return watch.Deleted, cur, nil
	}
	return "", nil, nil
}
