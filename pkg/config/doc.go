// Package config reads clusterctl's configuration file (clusterctl.yaml) with viper and answers
// variable look-ups, provider overrides, image overrides and cert-manager settings. No network here
// except downloading a config file given as an http(s) URL.
//
// Errors speak of the file: a syntax error names the line that breaks it (the parser itself names
// the line where the enclosing block starts) and quotes it; a `providers:` or `images:` entry of
// the wrong type is named by its path ("providers[0].type must be a string, not a list"), never by
// Go types (KindOfGoType).
package config
