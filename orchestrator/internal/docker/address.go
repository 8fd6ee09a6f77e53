package docker

import (
	"net/url"
	"path/filepath"
	"strings"
)

// checkAddress refuses an engine address the Docker CLI would not take.
func checkAddress(address string) string {
	u, err := url.Parse(address)
	switch {
	case err != nil:
		return "not a URL: " + lastPart(err.Error())
	case u.Scheme == "unix" && u.Path != "":
	case u.Scheme == "tcp" && u.Port() != "" && u.Hostname() != "":
	case u.Scheme == "ssh" && u.Hostname() != "":
	default:
		return "not unix:///path, tcp://host:port or ssh://[user@]host"
	}
	return ""
}

// lastPart keeps the useful tail of a parser's message.
func lastPart(msg string) string {
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// canonical writes a unix socket's address by the file it resolves to
// (/var/run is a link to /run on Debian); other addresses stay as written.
func canonical(address string) string {
	path, ok := strings.CutPrefix(address, "unix://")
	if !ok {
		return address
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		return "unix://" + resolved
	}
	return "unix://" + filepath.Clean(path)
}
