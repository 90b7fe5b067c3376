package plugin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
)

// Prefixes are the file name prefixes of plugins, in the order a command looks them up: capctl's
// own first, then clusterctl's, so a clusterctl plugin works unchanged and a capctl one can
// replace it.
var Prefixes = []string{"capctl-", "clusterctl-"}

// Plugin is one executable that a command line maps to.
type Plugin struct {
	// Path is the executable's full path.
	Path string
	// Name is the command as typed after `capctl` (`operator`, `foo bar`).
	Name string
}

// commandName turns a plugin file name (without prefix and extension) into the command a user
// types: dashes separate words, an underscore stands for a dash inside a word (kubectl's rule,
// so capctl-foo_bar is `capctl foo-bar` and capctl-foo-bar is `capctl foo bar`).
func commandName(base string) string {
	words := strings.Split(base, "-")
	for i, w := range words {
		words[i] = strings.ReplaceAll(w, "_", "-")
	}
	return strings.Join(words, " ")
}

// Find returns the plugin that args (the command line after `capctl`) names, and the arguments
// to pass it. The leading words up to the first flag name it, longest match first: `capctl foo
// bar -x` tries capctl-foo-bar, clusterctl-foo-bar, then capctl-foo and clusterctl-foo (passed
// `bar -x`). builtin reports whether a first word is a built-in command, which no plugin may
// replace. found is false when nothing matches; path is the PATH list to search.
func Find(args []string, path string, builtin func(string) bool) (p Plugin, rest []string, found bool) {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		if !wordOfName(a) {
			// Not a word of a plugin name: a path (`capctl ../../tmp/x` would join to a file
			// outside PATH's folders), so the name ends before it.
			break
		}
		words = append(words, a)
	}
	if len(words) == 0 || builtin(words[0]) {
		return Plugin{}, nil, false
	}
	dirs := filepath.SplitList(path)
	for n := len(words); n > 0; n-- {
		pieces := make([]string, n)
		for i, w := range words[:n] {
			pieces[i] = strings.ReplaceAll(w, "-", "_")
		}
		base := strings.Join(pieces, "-")
		for _, prefix := range Prefixes {
			if file, ok := lookPath(prefix+base, dirs); ok {
				return Plugin{Path: file, Name: strings.Join(words[:n], " ")}, args[n:], true
			}
		}
	}
	return Plugin{}, nil, false
}

// wordOfName tells whether a command-line word can be part of a plugin's name: no path
// separator and no "..", so that capctl-NAME stays a file name inside a PATH folder.
func wordOfName(w string) bool {
	return !strings.ContainsAny(w, `/\`) && !strings.Contains(w, "..") && !strings.ContainsRune(w, filepath.Separator)
}

// lookPath finds an executable regular file called name in dirs, in order.
func lookPath(name string, dirs []string) (string, bool) {
	for _, dir := range dirs {
		if dir == "" {
			// An empty PATH entry means the working directory to a shell; capctl, like kubectl's
			// lookup through exec.LookPath, does not run files from it implicitly.
			continue
		}
		for _, file := range candidates(filepath.Join(dir, name)) {
			if fi, err := os.Stat(file); err == nil && fi.Mode().IsRegular() && executable(file, fi) {
				return file, true
			}
		}
	}
	return "", false
}

// candidates are the files that can hold the executable name: itself, and on Windows with each
// of PATHEXT's extensions.
func candidates(file string) []string {
	if runtime.GOOS != "windows" {
		return []string{file}
	}
	out := []string{file}
	for _, ext := range windowsExts() {
		out = append(out, file+ext)
	}
	return out
}

func windowsExts() []string {
	exts := strings.Split(strings.ToLower(os.Getenv("PATHEXT")), ";")
	if os.Getenv("PATHEXT") == "" {
		exts = []string{".com", ".exe", ".bat", ".cmd"}
	}
	var out []string
	for _, e := range exts {
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

// executable tells whether the file can be run: an execute bit on Unix, an executable extension
// on Windows.
func executable(file string, fi fs.FileInfo) bool {
	if runtime.GOOS == "windows" {
		ext := strings.ToLower(filepath.Ext(file))
		for _, e := range windowsExts() {
			if ext == e {
				return true
			}
		}
		return false
	}
	return fi.Mode().Perm()&0o111 != 0
}

// Run runs p with args, the process's environment and the given streams, and returns its exit
// code. capctl stays alive while it runs: an interrupt from the terminal reaches the plugin
// directly (same process group), and a SIGTERM or SIGHUP sent to capctl alone is passed on.
func Run(p Plugin, args []string, in io.Reader, out, errOut io.Writer) (int, error) {
	cmd := exec.Command(p.Path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errOut
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("running plugin %s: %w", p.Path, err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	signal.Stop(sigs)
	if err == nil {
		return 0, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if code := exit.ExitCode(); code >= 0 {
			return code, nil
		}
		// Killed by a signal: report it as a shell does (128 + signal number).
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
	}
	return 1, fmt.Errorf("running plugin %s: %w", p.Path, err)
}

// Entry is one plugin file found on PATH, with what is wrong with it.
type Entry struct {
	// Path is the file's full path.
	Path string `json:"path"`
	// Command is what a user types after capctl to run it.
	Command string `json:"command"`
	// Warnings say why `capctl Command` would not run this file; empty when it would.
	Warnings []string `json:"warnings,omitempty"`
}

// List returns every plugin file on path, in PATH order, each with the reasons it would not run:
// not executable, its first word a built-in command, or an earlier file (on PATH, or with the
// capctl- prefix, which is looked up first) that the same command runs instead.
func List(path string, builtin func(string) bool) []Entry {
	var entries []Entry
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || seen[dir] {
			continue
		}
		seen[dir] = true
		files, err := os.ReadDir(dir)
		if err != nil {
			continue // a PATH entry that does not exist is common and harmless
		}
		for _, f := range files {
			for _, prefix := range Prefixes {
				if !strings.HasPrefix(f.Name(), prefix) || f.IsDir() {
					continue
				}
				base := strings.TrimPrefix(f.Name(), prefix)
				if runtime.GOOS == "windows" {
					base = strings.TrimSuffix(base, filepath.Ext(base))
				}
				if base == "" {
					continue
				}
				entries = append(entries, Entry{Path: filepath.Join(dir, f.Name()), Command: commandName(base)})
			}
		}
	}
	for i := range entries {
		e := &entries[i]
		fi, err := os.Stat(e.Path)
		switch {
		case err != nil:
			e.Warnings = append(e.Warnings, fmt.Sprintf("cannot be read: %v", err))
		case !fi.Mode().IsRegular() || !executable(e.Path, fi):
			e.Warnings = append(e.Warnings, "not executable: it is skipped (chmod +x it to use it)")
		}
		if first := strings.Fields(e.Command)[0]; builtin(first) {
			e.Warnings = append(e.Warnings, fmt.Sprintf("shadowed by the built-in command %q: it never runs", first))
			continue
		}
		if len(e.Warnings) > 0 {
			continue
		}
		words := strings.Fields(e.Command)
		if p, rest, ok := Find(words, path, builtin); ok && len(rest) == 0 && !sameFile(p.Path, e.Path) {
			e.Warnings = append(e.Warnings, fmt.Sprintf("shadowed by %s, which `capctl %s` runs", p.Path, e.Command))
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Command < entries[j].Command })
	return entries
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// SearchPath is the list of folders plugins are looked up in: the system's PATH, as
// exec.LookPath reads it (it is the operating system's setting, not one of capctl's).
func SearchPath() string { return os.Getenv("PATH") }
