package embedded

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// guardRefusal is the body of a refused request.
const guardRefusal = "ctxlab's Web UI is read-only: this request is refused\n"

// connOwner is the uid of the process at the other end of a connection the UI accepted, or why it is not known.
type connOwner struct {
	uid uint32
	err error
}

type connOwnerKey struct{}

// withConnOwner records in a connection's context who connected (http.Server.ConnContext): the owner of the
// client's TCP socket, as the frontend's sameUserAuthorizer asks the kernel.
func withConnOwner(ctx context.Context, c net.Conn) context.Context {
	o := connOwner{err: fmt.Errorf("the connection came over %s, not TCP", c.RemoteAddr().Network())}
	client, ok1 := c.RemoteAddr().(*net.TCPAddr)
	server, ok2 := c.LocalAddr().(*net.TCPAddr)
	if ok1 && ok2 {
		o.uid, o.err = socketUID(client, server)
	}
	return context.WithValue(ctx, connOwnerKey{}, o)
}

// sameUserUI lets a request through only from a connection of the server's own uid, as the frontend does: the UI
// on 127.0.0.1 shows the sweep's workflows and histories (dataset path, instance ids, errors) to whoever connects,
// and graded code runs as another uid.
func sameUserUI(next http.Handler) http.Handler {
	own := uint32(os.Getuid())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, ok := r.Context().Value(connOwnerKey{}).(connOwner)
		var why string
		switch {
		case !ok:
			why = "could not tell the caller's uid"
		case o.err != nil:
			why = "could not tell the caller's uid: " + o.err.Error()
		case o.uid != own:
			why = fmt.Sprintf("not uid %d", o.uid)
		}
		if why != "" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprintf(w, "ctxlab's Web UI answers only its own user (uid %d), %s\n", own, why)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardUI lets through only what the read-only UI needs: GET and HEAD, and the UI's one POST for reading (a
// workflow query). It judges the path as sent, before any decoding. The ui-server's own read-only check looks at the
// decoded path, so an id holding "%2F" could make a signal or a batch terminate look like a query; here an encoded
// slash is allowed only inside a workflow id, where the UI itself puts one (ctxlab's ids hold slashes), and never
// decides what the request does.
func guardUI(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := refuseUIRequest(r.Method, r.RequestURI); why != "" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(guardRefusal))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuseUIRequest says why a request to the UI is refused, or "" when it may pass. requestURI is the request
// line's target as received.
func refuseUIRequest(method, requestURI string) string {
	if !strings.HasPrefix(requestURI, "/") {
		return "not a path" // absolute-form and "*" targets: browsers send neither
	}
	rawPath, _, _ := strings.Cut(requestURI, "?")
	lower := strings.ToLower(rawPath)
	switch {
	case strings.Contains(lower, "%25"):
		return "double-encoded path"
	case strings.ContainsAny(rawPath, "\\"), strings.Contains(lower, "%5c"):
		return "backslash in path"
	}
	segments := strings.Split(rawPath[1:], "/")
	for _, s := range segments {
		decoded, err := url.PathUnescape(s)
		if err != nil {
			return "malformed escape in path"
		}
		if decoded == "." || decoded == ".." || strings.ContainsAny(decoded, "\x00\r\n") {
			return "dot segment or control character in path"
		}
	}
	// An encoded slash may only stand in a workflow id: the segment after namespaces/NS/workflows/, in a page's
	// path or in the API's. Anywhere else it could change which route a decoding router picks.
	idAt := workflowIDSegment(segments)
	for i, s := range segments {
		if i != idAt && strings.Contains(strings.ToLower(s), "%2f") {
			return "encoded slash outside a workflow id"
		}
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		return ""
	case http.MethodPost:
		if isQueryCall(segments) {
			return ""
		}
		return "POST other than a workflow query"
	}
	return "method " + method + " on the read-only UI"
}

// workflowIDSegment is the index of the workflow id in [api v1] namespaces NS workflows ID ..., or -1.
func workflowIDSegment(segments []string) int {
	at := 0
	if len(segments) >= 2 && segments[0] == "api" && segments[1] == "v1" {
		at = 2
	}
	if len(segments) > at+3 && segments[at] == "namespaces" && segments[at+2] == "workflows" {
		return at + 3
	}
	return -1
}

// isQueryCall matches api/v1/namespaces/NS/workflows/ID/query/TYPE exactly, on the raw segments: the literal
// segments as the UI writes them, no empty value.
func isQueryCall(segments []string) bool {
	if len(segments) != 8 {
		return false
	}
	for i, lit := range map[int]string{0: "api", 1: "v1", 2: "namespaces", 4: "workflows", 6: "query"} {
		if segments[i] != lit {
			return false
		}
	}
	return segments[3] != "" && segments[5] != "" && segments[7] != ""
}
