package multicluster

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/capctl/capctl/pkg/cluster"
)

// Selection is what --contexts and --all-contexts asked for.
type Selection struct {
	// Contexts are the kubeconfig contexts named with --contexts, in the user's order.
	Contexts []string
	// All is --all-contexts: every context of the (merged) kubeconfig.
	All bool
}

// Enabled tells whether the command runs over several management clusters.
func (s Selection) Enabled() bool { return s.All || len(s.Contexts) > 0 }

// Validate checks the flags alone, before any file is read: not both flags, no empty or repeated
// name.
func (s Selection) Validate() error {
	if s.All && len(s.Contexts) > 0 {
		return fmt.Errorf("--contexts and --all-contexts cannot be used together")
	}
	seen := map[string]bool{}
	for _, c := range s.Contexts {
		if strings.TrimSpace(c) == "" {
			return fmt.Errorf("--contexts has an empty context name: give names separated by commas, like --contexts eu-1,us-1")
		}
		if seen[c] {
			return fmt.Errorf("--contexts names context %q twice: name each management cluster once", c)
		}
		seen[c] = true
	}
	return nil
}

// Resolve returns the contexts to use, in order: the named ones (each must exist in the
// kubeconfig) or, with All, every context sorted by name.
func Resolve(kc *cluster.Kubeconfig, s Selection) ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	names := kc.ContextNames()
	if s.All {
		if len(names) == 0 {
			return nil, fmt.Errorf("--all-contexts: kubeconfig %s has no contexts", kc.Files)
		}
		return names, nil
	}
	var unknown []string
	for _, c := range s.Contexts {
		if _, ok := kc.Config.Contexts[c]; !ok {
			unknown = append(unknown, fmt.Sprintf("%q", c))
		}
	}
	if len(unknown) > 0 {
		have := strings.Join(names, ", ")
		if have == "" {
			have = "none"
		}
		return nil, fmt.Errorf("context %s not found in kubeconfig %s (contexts: %s); check --contexts", strings.Join(unknown, ", "), kc.Files, have)
	}
	return append([]string(nil), s.Contexts...), nil
}

// ComparePlace orders clusters as every fleet table and wave lists them: by management cluster
// (its context name), then namespace, then name.
func ComparePlace(aMgmt, aNS, aName, bMgmt, bNS, bName string) int {
	return cmp.Or(cmp.Compare(aMgmt, bMgmt), cmp.Compare(aNS, bNS), cmp.Compare(aName, bName))
}
