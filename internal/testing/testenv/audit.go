package testenv

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// auditPolicy logs every request's metadata (who, verb, URI, status), no bodies.
const auditPolicy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"

// configureAudit points the API server at an audit policy and log in a new folder and returns
// the log's path.
func configureAudit(te *envtest.Environment) (string, error) {
	dir, err := os.MkdirTemp("", "capctl-audit-")
	if err != nil {
		return "", err
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return "", err
	}
	log := filepath.Join(dir, "audit.log")
	args := te.ControlPlane.GetAPIServer().Configure()
	args.Append("audit-policy-file", policy)
	args.Append("audit-log-path", log)
	args.Append("audit-log-mode", "blocking")
	return log, nil
}

// auditEvent is what Writes reads of one audit event.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource string `json:"resource"`
	} `json:"objectRef"`
}

// Writes are the requests of user that could change what the server stores ("VERB URI"): every
// create, update, patch, delete and deletecollection but the self-reviews (questions the server
// answers without storing anything) and server-side dry runs. It needs Options.Audit.
func (e *Env) Writes(tb testing.TB, user string) []string {
	tb.Helper()
	if e.AuditLog == "" {
		tb.Fatal("Writes needs an API server started with Options.Audit")
	}
	f, err := os.Open(e.AuditLog)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" || ev.User.Username != user {
			continue
		}
		switch ev.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if ev.ObjectRef != nil && strings.HasPrefix(ev.ObjectRef.Resource, "selfsubject") || strings.Contains(ev.RequestURI, "dryRun=All") {
			continue
		}
		out = append(out, ev.Verb+" "+ev.RequestURI)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Requests counts user's requests in the audit log (to show a reader was audited at all).
func (e *Env) Requests(tb testing.TB, user string) int {
	tb.Helper()
	data, err := os.ReadFile(e.AuditLog)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		var ev auditEvent
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Stage == "ResponseComplete" && ev.User.Username == user {
			n++
		}
	}
	return n
}
