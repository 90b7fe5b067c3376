package fleetupgrade

import (
	"strings"
	"testing"
	"time"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		window string
		now    string // RFC 3339
		open   bool
		until  string // when open: when it closes
		next   string // when closed: when it opens next
	}{
		// Days, UTC. 2026-12-05 is a Saturday.
		{"Sat,Sun 02:00-06:00 UTC", "2026-12-05T03:00:00Z", true, "2026-12-05T06:00:00Z", ""},
		{"Sat,Sun 02:00-06:00 UTC", "2026-12-05T02:00:00Z", true, "2026-12-05T06:00:00Z", ""},  // opens at 02:00 sharp
		{"Sat,Sun 02:00-06:00 UTC", "2026-12-05T06:00:00Z", false, "", "2026-12-06T02:00:00Z"}, // closed at 06:00 sharp
		{"Sat,Sun 02:00-06:00 UTC", "2026-12-06T07:00:00Z", false, "", "2026-12-12T02:00:00Z"}, // Sunday after: next Saturday
		{"Sat,Sun 02:00-06:00 UTC", "2026-12-02T04:00:00Z", false, "", "2026-12-05T02:00:00Z"}, // a Wednesday
		{"sat,sun 02:00-06:00", "2026-12-05T03:00:00Z", true, "2026-12-05T06:00:00Z", ""},      // zone defaults to UTC, days any case
		{"Mon-Fri 09:00-17:00 UTC", "2026-12-04T16:59:00Z", true, "2026-12-04T17:00:00Z", ""},  // a Friday
		{"Mon-Fri 09:00-17:00 UTC", "2026-12-05T10:00:00Z", false, "", "2026-12-07T09:00:00Z"}, // Saturday: Monday
		{"Fri-Mon 09:00-10:00 UTC", "2026-12-07T09:30:00Z", true, "2026-12-07T10:00:00Z", ""},  // a range across the week's end
		{"Fri-Mon 09:00-10:00 UTC", "2026-12-08T09:30:00Z", false, "", "2026-12-11T09:00:00Z"}, // Tuesday: Friday
		{"01:00-02:00 UTC", "2026-12-02T03:00:00Z", false, "", "2026-12-03T01:00:00Z"},         // no days: every day
		// Crossing midnight: opens on the listed day, closes the next day.
		{"Fri 22:00-04:00 UTC", "2026-12-04T23:00:00Z", true, "2026-12-05T04:00:00Z", ""},
		{"Fri 22:00-04:00 UTC", "2026-12-05T03:59:00Z", true, "2026-12-05T04:00:00Z", ""},  // Saturday morning, Friday's window
		{"Fri 22:00-04:00 UTC", "2026-12-05T22:30:00Z", false, "", "2026-12-11T22:00:00Z"}, // Saturday night is not Friday's
		{"Fri 22:00-04:00 UTC", "2026-12-04T03:00:00Z", false, "", "2026-12-04T22:00:00Z"}, // Friday morning: Thursday not listed
		{"Sat 00:00-24:00 UTC", "2026-12-05T23:59:00Z", true, "2026-12-06T00:00:00Z", ""},
		{"Sat 06:00-06:00 UTC", "2026-12-06T05:00:00Z", true, "2026-12-06T06:00:00Z", ""}, // equal ends: a whole day
		// Time zones: the window is in its zone's wall clock. Berlin is UTC+1 in December.
		{"Sat 02:00-06:00 Europe/Berlin", "2026-12-05T01:30:00Z", true, "2026-12-05T05:00:00Z", ""},
		{"Sat 02:00-06:00 Europe/Berlin", "2026-12-05T00:30:00Z", false, "", "2026-12-05T01:00:00Z"},
		{"Sat 02:00-06:00 Europe/Berlin", "2026-12-05T05:30:00Z", false, "", "2026-12-12T01:00:00Z"},
		// A Saturday in Tokyo (UTC+9) is still Friday in UTC.
		{"Sat 08:00-09:00 Asia/Tokyo", "2026-12-04T23:15:00Z", true, "2026-12-05T00:00:00Z", ""},
		// New York, crossing midnight, seen from UTC's next day.
		{"Sun 23:00-01:00 America/New_York", "2026-12-07T04:30:00Z", true, "2026-12-07T06:00:00Z", ""},
		// Daylight saving: Berlin moves to UTC+2 on 2026-03-29; the window keeps its wall-clock hours.
		{"Sun 04:00-05:00 Europe/Berlin", "2026-03-29T02:30:00Z", true, "2026-03-29T03:00:00Z", ""},
		{"Sat 04:00-05:00 Europe/Berlin", "2026-03-28T03:30:00Z", true, "2026-03-28T04:00:00Z", ""},
		{"Sat 04:00-05:00 Europe/Berlin", "2026-03-28T05:00:00Z", false, "", "2026-04-04T02:00:00Z"},
	} {
		w, err := ParseWindow(tc.window)
		if err != nil {
			t.Fatalf("%s: %v", tc.window, err)
		}
		now := at(t, tc.now)
		open, until := w.Open(now)
		if open != tc.open {
			t.Errorf("%s at %s: open %v, want %v", tc.window, tc.now, open, tc.open)
			continue
		}
		if open {
			if !until.Equal(at(t, tc.until)) {
				t.Errorf("%s at %s: closes %s, want %s", tc.window, tc.now, until.UTC().Format(time.RFC3339), tc.until)
			}
			if !w.Next(now).Equal(now) {
				t.Errorf("%s at %s: open, but next opening %s", tc.window, tc.now, w.Next(now))
			}
			continue
		}
		if next := w.Next(now); !next.Equal(at(t, tc.next)) {
			t.Errorf("%s at %s: next opens %s, want %s", tc.window, tc.now, next.UTC().Format(time.RFC3339), tc.next)
		}
	}
}

func TestParseWindowRefuses(t *testing.T) {
	for _, bad := range []string{
		"", "Sat", "Sat,Sun", "Sat 02:00", "Sat 2-6 UTC", "Sat 02:00-06:60 UTC", "Sat 25:00-06:00 UTC", "Sat 24:30-06:00 UTC",
		"Sat 02:00-06:00 Mars/Olympus", "Sat 02:00-06:00 Local", "Sat,Funday 02:00-06:00", "Sat 02:00-06:00 UTC extra", "Sat 02:0-06:00",
	} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("%q accepted", bad)
		} else if !strings.Contains(err.Error(), "write it like") {
			t.Errorf("%q: %v (does not say how to write it)", bad, err)
		}
	}
}
