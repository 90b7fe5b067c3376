// Package config reads clusterctl's configuration file (clusterctl.yaml) with viper and answers
// variable look-ups, provider overrides, image overrides and cert-manager settings. No network here
// except downloading a config file given as an http(s) URL.
package config
