package kit

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	e := NewExpectations(clk)
	if !e.Satisfied("ns/rs") {
		t.Fatal("unknown key should be satisfied")
	}
	e.ExpectCreations("ns/rs", 2)
	e.CreationObserved("ns/rs")
	if e.Satisfied("ns/rs") {
		t.Fatal("satisfied with a creation pending")
	}
	e.CreationObserved("ns/rs")
	if !e.Satisfied("ns/rs") {
		t.Fatal("not satisfied after both creations were seen")
	}

	e.ExpectDeletions("ns/rs", "ns/a", "ns/b")
	e.DeletionObserved("ns/rs", "ns/a")
	e.DeletionObserved("ns/rs", "ns/a") // marked for deletion, then removed
	if e.Satisfied("ns/rs") {
		t.Fatal("one pod seen going twice satisfied two deletions")
	}
	clk.Step(ExpectationsTTL + time.Second)
	if !e.Satisfied("ns/rs") {
		t.Fatal("expectations did not expire")
	}
	e.ExpectDeletions("ns/rs", "ns/c")
	e.Forget("ns/rs")
	if !e.Satisfied("ns/rs") {
		t.Fatal("forgotten key should be satisfied")
	}
}
