package digest

import "testing"

func TestDigests(t *testing.T) {
	// The SHA-256 of the empty input and of `{"a":1,"b":"x"}`, as sha256sum prints them.
	if got, want := Bytes(nil), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("Bytes(nil) = %s, want %s", got, want)
	}
	got, err := JSON(map[string]any{"b": "x", "a": 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := Bytes([]byte(`{"a":1,"b":"x"}`)); got != want {
		t.Errorf("JSON of a map = %s, want the digest of its sorted encoding %s", got, want)
	}
	if _, err := JSON(func() {}); err == nil {
		t.Error("JSON of a function: want the encoding error")
	}
}
