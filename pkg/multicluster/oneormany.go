package multicluster

import (
	"encoding/json"
	"io"
)

// OneOrMany is a verb's result over the run's management clusters: one management cluster's
// view (One), or several's merged view (Many, with a MANAGEMENT column). It marshals as the view
// it holds, so the JSON of a run over one management cluster stays what it always was.
type OneOrMany[O, M any] struct {
	One     O
	Many    M
	Several bool
}

// MarshalJSON marshals the view held.
func (v OneOrMany[O, M]) MarshalJSON() ([]byte, error) {
	if v.Several {
		return json.Marshal(v.Many)
	}
	return json.Marshal(v.One)
}

// Render prints the view held, with one's renderer or many's.
func (v OneOrMany[O, M]) Render(w io.Writer, one func(io.Writer, O) error, many func(io.Writer, M) error) error {
	if v.Several {
		return many(w, v.Many)
	}
	return one(w, v.One)
}
