package router

import (
	"time"
)

// historySeconds is how far back the concurrency history of a function
// reaches: AverageConcurrency cuts longer windows to it.
const historySeconds = 600

// Stats is what the router has seen of one function since it started.
type Stats struct {
	// InFlight counts the requests in the router now, held or forwarded.
	InFlight int
	// Requests counts the requests received (cumulative).
	Requests uint64
	// LastActive is when a request last arrived or finished; zero when
	// none has since the router started.
	LastActive time.Time
}

// demand is one function's traffic: its Stats and the time-weighted
// in-flight history, as request-seconds per second of wall time (the
// area under the in-flight curve), in a ring of historySeconds buckets.
type demand struct {
	Stats
	// since is the time up to which the in-flight curve is accounted.
	since time.Time
	// head is the newest second (unix) the ring holds; the ring holds
	// (head-historySeconds, head].
	head    int64
	buckets [historySeconds]float64
	// lastPoke is when the router last asked the Scaler for an instance.
	lastPoke time.Time
}

func newDemand(now time.Time) *demand {
	return &demand{since: now, head: now.Unix()}
}

// change accounts the in-flight curve up to now, then moves InFlight by
// delta (+1 for a request arriving, -1 for one finishing).
func (d *demand) change(now time.Time, delta int) {
	d.account(now)
	d.InFlight += delta
	if delta > 0 {
		d.Requests++
	}
	d.LastActive = now
}

// account adds the area of the in-flight curve between since and now to
// the buckets of the seconds it spans.
func (d *demand) account(now time.Time) {
	if !now.After(d.since) {
		return
	}
	if d.InFlight == 0 {
		d.advance(now.Unix())
		d.since = now
		return
	}
	t := d.since
	if oldest := now.Add(-historySeconds * time.Second); t.Before(oldest) {
		t = oldest
	}
	for t.Before(now) {
		sec := t.Unix()
		end := time.Unix(sec+1, 0)
		if end.After(now) {
			end = now
		}
		d.advance(sec)
		d.buckets[bucket(sec)] += float64(d.InFlight) * end.Sub(t).Seconds()
		t = end
	}
	d.advance(now.Unix())
	d.since = now
}

// advance moves the ring's head to sec, emptying the seconds it enters.
func (d *demand) advance(sec int64) {
	if sec <= d.head {
		return
	}
	if sec-d.head >= historySeconds {
		d.buckets = [historySeconds]float64{}
	} else {
		for s := d.head + 1; s <= sec; s++ {
			d.buckets[bucket(s)] = 0
		}
	}
	d.head = sec
}

// average is the time-weighted average of InFlight over the window
// ending at now. The oldest second counts in proportion to the part of
// it inside the window.
func (d *demand) average(now time.Time, window time.Duration) float64 {
	if window <= 0 {
		return float64(d.InFlight)
	}
	if window > historySeconds*time.Second {
		window = historySeconds * time.Second
	}
	d.account(now)
	start := now.Add(-window)
	startSec := float64(start.UnixNano()) / 1e9
	var area float64
	for sec := start.Unix(); sec <= now.Unix(); sec++ {
		if sec > d.head || sec <= d.head-historySeconds {
			continue
		}
		a := d.buckets[bucket(sec)]
		if sec == start.Unix() {
			a *= float64(sec+1) - startSec
		}
		area += a
	}
	return area / window.Seconds()
}

func bucket(sec int64) int {
	b := sec % historySeconds
	if b < 0 {
		b += historySeconds
	}
	return int(b)
}
