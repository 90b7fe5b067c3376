package main

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
)

// This file is the one home of the flag rules several commands share: -n/--namespace with
// -A/--all-namespaces, and the syntax of a namespace or cluster name given on the command line.

// addNamespaceFlags adds -n/--namespace and -A/--all-namespaces, marked mutually exclusive with
// cobra's own rule (the error is a usage error: applyInvocationRules types it).
func addNamespaceFlags(cmd *cobra.Command, namespace *string, all *bool, namespaceUsage, allUsage string) {
	cmd.Flags().StringVarP(namespace, "namespace", "n", "", namespaceUsage)
	cmd.Flags().BoolVarP(all, "all-namespaces", "A", false, allUsage)
	cmd.MarkFlagsMutuallyExclusive("namespace", "all-namespaces")
}

// validateClusterRef refuses a cluster name or namespace that cannot name an object, before any
// cluster is contacted: the one check of the commands that take a workload cluster's name.
func validateClusterRef(name, namespace string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return usageErrorf("invalid cluster name %q: %s", name, strings.Join(errs, "; "))
	}
	return validateNamespace(namespace)
}

// validateNamespace refuses a namespace flag that is set but not a valid namespace name.
func validateNamespace(namespace string) error {
	if namespace == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return usageErrorf("invalid namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	return nil
}
