package supervisor

import (
	"context"
	"net/http"
	"time"
)

// WaitHTTP polls url every interval until a GET answers 200 (a child's
// readiness endpoint) or ctx ends, returning ctx's error then.
func WaitHTTP(ctx context.Context, url string, interval time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
