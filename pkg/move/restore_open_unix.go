//go:build unix

package move

import "syscall"

// noFollowFlags open a backup file without following a symlink put there after the Lstat, and
// without blocking on a FIFO put there after it.
const noFollowFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
