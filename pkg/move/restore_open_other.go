//go:build !unix

package move

// noFollowFlags: no such open flags here; the Lstat before the open and the Stat after it
// refuse anything but a regular file.
const noFollowFlags = 0
