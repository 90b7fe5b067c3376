// Package childproc runs the commands capctl starts on the user's behalf (a rollout's gate
// command) so that none outlives its purpose: the command and everything it starts form one
// process group, ended when the run is cancelled (Ctrl-C) and when the command itself exits, and
// output left open by a background child does not hold the caller.
package childproc
