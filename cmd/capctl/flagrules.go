package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/multicluster"
)

// This file is the one home of the flag rules several commands share: -n/--namespace with
// -A/--all-namespaces (the syntax of a namespace or cluster name is pkg/cluster's, checked by the
// requests), --contexts/--all-contexts against --kubeconfig-context, durations that must be positive,
// counts that must lie in a range and timeouts given in seconds.

// addNamespaceFlags adds -n/--namespace and -A/--all-namespaces, marked mutually exclusive with
// cobra's own rule (the error is a usage error: applyInvocationRules types it).
func addNamespaceFlags(cmd *cobra.Command, namespace *string, all *bool, namespaceUsage, allUsage string) {
	cmd.Flags().StringVarP(namespace, "namespace", "n", "", namespaceUsage)
	cmd.Flags().BoolVarP(all, "all-namespaces", "A", false, allUsage)
	cmd.MarkFlagsMutuallyExclusive("namespace", "all-namespaces")
}

// addContextsFlags adds --contexts and --all-contexts, the choice of several management clusters.
func addContextsFlags(cmd *cobra.Command, sel *multicluster.Selection) {
	cmd.Flags().StringSliceVar(&sel.Contexts, "contexts", nil, "Run over these management clusters: kubeconfig contexts separated by commas (one table, a MANAGEMENT column)")
	cmd.Flags().BoolVar(&sel.All, "all-contexts", false, "Run over every context of the kubeconfig (--kubeconfig, else the KUBECONFIG list merged as kubectl merges it)")
}

// checkContextsFlags refuses a selection that cannot work, before any file or cluster is read.
func checkContextsFlags(fl *pflag.FlagSet, sel multicluster.Selection) error {
	if !sel.Enabled() {
		return nil
	}
	if fl.Lookup("kubeconfig-context") != nil && fl.Changed("kubeconfig-context") {
		return usageErrorf("--kubeconfig-context names one management cluster: it cannot be combined with --contexts or --all-contexts")
	}
	if err := sel.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// positiveDuration is the pflag.Value of a duration flag that must be positive (a timeout, an
// interval): a zero or negative value is a flag error while flags are parsed, before anything
// is read. Its type is "duration", as pflag's own.
type positiveDuration struct{ p *time.Duration }

func (v positiveDuration) String() string { return v.p.String() }
func (v positiveDuration) Type() string   { return "duration" }

func (v positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return errors.New("must be positive, like 30s or 5m")
	}
	*v.p = d
	return nil
}

// positiveDurationVar adds a duration flag that refuses zero and negative values.
func positiveDurationVar(fl *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fl.Var(positiveDuration{p}, name, usage)
}

// windowFlag is the pflag.Value of --window: the value given must be a window (the feature's
// ParseWindow decides), so `--window ”` is refused while flags are parsed instead of meaning "no
// window" (leaving the flag out means that).
type windowFlag struct{ p *string }

func (v windowFlag) String() string { return *v.p }
func (v windowFlag) Type() string   { return "string" }

func (v windowFlag) Set(s string) error {
	if _, err := fleetupgrade.ParseWindow(s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

// boundedInt is the pflag.Value of a count flag that must lie in [min, max]: a value outside is a
// flag error while flags are parsed. It is for counts whose request reads 0 as "the default", so
// that an explicit 0 is refused rather than silently replaced. Its type is "int", as pflag's own.
type boundedInt struct {
	p        *int
	min, max int
}

func (v boundedInt) String() string { return strconv.Itoa(*v.p) }
func (v boundedInt) Type() string   { return "int" }

func (v boundedInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	if n < v.min || n > v.max {
		return fmt.Errorf("must be between %d and %d", v.min, v.max)
	}
	*v.p = n
	return nil
}

// intBetween stores value into p and returns the flag value that keeps p within [min, max]:
// fl.Var(intBetween(&n, 16, 1, 256), "name", usage).
func intBetween(p *int, value, min, max int) boundedInt {
	*p = value
	return boundedInt{p, min, max}
}

// seconds is the pflag.Value of a timeout given as a whole number of seconds (clusterctl's
// --wait-provider-timeout), stored as a time.Duration; its type is "int", as clusterctl's flag.
// The feature's request says whether zero is allowed (init and upgrade refuse it).
type seconds struct{ p *time.Duration }

func (v seconds) String() string { return strconv.Itoa(int(*v.p / time.Second)) }
func (v seconds) Type() string   { return "int" }

func (v seconds) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return err
	}
	*v.p = time.Duration(n) * time.Second
	return nil
}

// secondsVar adds a flag of whole seconds stored into p.
func secondsVar(fl *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fl.Var(seconds{p}, name, usage)
}

// Flag annotations of requireFlags: the flags one of which a flag needs, and why (with the
// names of the flags the rule was written for, which share one message).
const (
	needsAnnotation    = "capctl_needs"
	needsWhyAnnotation = "capctl_needs_why"
)

// requireFlags registers the rule cobra lacks, "each of flags is given only with one of oneOf"
// (cobra has exclusive and one-required groups, not "requires"). why says what the flags do;
// checkRequiredFlags, called by leafRun before complete, refuses a flag given without one of
// oneOf with "--a and --b <why>: they need --x or --y".
func requireFlags(cmd *cobra.Command, why string, flags []string, oneOf ...string) {
	label := "--" + strings.Join(flags, " and --")
	for _, name := range append(append([]string(nil), flags...), oneOf...) {
		if cmd.Flags().Lookup(name) == nil {
			panic("requireFlags: " + cmd.Name() + " has no flag --" + name)
		}
	}
	for _, name := range flags {
		_ = cmd.Flags().SetAnnotation(name, needsAnnotation, oneOf)
		_ = cmd.Flags().SetAnnotation(name, needsWhyAnnotation, []string{label, why, strconv.Itoa(len(flags))})
	}
}

// checkRequiredFlags refuses the first flag (in name order) that requireFlags registered, given
// without any of the flags it needs.
func checkRequiredFlags(fl *pflag.FlagSet) error {
	var err error
	fl.VisitAll(func(f *pflag.Flag) {
		oneOf, ok := f.Annotations[needsAnnotation]
		if err != nil || !ok || !flagUsed(f) {
			return
		}
		for _, name := range oneOf {
			if g := fl.Lookup(name); flagUsed(g) && g.Value.String() != "" {
				return
			}
		}
		why := f.Annotations[needsWhyAnnotation]
		verb := "it needs"
		if why[2] != "1" {
			verb = "they need"
		}
		err = usageErrorf("%s %s: %s --%s", why[0], why[1], verb, strings.Join(oneOf, " or --"))
	})
	return err
}

// flagUsed reports whether a flag was set on the command line, other than to false or to an
// empty list, which ask for nothing (`--all-contexts=false`). A flag that is needed must also
// be set to something: `--kubernetes-version ""` gives no version.
func flagUsed(f *pflag.Flag) bool {
	if !f.Changed {
		return false
	}
	v := f.Value.String()
	return v != "[]" && (f.Value.Type() != "bool" || v != "false")
}
