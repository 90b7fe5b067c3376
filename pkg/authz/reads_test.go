package authz

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestTolerable: an answer about one kind lets a read command go on; a bad credential or no
// answer at all does not.
func TestTolerable(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	forbidden := apierrors.NewForbidden(gr, "", errors.New(`User "u" cannot list resource "deployments" in API group "apps" in the namespace "capd-system"`))
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{forbidden, true},
		{fmt.Errorf("listing: %w", forbidden), true},
		{apierrors.NewServiceUnavailable("aggregated API down"), true},
		{apierrors.NewUnauthorized("bad token"), false},
		{errors.New("dial tcp 127.0.0.1:1: connection refused"), false},
	} {
		if got := Tolerable(tc.err); got != tc.want {
			t.Errorf("Tolerable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	u := FromError("capd-system", fmt.Errorf("wrapped: %w", forbidden))
	if u.Resource != "deployments.apps" || u.Verb != "list" || !u.Forbidden || u.String() != "deployments.apps (list in namespace capd-system: forbidden)" {
		t.Errorf("FromError = %+v (%s)", u, u)
	}
	var r Reads
	if err := r.Note("secrets", "ns", "get", forbidden); err != nil {
		t.Fatal(err)
	}
	if err := r.Note("secrets", "ns", "get", apierrors.NewUnauthorized("x")); err == nil {
		t.Fatal("an unauthorized read is recorded as a partial view")
	}
	if got := r.Unread(); len(got) != 1 || got[0].Resource != "secrets" {
		t.Errorf("Unread = %+v", got)
	}
}
