// Package plugin finds and runs capctl's plugins: executables named capctl-NAME or clusterctl-NAME
// on PATH, which `capctl NAME args...` runs when NAME is not a built-in command (as kubectl and
// clusterctl run theirs, so a team's clusterctl plugins keep working). It owns the naming rule
// (which file a command line maps to, and the reverse for listing), the lookup order, the
// listing with its warnings and the running with arguments, environment, streams and exit code
// passed through. It knows nothing about cobra: the caller says which names are built in.
package plugin
