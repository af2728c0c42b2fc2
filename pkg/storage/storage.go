package storage

import (
	"context"
	"errors"
)

// Errors every Store returns so callers can map them to API status codes.
var (
	ErrNotFound  = errors.New("key not found")
	ErrExists    = errors.New("key already exists")
	ErrConflict  = errors.New("revision conflict")
	ErrCompacted = errors.New("revision has been compacted")
	// ErrFutureRevision is returned for reads at a revision the store has not reached.
	ErrFutureRevision = errors.New("revision is in the future")
	// ErrUnavailable is returned at once, without waiting, while the store's
	// backend does not answer; a call in flight when it stops answering
	// fails with it too. A write that failed with it may or may not have
	// been applied.
	ErrUnavailable = errors.New("storage is unavailable")
)

// KV is one stored value with the revision that last modified it.
type KV struct {
	Key         string
	Value       []byte
	ModRevision int64
}

// EventType says what happened to a key.
type EventType int

const (
	EventPut EventType = iota
	EventDelete
)

// Event is one change seen by a watch. For EventDelete, Value holds the last
// value before deletion and Revision the revision of the delete. PrevValue is
// the value before a put (nil for a create).
type Event struct {
	Type      EventType
	Key       string
	Value     []byte
	PrevValue []byte
	Revision  int64
}

// WatchResult is either an Event, a progress notification (Progress set, the
// store has delivered every event up to Revision) or a terminal Err.
type WatchResult struct {
	Event    *Event
	Progress bool
	Revision int64
	Err      error
}

// ListOptions bound a range read.
type ListOptions struct {
	// StartKey continues a paged list at this key (inclusive); empty means the prefix itself.
	StartKey string
	// Limit caps the number of returned values; 0 means no limit.
	Limit int64
	// Revision reads a past snapshot; 0 means the newest.
	Revision int64
}

// ListResult is one page of a range read.
type ListResult struct {
	KVs      []KV
	More     bool  // more keys follow the last returned one
	Revision int64 // the snapshot revision the page was read at
	// Count is how many keys the range holds from its start on, this
	// page's included (0 when the store cannot tell).
	Count int64
}

// Store is a revisioned key-value store. Revisions are global and grow with
// every write, which is what lets them double as resourceVersions.
type Store interface {
	Get(ctx context.Context, key string) (*KV, error)
	List(ctx context.Context, prefix string, opts ListOptions) (*ListResult, error)
	// Create writes key only if it does not exist yet.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update writes key only if its ModRevision is still expected.
	Update(ctx context.Context, key string, value []byte, expected int64) (int64, error)
	// Delete removes key only if its ModRevision is still expected (0: any).
	Delete(ctx context.Context, key string, expected int64) (int64, error)
	// Watch streams changes under prefix with revision > fromRevision; fromRevision 0 means "from now".
	// The channel closes when ctx ends or after a result carrying Err. A
	// watch outlives an outage of the backend: it resumes after the last
	// revision it delivered, or ends with ErrCompacted when that is gone.
	Watch(ctx context.Context, prefix string, fromRevision int64) <-chan WatchResult
	// RequestProgress asks open watches on ctx's stream to report a Progress result.
	RequestProgress(ctx context.Context) error
	// Revision is the newest revision of the store.
	Revision(ctx context.Context) (int64, error)
	// Compact discards history before revision.
	Compact(ctx context.Context, revision int64) error
	Close() error
}
