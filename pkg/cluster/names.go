package cluster

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// CheckNamespace refuses a namespace that is set but cannot name one (a DNS-1123 label), before
// any cluster is contacted: the one rule every request with a namespace validates with, so a
// library caller and the command get the same answer. Empty (the context's namespace) passes.
func CheckNamespace(namespace string) error {
	if namespace == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return fmt.Errorf("invalid namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	return nil
}

// CheckClusterRef refuses a workload cluster's name that cannot name an object (a DNS-1123
// subdomain), and its namespace as CheckNamespace does.
func CheckClusterRef(name, namespace string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("invalid cluster name %q: %s", name, strings.Join(errs, "; "))
	}
	return CheckNamespace(namespace)
}
