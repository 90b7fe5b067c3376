package templates

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/repository"
)

// FetchOptions tune Fetch.
type FetchOptions struct {
	// HTTPClient downloads URLs; nil uses a client with a 30 s timeout.
	HTTPClient *http.Client
	// Stdin is read for "-".
	Stdin io.Reader
	// GitHubToken, when set, is sent to github.com and raw.githubusercontent.com (private
	// repositories), or to the RawGitHubURL host for blob pages; only over HTTPS
	// (repository.WithCredential), never to other hosts.
	GitHubToken string
	// RawGitHubURL replaces https://raw.githubusercontent.com (tests, GitHub Enterprise).
	RawGitHubURL string
	// Log receives the warning when the token is withheld (plain HTTP). Nil discards.
	Log *logging.Logger
}

// Fetch reads a template given as --from: "-" (stdin), a local path or file:// URL, an http(s)
// URL, or a GitHub blob page URL (https://github.com/OWNER/REPO/blob/REF/PATH), which is read from
// its raw form. It returns the bytes and the name to use in messages.
func Fetch(ctx context.Context, from string, opts FetchOptions) ([]byte, string, error) {
	switch {
	case from == "-":
		if opts.Stdin == nil {
			return nil, "", errors.New("--from -: no standard input")
		}
		b, err := userinput.ReadAll(ctx, opts.Stdin, "the template on standard input")
		if err != nil {
			return nil, "", fmt.Errorf("reading the template from standard input: %w", err)
		}
		return b, "<stdin>", nil
	case strings.HasPrefix(from, "http://") || strings.HasPrefix(from, "https://"):
		u, err := url.Parse(from)
		if err != nil {
			return nil, "", fmt.Errorf("--from %s: not a valid URL: %w", from, err)
		}
		if raw, ok := GitHubRawURL(u, opts.RawGitHubURL); ok {
			ru, err := url.Parse(raw)
			if err != nil {
				return nil, "", fmt.Errorf("--from %s: the raw URL %s is not valid: %w", from, raw, err)
			}
			b, err := download(ctx, opts, raw, []string{ru.Host})
			if err != nil {
				return nil, "", fmt.Errorf("fetching %s (as %s): %w", from, raw, err)
			}
			return b, from, nil
		}
		var tokenHosts []string
		if isGitHubHost(u.Host) {
			tokenHosts = []string{"github.com", "raw.githubusercontent.com"}
		}
		b, err := download(ctx, opts, u.String(), tokenHosts)
		if err != nil {
			return nil, "", fmt.Errorf("fetching %s: %w", from, err)
		}
		return b, from, nil
	default:
		p := from
		if strings.HasPrefix(p, "file://") {
			u, err := url.Parse(p)
			if err != nil {
				return nil, "", fmt.Errorf("--from %s: %w", from, err)
			}
			p = u.Path
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, "", fmt.Errorf("template file %s: %w", p, err)
		}
		if st.IsDir() {
			return nil, "", fmt.Errorf("template file %s is a directory; --from takes a file, an URL or -", p)
		}
		b, err := userinput.ReadFile(ctx, p)
		if err != nil {
			return nil, "", fmt.Errorf("reading template file %s: %w", p, err)
		}
		return b, p, nil
	}
}

func isGitHubHost(h string) bool {
	return h == "github.com" || h == "raw.githubusercontent.com"
}

// GitHubRawURL turns a GitHub file page URL https://github.com/OWNER/REPO/blob/REF/PATH into the
// URL of the file's content on rawBase (default https://raw.githubusercontent.com):
// {rawBase}/OWNER/REPO/REF/PATH. Other URLs are not GitHub blob pages (ok is false).
func GitHubRawURL(u *url.URL, rawBase string) (string, bool) {
	if u.Host != "github.com" && u.Host != "www.github.com" {
		return "", false
	}
	parts := strings.SplitN(strings.TrimPrefix(u.Path, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "blob" || parts[0] == "" || parts[1] == "" || parts[3] == "" || parts[4] == "" {
		return "", false
	}
	if rawBase == "" {
		rawBase = "https://raw.githubusercontent.com"
	}
	return strings.TrimRight(rawBase, "/") + "/" + strings.Join([]string{parts[0], parts[1], parts[3], parts[4]}, "/"), true
}

// download GETs rawURL; the GitHub token goes along only to tokenHosts, over HTTPS.
func download(ctx context.Context, opts FetchOptions, rawURL string, tokenHosts []string) ([]byte, error) {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	if len(tokenHosts) > 0 && opts.GitHubToken != "" {
		log := opts.Log
		if log == nil {
			log = logging.Discard()
		}
		hc = repository.WithCredential(hc, "GITHUB_TOKEN", "Authorization", "token "+opts.GitHubToken, tokenHosts, func(msg string) { log.Info("Warning: " + msg) })
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		hint := ""
		if resp.StatusCode == http.StatusNotFound {
			hint = " (check the URL; a private GitHub repository needs GITHUB_TOKEN)"
		}
		return nil, fmt.Errorf("HTTP %s%s", resp.Status, hint)
	}
	b, err := userinput.ReadAll(ctx, resp.Body, "the response")
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	return b, nil
}
