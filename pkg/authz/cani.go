package authz

import (
	"context"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/env"
)

// CanIRequest is one `capctl auth can-i COMMAND`: the clusters, by side, and the namespace.
type CanIRequest struct {
	Command   string
	Namespace string
	// Clusters maps each side the command uses to a client and its address (a missing side is
	// reported as not checked).
	Clusters map[Side]client.Client
	Hosts    map[Side]string
	// Kinds fills the table's placeholders (EveryMovedKind, ...) from the command's own read-only
	// plan, as the command fills them before its first write; a placeholder left out is
	// reported as checked only when the command runs.
	Kinds map[string][]string
	// Unreadable are, per side, the kinds that plan could not list: the command would refuse its
	// incomplete view, so those refused by RBAC are missing permissions too.
	Unreadable map[Side][]Unreadable
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

// CanI is `capctl auth can-i COMMAND`: the command's table rules checked on each of the Env's
// clusters, changing nothing. The management cluster answers for the management and source
// sides, the Env's Target for the target side (not checked without one); the namespace is the
// request's, else the kubeconfig context's. Commands whose permissions depend on what they find
// (delete, move) fill the request's Kinds from their own read-only plan first.
func CanI(ctx context.Context, e env.Env, req CanIRequest) (*CanIResult, error) {
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	req.Namespace = c.NamespaceOr(req.Namespace)
	req.Clusters = map[Side]client.Client{Management: c, Source: c}
	req.Hosts = map[Side]string{Management: c.Config.Host, Source: c.Config.Host}
	if e.Target != nil {
		req.Clusters[Target], req.Hosts[Target] = e.Target, e.Target.Config.Host
	}
	return canI(ctx, req)
}

// canI checks the command's table rules on each cluster of the request, changing nothing.
func canI(ctx context.Context, req CanIRequest) (*CanIResult, error) {
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
			if _, known := req.Kinds[r.Resources[0]]; strings.HasPrefix(r.Resources[0], "<") && !known {
				sr.RunTime = append(sr.RunTime, fmt.Sprintf("%s %s", strings.Join(r.Verbs, ","), r.Resources[0]))
				continue
			}
			static.Rules = append(static.Rules, r)
		}
		if c := req.Clusters[side]; c != nil {
			sr.Checked = true
			if sr.Missing, err = Check(ctx, c, static.Permissions(side, Expansion{Namespace: req.Namespace, Kinds: req.Kinds})); err != nil {
				return nil, fmt.Errorf("%s %s: %w", side, sr.Host, err)
			}
			sr.Missing = addUnlisted(sr.Missing, req.Unreadable[side])
		}
		res.Sides = append(res.Sides, sr)
	}
	return res, nil
}

// addUnlisted adds to missing the list permissions RBAC refused to the command's read-only plan
// (once each).
func addUnlisted(missing []Permission, us []Unreadable) []Permission {
	seen := map[Permission]bool{}
	for _, p := range missing {
		seen[p] = true
	}
	for _, u := range us {
		if !u.Forbidden {
			continue
		}
		g, r := SplitResource(u.Resource)
		verb, _, _ := strings.Cut(u.Verb, " ")
		p := Permission{Group: g, Resource: r, Verb: verb, Namespace: u.Namespace}
		if !seen[p] {
			seen[p] = true
			missing = append(missing, p)
		}
	}
	return missing
}

// Render prints the result as text: per cluster what is missing and the snippet granting it.
func (r *CanIResult) Render(w io.Writer) error {
	for _, s := range r.Sides {
		switch {
		case !s.Checked:
			fmt.Fprintf(w, "%s: not checked (name it: --to-kubeconfig for a move's target)\n", s.Side)
		case len(s.Missing) == 0 && len(s.RunTime) == 0:
			fmt.Fprintf(w, "%s %s: yes, capctl %s may do everything it needs here\n", s.Side, s.Host, r.Command)
		case len(s.Missing) == 0:
			fmt.Fprintf(w, "%s %s: yes for every permission known before it runs; the rest depends on what it finds then, and it checks them before its first write\n", s.Side, s.Host)
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
