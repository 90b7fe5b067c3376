package config

import (
	"os"
	"path/filepath"
	"runtime"
)

// ConfigDir is clusterctl's configuration folder: `$XDG_CONFIG_HOME/cluster-api`, with the
// platform default for XDG_CONFIG_HOME when it is unset.
func ConfigDir() string {
	return filepath.Join(xdgConfigHome(), "cluster-api")
}

// LegacyConfigDir is the folder clusterctl used before it followed XDG: `~/.cluster-api`.
func LegacyConfigDir() string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cluster-api")
}

// CacheDir is where capctl keeps downloaded provider files: `$XDG_CACHE_HOME/capctl`.
func CacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "capctl")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "capctl")
	}
	return filepath.Join(os.TempDir(), "capctl-cache")
}

func xdgConfigHome() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support")
	case "windows":
		if d := os.Getenv("LOCALAPPDATA"); d != "" {
			return d
		}
	}
	return filepath.Join(home, ".config")
}
