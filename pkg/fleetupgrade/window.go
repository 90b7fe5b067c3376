package fleetupgrade

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is when a rollout's waves may start (--window 'Sat,Sun 02:00-06:00 UTC'): on the days
// listed (every day when none is), from Start to End wall-clock time in Location. When End is
// not after Start the window crosses midnight: it opens on a listed day and closes the next day
// at End (Start == End: a whole day). Times are wall-clock times of the zone, so a window keeps
// its hours across a daylight-saving change.
type Window struct {
	days       [7]bool // by time.Weekday
	start, end int     // minutes after midnight
	loc        *time.Location
	spec       string
}

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseWindow reads `[DAYS ]HH:MM-HH:MM[ ZONE]`: DAYS a comma list of Mon..Sun or ranges
// (Mon-Fri, Fri-Mon), ZONE UTC (the default) or an IANA zone such as Europe/Berlin.
func ParseWindow(s string) (*Window, error) {
	bad := func(why string) error {
		return fmt.Errorf("--window %q: %s; write it like 'Sat,Sun 02:00-06:00 UTC' or 'Mon-Fri 22:00-04:00 Europe/Berlin'", s, why)
	}
	fields := strings.Fields(s)
	if len(fields) == 0 || len(fields) > 3 {
		return nil, bad("want days, a time range and a zone")
	}
	w := &Window{loc: time.UTC, spec: strings.Join(fields, " ")}
	i := 0
	if !strings.Contains(fields[0], ":") {
		if err := w.parseDays(fields[0]); err != nil {
			return nil, bad(err.Error())
		}
		i++
	} else {
		for d := range w.days {
			w.days[d] = true
		}
	}
	if i >= len(fields) {
		return nil, bad("no time range HH:MM-HH:MM")
	}
	from, to, ok := strings.Cut(fields[i], "-")
	if !ok {
		return nil, bad(fmt.Sprintf("%q is not a time range HH:MM-HH:MM", fields[i]))
	}
	var err error
	if w.start, err = clock(from); err != nil {
		return nil, bad(err.Error())
	}
	if w.end, err = clock(to); err != nil {
		return nil, bad(err.Error())
	}
	i++
	if i < len(fields) {
		if w.loc, err = time.LoadLocation(fields[i]); err != nil || fields[i] == "Local" {
			return nil, bad(fmt.Sprintf("%q is not a time zone (UTC, or an IANA name such as Europe/Berlin)", fields[i]))
		}
		i++
	}
	if i != len(fields) {
		return nil, bad("unexpected " + strings.Join(fields[i:], " "))
	}
	return w, nil
}

func (w *Window) parseDays(s string) error {
	day := func(d string) (time.Weekday, error) {
		wd, ok := weekdays[strings.ToLower(d)]
		if !ok {
			return 0, fmt.Errorf("%q is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)", d)
		}
		return wd, nil
	}
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(part, "-")
		first, err := day(a)
		if err != nil {
			return err
		}
		last := first
		if isRange {
			if last, err = day(b); err != nil {
				return err
			}
		}
		for d := first; ; d = (d + 1) % 7 {
			w.days[d] = true
			if d == last {
				break
			}
		}
	}
	return nil
}

// clock reads HH:MM (00:00 to 24:00) as minutes after midnight.
func clock(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || len(m) != 2 || hh < 0 || mm < 0 || mm > 59 || hh > 24 || (hh == 24 && mm != 0) {
		return 0, fmt.Errorf("%q is not a time HH:MM", s)
	}
	return hh*60 + mm, nil
}

func (w *Window) String() string { return w.spec }

// opening is the window that opens on the day of day (in the window's zone): when it opens and
// closes, and whether that day is listed.
func (w *Window) opening(day time.Time) (open, close time.Time, listed bool) {
	y, m, d := day.Date()
	open = time.Date(y, m, d, w.start/60, w.start%60, 0, 0, w.loc)
	closeDay := d
	if w.end <= w.start {
		closeDay++
	}
	close = time.Date(y, m, closeDay, w.end/60, w.end%60, 0, 0, w.loc)
	return open, close, w.days[time.Date(y, m, d, 12, 0, 0, 0, w.loc).Weekday()]
}

// Open tells whether t is in the window, and when: until when it stays open.
func (w *Window) Open(t time.Time) (bool, time.Time) {
	local := t.In(w.loc)
	// A window that crosses midnight may have opened the day before.
	for _, back := range []int{1, 0} {
		y, m, d := local.Date()
		open, close, listed := w.opening(time.Date(y, m, d-back, 12, 0, 0, 0, w.loc))
		if listed && !t.Before(open) && t.Before(close) {
			return true, close
		}
	}
	return false, time.Time{}
}

// Next is when the window is next open at or after t: t itself when it is open.
func (w *Window) Next(t time.Time) time.Time {
	if ok, _ := w.Open(t); ok {
		return t
	}
	local := t.In(w.loc)
	y, m, d := local.Date()
	for i := 0; i <= 7; i++ {
		open, _, listed := w.opening(time.Date(y, m, d+i, 12, 0, 0, 0, w.loc))
		if listed && !open.Before(t) {
			return open
		}
	}
	return time.Time{} // no day listed: ParseWindow never makes such a window
}
