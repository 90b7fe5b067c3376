// Package cani is `capctl auth can-i COMMAND` as one verb for every front end (the command line
// and `capctl mcp`): the command's own check where its permissions depend on what it finds
// (delete and move fill the permissions table from their read-only plans), else the table's.
package cani

import (
	"context"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/deletion"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/move"
)

// Run checks the permissions of req.Command on the Env's clusters, changing nothing.
func Run(ctx context.Context, e env.Env, req authz.CanIRequest) (*authz.CanIResult, error) {
	switch req.Command {
	case "delete":
		return deletion.CanI(ctx, e, req)
	case "move":
		return move.CanI(ctx, e, req)
	}
	return authz.CanI(ctx, e, req)
}
