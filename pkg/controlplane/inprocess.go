package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Start runs a control plane in the background on cfg (Port 0 and a
// loopback BindAddress suit tools and benchmarks) and returns once it
// serves. stop ends it and waits for it to finish.
func Start(ctx context.Context, cfg Config) (cp ControlPlane, stop func() error, err error) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan ControlPlane, 1)
	done := make(chan error, 1)
	userReady := cfg.Ready
	cfg.Ready = func(cp ControlPlane) {
		if userReady != nil {
			userReady(cp)
		}
		ready <- cp
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	go func() { done <- Run(runCtx, cfg) }()
	select {
	case cp = <-ready:
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("exited before serving")
		}
		return ControlPlane{}, nil, fmt.Errorf("control plane: %w", err)
	case <-ctx.Done():
		cancel()
		<-done
		return ControlPlane{}, nil, ctx.Err()
	}
	stop = func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("control plane did not stop in 30s")
		}
	}
	return cp, stop, nil
}
