package testenv

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Memory is what one call cost in memory, against the size of its input.
type Memory struct {
	// Allocated is every byte the call allocated (runtime.MemStats.TotalAlloc's growth). It
	// depends little on when the collector runs, but not at all: a collection empties the
	// sync.Pools that encoders reuse buffers from, so a loaded machine allocates a few percent more
	// (LeastMemory).
	Allocated uint64
	// PeakHeap is the largest growth of the heap's objects (live and not yet collected) seen while
	// the call ran, sampled every millisecond.
	PeakHeap uint64
}

// AllocatedPerInput is Allocated ÷ n, the multiple of the input's size.
func (m Memory) AllocatedPerInput(n int) float64 { return float64(m.Allocated) / float64(n) }

// PeakPerInput is PeakHeap ÷ n.
func (m Memory) PeakPerInput(n int) float64 { return float64(m.PeakHeap) / float64(n) }

const heapObjects = "/memory/classes/heap/objects:bytes"

func heapNow(s []metrics.Sample) uint64 {
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// MeasureMemory runs fn once and returns what it allocated and the peak growth of the heap, both
// from a collected heap (the caller's input, made before, is not counted).
func MeasureMemory(fn func()) Memory {
	runtime.GC()
	s := []metrics.Sample{{Name: heapObjects}}
	base := heapNow(s)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: heapObjects}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapNow(s))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&after)
	m := Memory{Allocated: after.TotalAlloc - before.TotalAlloc}
	if peak > base {
		m.PeakHeap = peak - base
	}
	return m
}

// LeastMemory runs fn runs times and returns the run that allocated least. The collector only
// adds allocations (a pool emptied mid-call is refilled), so the least is the call's own cost: a
// clean-clone run at load 14 measured 52.6× where a quiet machine measures 46.6–48.6×. fn must be
// repeatable.
func LeastMemory(runs int, fn func()) Memory {
	best := MeasureMemory(fn)
	for range runs - 1 {
		if m := MeasureMemory(fn); m.Allocated < best.Allocated {
			best = m
		}
	}
	return best
}

// LargeInputSize is the size of the very large object the memory tests read: 16 MiB, or
// CAPCTL_MEMORY_MIB MiB (docs/benchmarks.md's figures were measured at 60).
func LargeInputSize(tb testing.TB) int {
	if s := os.Getenv("CAPCTL_MEMORY_MIB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			tb.Fatalf("CAPCTL_MEMORY_MIB=%q is not a size in MiB", s)
		}
		return n << 20
	}
	return 16 << 20
}

// CheckMemory logs m against an input of n bytes and fails tb when the bytes allocated exceed
// bound times n.
func CheckMemory(tb testing.TB, m Memory, n int, bound float64) {
	tb.Helper()
	a := m.AllocatedPerInput(n)
	tb.Logf("%.1f MiB input: allocated %.1f× its size, peak heap %.1f× (load %s)", float64(n)/(1<<20), a, m.PeakPerInput(n), LoadAverage())
	if a > bound {
		tb.Errorf("allocated %.1f× the input's size; the bound is %.0f×", a, bound)
	}
}
