package output

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/capctl/capctl/internal/iostreams"
)

// Progress shows long work on stderr, never on stdout (which may be piped into kubectl). On a
// terminal counts are redrawn in place and a spinner turns; elsewhere (CI logs, files,
// TERM=dumb) it prints plain lines, counts only every tenth of the way, so logs stay short.
// Colour is used only where the streams allow it (NO_COLOR, non-terminals: none).
type Progress struct {
	w      io.Writer
	redraw bool
	color  bool

	mu       sync.Mutex
	lastStep map[string]int
	// spinnerFrames is how often a spinner redraws; tests shorten it.
	interval time.Duration
}

// NewProgress reports progress on s's stderr.
func NewProgress(s *iostreams.IOStreams) *Progress {
	return &Progress{
		w:        s.ErrOut,
		redraw:   s.CanRedrawStderr(),
		color:    s.ColorEnabledStderr(),
		lastStep: map[string]int{},
		interval: 100 * time.Millisecond,
	}
}

// Count reports that done of total items of label are finished ("Creating objects: 12/40").
func (p *Progress) Count(label string, done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.redraw {
		fmt.Fprintf(p.w, "\r\033[K%s: %d/%d", label, done, total)
		if done >= total {
			fmt.Fprintln(p.w)
		}
		return
	}
	step := done * 10 / max(total, 1)
	if _, seen := p.lastStep[label]; !seen || step > p.lastStep[label] || done >= total {
		p.lastStep[label] = step
		fmt.Fprintf(p.w, "%s: %d/%d\n", label, done, total)
	}
}

// Counter returns Count as a callback keyed by phase, with labels naming each phase for people
// (e.g. "create" -> "Creating objects in the target"); an unknown phase is shown as it is.
func (p *Progress) Counter(labels map[string]string) func(phase string, done, total int) {
	return func(phase string, done, total int) {
		label := labels[phase]
		if label == "" {
			label = phase
		}
		p.Count(label, done, total)
	}
}

// Step prints one line saying what starts now ("Mirroring cluster-api v1.14.0").
func (p *Progress) Step(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Start shows msg with a spinner until the returned stop is called with the outcome (nil: done).
// Without a terminal it prints msg once, and the outcome on its own line.
func (p *Progress) Start(msg string) (stop func(err error)) {
	if !p.redraw {
		p.Step("%s...", msg)
		return func(err error) {
			if err != nil {
				p.Step("%s: failed: %v", msg, err)
				return
			}
			p.Step("%s: done", msg)
		}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for i := 0; ; i++ {
			p.mu.Lock()
			fmt.Fprintf(p.w, "\r\033[K%s %s", spinnerFrames[i%len(spinnerFrames)], msg)
			p.mu.Unlock()
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func(err error) {
		once.Do(func() {
			close(quit)
			wg.Wait()
			p.mu.Lock()
			defer p.mu.Unlock()
			mark, end := p.paint("✓", "32"), ""
			if err != nil {
				mark, end = p.paint("✗", "31"), fmt.Sprintf(": %v", err)
			}
			fmt.Fprintf(p.w, "\r\033[K%s %s%s\n", mark, msg, end)
		})
	}
}

// paint colours s with the ANSI colour code when colour is allowed.
func (p *Progress) paint(s, code string) string {
	if !p.color {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}
