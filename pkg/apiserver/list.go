package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/minik8s/minik8s/pkg/registry"
	"github.com/minik8s/minik8s/pkg/storage"
)

// selection is a parsed label and field selector for one resource.
type selection struct {
	labels labels.Selector
	fields fields.Selector
}

func (s selection) empty() bool { return s.labels.Empty() && s.fields.Empty() }

func (s selection) matches(res *registry.Resource, obj runtime.Object) bool {
	if s.empty() {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if !s.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	return s.fields.Empty() || s.fields.Matches(res.Fields(obj, m.GetName(), m.GetNamespace()))
}

// parseSelection validates selectors against the fields the resource supports.
func parseSelection(res *registry.Resource, opts *metav1.ListOptions) (selection, error) {
	ls, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return selection{}, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	fs, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return selection{}, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	known := res.Fields(res.New(), "", "")
	for _, req := range fs.Requirements() {
		if _, ok := known[req.Field]; !ok {
			return selection{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return selection{labels: ls, fields: fs}, nil
}

// continueToken is the opaque ?continue= value: where the next page starts
// and the snapshot revision every page is read at. A Revision of
// latestRevision reads the rest at the newest revision: the token a 410
// hands out once the first page's revision has been compacted away.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	StartKey   string `json:"start"`
}

// latestRevision in a continue token reads its pages at the newest revision.
const latestRevision = -1

func encodeContinue(rev int64, nextKey, prefix string) string {
	data, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", Revision: rev, StartKey: nextKey[len(prefix):]})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(token, prefix string) (continueToken, error) {
	var ct continueToken
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(data, &ct)
	}
	if err != nil || ct.APIVersion != "meta.k8s.io/v1" || ct.Revision <= 0 && ct.Revision != latestRevision || ct.StartKey == "" {
		return ct, apierrors.NewBadRequest("continue key is not valid")
	}
	ct.StartKey = prefix + ct.StartKey
	return ct, nil
}

// listResult is one page of matching objects.
type listResult struct {
	items    []runtime.Object
	revision int64
	cont     string
	// remaining is how many objects follow a page of an unfiltered list
	// (metadata.remainingItemCount); nil when not known.
	remaining *int64
}

// list reads a page of objects under ns (all namespaces when empty),
// filling it up to limit matching items like Kubernetes does.
func (s *Server) list(ctx context.Context, res *registry.Resource, ns string, opts *metav1.ListOptions) (*listResult, error) {
	sel, err := parseSelection(res, opts)
	if err != nil {
		return nil, err
	}
	prefix := listPrefix(res, ns)
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	// notOlderThan is the revision a list at the newest one must have
	// reached (resourceVersionMatch NotOlderThan, or a resourceVersion
	// without a match).
	var notOlderThan int64
	var readOpts storage.ListOptions
	switch {
	case opts.Continue != "":
		ct, err := decodeContinue(opts.Continue, prefix)
		if err != nil {
			return nil, err
		}
		readOpts.StartKey, readOpts.Revision = ct.StartKey, max(ct.Revision, 0)
	case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
		readOpts.Revision = rv
	default:
		notOlderThan = rv
	}
	out := &listResult{}
	for {
		readOpts.Limit = 0
		if opts.Limit > 0 {
			readOpts.Limit = opts.Limit - int64(len(out.items))
		}
		page, err := s.store.List(ctx, prefix, readOpts)
		if err != nil && opts.Continue != "" && errors.Is(err, storage.ErrCompacted) {
			return nil, continueExpired(encodeContinue(latestRevision, readOpts.StartKey, prefix))
		}
		if err != nil {
			return nil, storageError(err, res.GroupResource(), "")
		}
		if page.Revision < notOlderThan {
			return nil, tooLargeResourceVersion(fmt.Sprintf("Too large resource version: %d, current: %d", notOlderThan, page.Revision))
		}
		out.revision = page.Revision
		readOpts.Revision = page.Revision
		objs, err := decodeStoredList(res, page.KVs)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if sel.matches(res, obj) {
				out.items = append(out.items, obj)
			}
		}
		if !page.More || len(page.KVs) == 0 {
			return out, nil
		}
		next := page.KVs[len(page.KVs)-1].Key + "\x00"
		if int64(len(out.items)) >= opts.Limit {
			out.cont = encodeContinue(page.Revision, next, prefix)
			if n := page.Count - int64(len(page.KVs)); sel.empty() && page.Count > 0 && n >= 0 {
				out.remaining = &n
			}
			return out, nil
		}
		readOpts.StartKey = next
	}
}

// continueExpired is the 410 of a continue token whose revision has been
// compacted: like kube-apiserver, it carries a token that reads the rest
// of the list at the newest revision, for a client that accepts an
// inconsistent list.
func continueExpired(token string) *apierrors.StatusError {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. " +
		"Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time " +
		"the first chunk was returned and now may show up in the list.")
	err.ErrStatus.ListMeta.Continue = token
	return err
}

// listObject wraps items in the resource's typed list.
func listObject(res *registry.Resource, r *listResult) (runtime.Object, error) {
	list := res.NewList()
	if err := meta.SetList(list, r.items); err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(strconv.FormatInt(r.revision, 10))
	lm.SetContinue(r.cont)
	lm.SetRemainingItemCount(r.remaining)
	return list, nil
}
