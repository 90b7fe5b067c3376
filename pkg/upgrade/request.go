package upgrade

import (
	"fmt"

	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/provider"
)

// DefaultWaitProviderTimeout is how long `upgrade apply --wait-providers` waits for each provider
// by default (--wait-provider-timeout, 300 s): install.Wait's own default.
const DefaultWaitProviderTimeout = install.DefaultWaitTimeout

// providerFlags are the flags that name providers, for the errors of Validate.
const providerFlags = "--core, -b/--bootstrap, -c/--control-plane, -i/--infrastructure, --ipam, --runtime-extension, --addon"

// Validate checks the request without any I/O: a contract (only the current one) or providers,
// each with the version to upgrade to; its errors name the flags.
func (r Request) Validate() error {
	for _, p := range r.Providers {
		if p.Ref.Version == "" || p.Ref.Version == "latest" {
			return fmt.Errorf("%s %s: give the version to upgrade to, as [namespace/]name:version", p.Type.Flag(), p.Ref)
		}
		if p.Type == provider.CoreProviderType && p.Ref.Name != provider.CoreProviderName {
			return fmt.Errorf("--core %s: the core provider is %s", p.Ref, provider.CoreProviderName)
		}
	}
	return r.validateChoice()
}

// validateChoice checks that the request names a contract (only the current one) or providers,
// not both. ValidateRequest checks the providers' versions itself, listing every problem at once.
func (r Request) validateChoice() error {
	switch {
	case r.Contract == "" && len(r.Providers) == 0:
		return fmt.Errorf("either --contract or at least one of %s is required", providerFlags)
	case r.Contract != "" && len(r.Providers) > 0:
		return fmt.Errorf("--contract cannot be combined with %s", providerFlags)
	case r.Contract != "" && r.Contract != capi.Current:
		return fmt.Errorf("capctl can only upgrade to the %s contract, %s was requested", capi.Current, r.Contract)
	}
	return nil
}

// Validate checks the options without any I/O; its errors name the flags. The wait's timeout
// must be positive (the flag's default is DefaultWaitProviderTimeout; Apply reads zero as it).
func (o ApplyOptions) Validate() error {
	return install.CheckWaitProviderTimeout(o.WaitTimeout)
}
