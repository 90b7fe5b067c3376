package diagnose

import (
	"strings"
	"testing"
)

func TestFleetOptionsValidate(t *testing.T) {
	if err := (FleetOptions{Concurrency: DefaultConcurrency}).Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	for _, n := range []int{0, -1} {
		if err := (FleetOptions{Concurrency: n}).Validate(); err == nil || !strings.Contains(err.Error(), "--concurrency must be at least 1") {
			t.Errorf("%d: %v", n, err)
		}
	}
}
