package fleetupgrade

import (
	"fmt"
	"strconv"
	"strings"
)

// Rollout is how a fleet apply rolls its waves. `upgrade plan --save` saves it with the plan, so
// that the reviewed file says how it will be rolled, and `apply --plan` uses the saved one.
type Rollout struct {
	// MaxParallel is how many clusters of a wave are upgraded at once (default 1), unless
	// MaxParallelPercent is set: that percentage of the wave's clusters, rounded down, at least 1.
	MaxParallel        int `json:"maxParallel,omitempty"`
	MaxParallelPercent int `json:"maxParallelPercent,omitempty"`
	// Canary, when set, makes a first wave of that many clusters (the first of the plan's order:
	// management cluster, namespace, name) when no selected cluster carries a wave label.
	Canary int `json:"canary,omitempty"`
	// MaxFailures is how many clusters may fail in the whole run before it stops (default 0:
	// the first failure stops it). Every failure is reported.
	MaxFailures int `json:"maxFailures,omitempty"`
	// Soak is how long the clusters of a wave are watched after it (see fleetApplier.soak).
	Soak Duration `json:"soak,omitempty"`
	// GateCommand runs through /bin/sh after each wave and its soak; a non-zero exit stops.
	GateCommand string `json:"gateCommand,omitempty"`
	// Window is when waves may start, as ParseWindow reads it.
	Window string `json:"window,omitempty"`
}

// SetMaxParallel parses --max-parallel: a number of clusters ("3") or a percentage of each
// wave ("25%").
func (r *Rollout) SetMaxParallel(s string) error {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 {
			return fmt.Errorf("--max-parallel %q: a percentage of a wave is 1%% to 100%%, like 25%%", s)
		}
		r.MaxParallel, r.MaxParallelPercent = 0, n
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("--max-parallel %q: give a number of clusters of at least 1, or a percentage of a wave like 25%%", s)
	}
	r.MaxParallel, r.MaxParallelPercent = n, 0
	return nil
}

// Validate checks the rollout without any I/O; its errors name the flags.
func (r Rollout) Validate() error {
	if err := r.check(); err != nil {
		return err
	}
	_, err := r.window()
	return err
}

// check is Validate but for the window, which the caller parses (window) to keep it.
func (r Rollout) check() error {
	switch {
	case r.MaxParallel < 0:
		return fmt.Errorf("--max-parallel must be at least 1")
	case r.MaxParallelPercent < 0 || r.MaxParallelPercent > 100:
		return fmt.Errorf("--max-parallel as a percentage must be 1%% to 100%%")
	case r.MaxParallel > 0 && r.MaxParallelPercent > 0:
		return fmt.Errorf("--max-parallel is a number or a percentage, not both")
	case r.Canary < 0:
		return fmt.Errorf("--canary must be a number of clusters, at least 1")
	case r.MaxFailures < 0:
		return fmt.Errorf("--max-failures must be 0 (stop at the first failure) or more")
	case r.Soak < 0:
		return fmt.Errorf("--soak must be a positive duration, like 30m")
	}
	return nil
}

// window is the rollout's window parsed (nil: none).
func (r Rollout) window() (*Window, error) {
	if r.Window == "" {
		return nil, nil
	}
	return ParseWindow(r.Window)
}

// DefaultMaxParallel is how many clusters of a wave are upgraded at once when the rollout does
// not say (--max-parallel's default).
const DefaultMaxParallel = 1

// parallel is how many of a wave's n clusters are upgraded at once: MaxParallelPercent of n
// rounded down (so a percentage never exceeds what it says), at least 1; else MaxParallel,
// default DefaultMaxParallel.
func (r Rollout) parallel(n int) int {
	if r.MaxParallelPercent > 0 {
		return max(1, n*r.MaxParallelPercent/100)
	}
	if r.MaxParallel <= 0 {
		return DefaultMaxParallel
	}
	return r.MaxParallel
}

// shape reshapes the plan's waves as the rollout asks: with Canary, the first Canary clusters
// (in the plan's order) become a first wave of their own. The choice does not depend on the
// clusters' state, so a re-run picks the same canary.
func (r Rollout) shape(plan *FleetPlan) error {
	if r.Canary == 0 || len(plan.Waves) == 0 {
		return nil
	}
	var labelled []string
	for _, w := range plan.Waves {
		if w.Wave != nil {
			for _, cu := range w.Clusters {
				labelled = append(labelled, cu.Ref())
			}
		}
	}
	for _, u := range plan.Unplannable {
		if u.Wave != "" {
			labelled = append(labelled, u.Ref())
		}
	}
	if len(labelled) > 0 {
		if len(labelled) > 3 {
			labelled = append(labelled[:3], fmt.Sprintf("and %d more", len(labelled)-3))
		}
		return fmt.Errorf("--canary makes the first wave, but clusters carry a wave label (%s or %s): %s; drop --canary, or the labels", WaveLabel, PlainWaveLabel, strings.Join(labelled, ", "))
	}
	all := plan.Waves[0].Clusters
	n := min(r.Canary, len(all))
	plan.Waves = []FleetWave{{Canary: true, Clusters: all[:n:n]}}
	if n < len(all) {
		plan.Waves = append(plan.Waves, FleetWave{Clusters: all[n:]})
	}
	return nil
}

// CanaryWave is the name of the wave --canary makes.
const CanaryWave = "canary"
