package job

import (
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// noIndex is the completion index of a Pod that has none (or a bad one).
const noIndex = -1

// interval is a closed range of completion indexes.
type interval struct{ first, last int }

// indexSet is a set of completion indexes as sorted, disjoint,
// non-adjacent intervals: the form of status.completedIndexes.
type indexSet []interval

// parseIndexes reads status.completedIndexes ("1,3-5,7"), keeping only
// indexes below completions. Malformed parts are skipped.
func parseIndexes(s string, completions int) indexSet {
	var ixs []int
	var spans indexSet
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				continue
			}
		}
		if first >= completions {
			continue
		}
		last = min(last, completions-1)
		if first == last {
			ixs = append(ixs, first)
		} else {
			spans = append(spans, interval{first, last})
		}
	}
	return spans.with(ixs)
}

// with is s plus ixs.
func (s indexSet) with(ixs []int) indexSet {
	all := make([]interval, 0, len(s)+len(ixs))
	all = append(all, s...)
	for _, ix := range ixs {
		all = append(all, interval{ix, ix})
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b interval) int { return a.first - b.first })
	out := indexSet{all[0]}
	for _, iv := range all[1:] {
		cur := &out[len(out)-1]
		if iv.first <= cur.last+1 {
			cur.last = max(cur.last, iv.last)
			continue
		}
		out = append(out, iv)
	}
	return out
}

func (s indexSet) has(ix int) bool {
	_, found := slices.BinarySearchFunc(s, ix, func(iv interval, ix int) int {
		switch {
		case iv.last < ix:
			return -1
		case iv.first > ix:
			return 1
		}
		return 0
	})
	return found
}

func (s indexSet) total() int {
	n := 0
	for _, iv := range s {
		n += iv.last - iv.first + 1
	}
	return n
}

func (s indexSet) String() string {
	var b strings.Builder
	for i, iv := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(iv.first))
		if iv.last != iv.first {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(iv.last))
		}
	}
	return b.String()
}

// completionIndex is the Pod's completion index annotation, or noIndex.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return noIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return noIndex
	}
	return ix
}

// validIndex: the Pod has an index below completions.
func validIndex(p *corev1.Pod, completions int32) bool {
	ix := completionIndex(p)
	return ix != noIndex && ix < int(completions)
}

// pendingIndexes are the first count indexes below completions that have
// neither succeeded nor a Pod working on them (busy).
func pendingIndexes(done indexSet, busy map[int]bool, count, completions int) []int {
	var out []int
	for ix := 0; ix < completions && len(out) < count; ix++ {
		if !done.has(ix) && !busy[ix] {
			out = append(out, ix)
		}
	}
	return out
}

// intersect is how many indexes s and o have in common.
func (s indexSet) intersect(o indexSet) int {
	n := 0
	for i, j := 0, 0; i < len(s) && j < len(o); {
		if overlap := min(s[i].last, o[j].last) - max(s[i].first, o[j].first) + 1; overlap > 0 {
			n += overlap
		}
		if s[i].last < o[j].last {
			i++
		} else {
			j++
		}
	}
	return n
}

// union is s plus o.
func (s indexSet) union(o indexSet) indexSet {
	var ixs []int
	for _, iv := range o {
		for ix := iv.first; ix <= iv.last; ix++ {
			ixs = append(ixs, ix)
		}
	}
	return s.with(ixs)
}
