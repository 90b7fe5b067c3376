package authz

import (
	"context"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CanIRequest is one `capctl auth can-i COMMAND`: the clusters, by side, and the namespace.
type CanIRequest struct {
	Command   string
	Namespace string
	// Clusters maps each side the command uses to a client and its address (a missing side is
	// reported as not checked).
	Clusters map[Side]client.Client
	Hosts    map[Side]string
}

// CanIResult is what each cluster lacks for the command.
type CanIResult struct {
	Command string       `json:"command"`
	Sides   []SideResult `json:"sides"`
}

// SideResult is one cluster's answer.
type SideResult struct {
	Side    Side         `json:"side"`
	Host    string       `json:"host,omitempty"`
	Checked bool         `json:"checked"`
	Missing []Permission `json:"missing,omitempty"`
	// RunTime lists the rules whose kinds are found only when the command runs (it checks them
	// then, before its first write).
	RunTime []string `json:"runTime,omitempty"`
}

// OK tells whether nothing checked is missing.
func (r *CanIResult) OK() bool {
	for _, s := range r.Sides {
		if len(s.Missing) > 0 {
			return false
		}
	}
	return true
}

// CanI checks the command's table rules on each cluster, changing nothing.
func CanI(ctx context.Context, req CanIRequest) (*CanIResult, error) {
	cmd, err := Lookup(req.Command)
	if err != nil {
		return nil, err
	}
	res := &CanIResult{Command: cmd.Name}
	for _, side := range cmd.Sides() {
		sr := SideResult{Side: side, Host: req.Hosts[side]}
		static := Command{Name: cmd.Name}
		for _, r := range cmd.Rules {
			if r.Side != side {
				continue
			}
			if strings.HasPrefix(r.Resources[0], "<") {
				sr.RunTime = append(sr.RunTime, fmt.Sprintf("%s %s", strings.Join(r.Verbs, ","), r.Resources[0]))
				continue
			}
			static.Rules = append(static.Rules, r)
		}
		if c := req.Clusters[side]; c != nil {
			sr.Checked = true
			if sr.Missing, err = Check(ctx, c, static.Permissions(side, Expansion{Namespace: req.Namespace})); err != nil {
				return nil, fmt.Errorf("%s %s: %w", side, sr.Host, err)
			}
		}
		res.Sides = append(res.Sides, sr)
	}
	return res, nil
}

// Render prints the result as text: per cluster what is missing and the snippet granting it.
func (r *CanIResult) Render(w io.Writer) error {
	for _, s := range r.Sides {
		switch {
		case !s.Checked:
			fmt.Fprintf(w, "%s: not checked (name it: --to-kubeconfig for a move's target)\n", s.Side)
		case len(s.Missing) == 0:
			fmt.Fprintf(w, "%s %s: yes, capctl %s may do everything it needs here\n", s.Side, s.Host, r.Command)
		default:
			fmt.Fprintf(w, "%s %s: no, %d permission(s) missing:\n", s.Side, s.Host, len(s.Missing))
			for _, p := range s.Missing {
				fmt.Fprintf(w, "  - %s\n", p)
			}
			fmt.Fprintln(w, Snippet("capctl-"+strings.ReplaceAll(r.Command, " ", "-"), s.Missing))
		}
		for _, rt := range s.RunTime {
			fmt.Fprintf(w, "  (checked when the command runs: %s)\n", rt)
		}
	}
	return nil
}
