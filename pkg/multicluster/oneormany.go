package multicluster

import "encoding/json"

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
