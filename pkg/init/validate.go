package clusterinit

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Check is the request check of `capctl init` (Options' field Validate, --validate, holds the
// name Validate): the provider selection, the target namespace and a positive wait timeout (the
// flag's default is DefaultWaitProviderTimeout), without any I/O; its errors name the flags.
func (o Options) Check() error {
	if err := checkSelection(o.Selection, o.TargetNamespace); err != nil {
		return err
	}
	if o.WaitProviderTimeout <= 0 {
		return fmt.Errorf("--wait-provider-timeout must be a positive number of seconds, not %d", int(o.WaitProviderTimeout.Seconds()))
	}
	return nil
}

// Validate checks the request of `capctl init list-images` without any I/O, as Options.Check.
func (o ImagesOptions) Validate() error { return checkSelection(o.Selection, o.TargetNamespace) }

// checkSelection checks the provider flags and --target-namespace.
func checkSelection(sel Selection, targetNamespace string) error {
	if _, err := ParseRequests(sel); err != nil {
		return err
	}
	if targetNamespace != "" {
		if errs := validation.IsDNS1123Label(targetNamespace); len(errs) > 0 {
			return fmt.Errorf("--target-namespace %q: %s", targetNamespace, strings.Join(errs, "; "))
		}
	}
	return nil
}
