// Package authz is what capctl knows about permissions: the kinds a command could not read (so
// destructive commands refuse and read commands say their view is partial), the table of the
// verbs and kinds each command uses, the SelfSubjectAccessReview preflight over that table, and
// the Role/ClusterRole snippet a refusal prints.
package authz

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Unreadable is one kind a command could not read.
type Unreadable struct {
	// Resource is plural.group ("roles.rbac.authorization.k8s.io"; core kinds have no group).
	Resource string `json:"resource"`
	// Namespace is where the read was tried; empty means all namespaces or cluster-wide.
	Namespace string `json:"namespace,omitempty"`
	// Verb is the verb refused or failed ("list", "get").
	Verb string `json:"verb"`
	// Forbidden is true when RBAC refused the read (granting the verb fixes it).
	Forbidden bool `json:"forbidden"`
	// Reason is the server's answer, shortened.
	Reason string `json:"reason"`
}

// NewUnreadable records a failed read of resource (plural.group) in namespace with verb.
func NewUnreadable(resource, namespace, verb string, err error) Unreadable {
	u := Unreadable{Resource: strings.TrimSuffix(resource, "."), Namespace: namespace, Verb: verb, Forbidden: apierrors.IsForbidden(err)}
	switch {
	case u.Forbidden:
		u.Reason = "forbidden"
	case err != nil:
		u.Reason = err.Error()
	}
	return u
}

func (u Unreadable) String() string {
	where := "all namespaces"
	if u.Namespace != "" {
		where = "namespace " + u.Namespace
	}
	return fmt.Sprintf("%s (%s in %s: %s)", u.Resource, u.Verb, where, u.Reason)
}

// Describe lists the unreadable kinds, sorted, on one line each (indent prefixes each line).
func Describe(us []Unreadable, indent string) string {
	lines := make([]string, 0, len(us))
	for _, u := range us {
		lines = append(lines, indent+"- "+u.String())
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// PartialViewNote is what a read command prints under a view that misses the unread kinds
// (one wording for describe, diagnose and get providers; the exit code is then 3).
func PartialViewNote(unread []Unreadable) string {
	return fmt.Sprintf("Partial view: %d kind(s) could not be read (grant the verbs or run as a user who has them):\n%s\n", len(unread), Describe(unread, "  "))
}

// IncompleteError refuses a destructive command whose listing is incomplete: what it did not
// see it would leave behind (or delete records of) without knowing.
type IncompleteError struct {
	// Command is what refused ("capctl delete").
	Command string
	// Unreadable are the kinds that could not be listed.
	Unreadable []Unreadable
}

func (e *IncompleteError) Error() string {
	fix := "fix the reads above (the server's answer says why) and run it again"
	if e.forbiddenOnly() {
		fix = "grant the missing verbs (the snippet below, or `capctl auth can-i " + strings.TrimPrefix(e.Command, "capctl ") + "`) or run it as a user who has them, then run it again"
	}
	msg := fmt.Sprintf("%s refuses to act on an incomplete view: %d kind(s) could not be read, so it cannot know what it would leave behind:\n%s\nNothing was changed; %s",
		e.Command, len(e.Unreadable), Describe(e.Unreadable, "  "), fix)
	if snippet := SnippetFor(e.Unreadable); snippet != "" {
		msg += "\n\n" + snippet
	}
	return msg
}

func (e *IncompleteError) forbiddenOnly() bool {
	for _, u := range e.Unreadable {
		if !u.Forbidden {
			return false
		}
	}
	return true
}

// IsIncomplete tells whether err is (or wraps) an IncompleteError.
func IsIncomplete(err error) bool {
	var ie *IncompleteError
	return errors.As(err, &ie)
}
