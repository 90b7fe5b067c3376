package clusterinit

import (
	"context"

	"github.com/capctl/capctl/pkg/env"
)

// Init is `capctl init` on the Env's management cluster, with the Env's configuration and
// provider repositories (initialize).
func Init(ctx context.Context, e env.Env, req InitRequest) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	cl, err := clientsOf(ctx, e)
	if err != nil {
		return nil, err
	}
	if cl.Cluster, err = e.Single(); err != nil {
		return nil, err
	}
	return initialize(ctx, cl, req)
}

// ListImages is `capctl init list-images`: over the Env's management cluster when it has one,
// else for a first init (listImages).
func ListImages(ctx context.Context, e env.Env, req ImagesRequest) (*Images, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	cl, err := clientsOf(ctx, e)
	if err != nil {
		return nil, err
	}
	if cl.Cluster, err = e.Optional(); err != nil {
		return nil, err
	}
	return listImages(ctx, cl, req)
}

// clientsOf is the Env's configuration and repositories as the verbs' Clients.
func clientsOf(ctx context.Context, e env.Env) (Clients, error) {
	var cl Clients
	var err error
	if cl.Config, err = e.Configuration(ctx); err != nil {
		return cl, err
	}
	cl.Repo, err = e.Repositories(ctx)
	return cl, err
}
