package kit

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

func TestRun(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		failing bool
		wantErr string
	}{
		{name: "all run until ctx ends"},
		{name: "one fails: the others stop and its error is returned", failing: true, wantErr: "controller broken: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc := NewContext(fake.NewClientset())
			kc.Logger = slog.New(slog.DiscardHandler)
			stopped := make(chan struct{})
			parts := []Part{{Name: "steady", Start: func(ctx context.Context) error {
				<-ctx.Done()
				close(stopped)
				return ctx.Err()
			}}}
			if tc.failing {
				parts = append(parts, Part{Name: "broken", Start: func(context.Context) error { return errBoom }})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := Run(ctx, kc, parts...)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || !errors.Is(err, errBoom)) {
				t.Fatalf("Run = %v, want %q", err, tc.wantErr)
			}
			select {
			case <-stopped:
			default:
				t.Error("Run returned before the steady controller stopped")
			}
			if tc.failing && ctx.Err() != nil {
				t.Error("Run waited for ctx to end instead of stopping at the failure")
			}
		})
	}
}
