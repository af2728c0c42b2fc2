package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/minik8s/minik8s/pkg/storage"
)

// statusFor turns any error into the metav1.Status a client receives.
// Errors that are not already API errors become 500s; their text is kept
// because it is what an operator needs to debug.
func statusFor(err error) *metav1.Status {
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		s := api.Status()
		return &s
	}
	switch {
	case errors.Is(err, storage.ErrCompacted):
		return statusFor(apierrors.NewResourceExpired(err.Error()))
	case errors.Is(err, storage.ErrUnavailable):
		return statusFor(unavailable(err))
	case errors.Is(err, context.DeadlineExceeded):
		return statusFor(requestTimeout())
	}
	return statusFor(apierrors.NewInternalError(err))
}

// storageRetryAfter is what a client is told to wait before retrying a
// request that failed because storage does not answer.
const storageRetryAfter = 1

// unavailable is the 503 of a request that storage could not serve.
func unavailable(err error) *apierrors.StatusError {
	st := apierrors.NewServiceUnavailable(err.Error())
	st.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: storageRetryAfter}
	return st
}

// requestTimeout is the 504 of a request that outlived its deadline, in
// Kubernetes' words.
func requestTimeout() *apierrors.StatusError {
	return apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within requested timeout - %v", context.DeadlineExceeded), 0)
}

func writeError(w http.ResponseWriter, err error) {
	s := statusFor(err)
	s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	code := int(s.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	// As Kubernetes: a Status that says when to retry says it in the
	// header too, which client-go honours.
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	writeJSON(w, code, s)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("encode response: %w", err))
		http.Error(w, "encode response", http.StatusInternalServerError)
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(code)
	_, _ = w.Write(data)
	_, _ = w.Write([]byte("\n"))
}

// storageError maps a storage error for resource gr / name onto an API error.
func storageError(err error, gr schema.GroupResource, name string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(conflictMessage))
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	case errors.Is(err, storage.ErrFutureRevision):
		return tooLargeResourceVersion("Too large resource version")
	}
	return err
}

// tooLargeResourceVersion is the 504 of a read at a revision storage has
// not reached, with the cause client-go's reflector looks for.
func tooLargeResourceVersion(msg string) *apierrors.StatusError {
	st := apierrors.NewTimeoutError(msg, 1)
	if st.ErrStatus.Details == nil {
		st.ErrStatus.Details = &metav1.StatusDetails{}
	}
	st.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return st
}

const conflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// errNoSuchResource is kube-apiserver's 404 for a path that names no
// resource or subresource it serves ("the server could not find the
// requested resource"), not a missing object.
func errNoSuchResource() error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
}

// pathNotFound is the 404 of a path that names nothing served, worded as
// kube-apiserver's: no resource name to put in it.
func pathNotFound() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
	}}
}
