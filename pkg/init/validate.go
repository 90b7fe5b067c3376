package clusterinit

import (
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/repository"
)

// Validate checks the request of `capctl init`: the provider selection, the target namespace and
// a positive wait timeout (the flag's default is DefaultWaitProviderTimeout), without any I/O; its
// errors name the flags.
func (o InitRequest) Validate() error {
	if err := checkSelection(o.Selection, o.TargetNamespace); err != nil {
		return err
	}
	return install.CheckWaitProviderTimeout(o.WaitProviderTimeout)
}

// Validate checks the request of `capctl init list-images` without any I/O, as InitRequest.Validate.
func (o ImagesRequest) Validate() error { return checkSelection(o.Selection, o.TargetNamespace) }

// checkSelection checks the provider flags and --target-namespace.
func checkSelection(sel Selection, targetNamespace string) error {
	if _, err := ParseRequests(sel); err != nil {
		return err
	}
	return repository.CheckTargetNamespace(targetNamespace)
}
