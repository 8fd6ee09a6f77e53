package catalog

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestManifestsMatchTheirPins keeps server.json true: each library's
// declared version is compared with the one the server's own files pin, so
// that a dependency bumped without its manifest fails make unit. A version
// known only at build time is declared unchecked, with the reason.
func TestManifestsMatchTheirPins(t *testing.T) {
	cat, err := Open(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range cat.Bases(cat.Servers) {
		m := cat.Manifest(name)
		libs := []Library{m.Library}
		if m.GRPC != nil {
			libs = append(libs, *m.GRPC)
		}
		for _, l := range libs {
			if l.Pinned.Unchecked != "" {
				t.Logf("%s: %s %s unchecked: %s", name, l.Name, l.Version, l.Pinned.Unchecked)
				continue
			}
			got, err := pinned(cat.ServerDir(name), l.Pinned)
			if err != nil {
				t.Errorf("%s: %s: %v", name, l.Name, err)
				continue
			}
			want := l.Version
			if l.Pinned.As != "" {
				want = l.Pinned.As
			}
			if got != want {
				t.Errorf("%s: server.json declares %s %s, but %s pins %s at %q", name, l.Name, want, l.Pinned.File, l.Pinned.Name, got)
			}
			checked++
		}
	}
	if checked < len(cat.Bases(cat.Servers)) {
		t.Errorf("only %d versions checked for %d server folders", checked, len(cat.Bases(cat.Servers)))
	}
}

// pinned reads the version a server folder's file pins a library at.
func pinned(dir string, p Pin) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, p.File))
	if err != nil {
		return "", err
	}
	var v string
	switch p.File {
	case "go.mod":
		v = strings.TrimPrefix(match(b, `(?m)^\s*(?:require\s+)?`+regexp.QuoteMeta(p.Name)+`\s+(\S+)`), "v")
	case "Cargo.lock":
		v = match(b, `(?m)^name = "`+regexp.QuoteMeta(p.Name)+`"\nversion = "([^"]+)"`)
	case "requirements.txt":
		v = match(b, `(?m)^`+regexp.QuoteMeta(p.Name)+`==(\S+)`)
	case "Dockerfile":
		// An ARG's default, or a Debian package pinned as name=1.2.3-*:
		// the upstream version, without Debian's revision.
		v = match(b, `(?m)(?:^ARG\s+|\s)`+regexp.QuoteMeta(p.Name)+`=(\S+)`)
		v = strings.TrimSuffix(strings.TrimSuffix(v, "*"), "-")
	case "package-lock.json":
		var lock struct {
			Packages map[string]struct{ Version string } `json:"packages"`
		}
		if err := json.Unmarshal(b, &lock); err != nil {
			return "", err
		}
		v = lock.Packages["node_modules/"+p.Name].Version
	case "sources.json":
		var sources []struct{ URL, Commit string }
		if err := json.Unmarshal(b, &sources); err != nil {
			return "", err
		}
		for _, s := range sources {
			if s.URL == p.Name {
				v = s.Commit
			}
		}
	case "pom.xml":
		v, err = pomVersion(b, p.Name)
		if err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("the test reads no %s: declare the version unchecked, or teach pinned() the file", p.File)
	}
	if v == "" {
		return "", fmt.Errorf("%s has no %s", p.File, p.Name)
	}
	return v, nil
}

func match(b []byte, re string) string {
	if m := regexp.MustCompile(re).FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// pomVersion is the version a pom.xml gives groupId:artifactId (as its
// parent, a dependency, a managed dependency or a plugin), or the value of
// a property when name has no colon; ${...} resolved from its properties.
func pomVersion(b []byte, name string) (string, error) {
	type artifact struct {
		GroupID    string `xml:"groupId"`
		ArtifactID string `xml:"artifactId"`
		Version    string `xml:"version"`
	}
	var pom struct {
		Parent     artifact `xml:"parent"`
		Properties struct {
			Any []struct {
				XMLName xml.Name
				Value   string `xml:",chardata"`
			} `xml:",any"`
		} `xml:"properties"`
		Dependencies []artifact `xml:"dependencies>dependency"`
		Managed      []artifact `xml:"dependencyManagement>dependencies>dependency"`
		Plugins      []artifact `xml:"build>plugins>plugin"`
	}
	if err := xml.Unmarshal(b, &pom); err != nil {
		return "", fmt.Errorf("read pom.xml: %w", err)
	}
	props := map[string]string{}
	for _, p := range pom.Properties.Any {
		props[p.XMLName.Local] = strings.TrimSpace(p.Value)
	}
	resolve := func(s string) string {
		return regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(s, func(ref string) string {
			return props[ref[2:len(ref)-1]]
		})
	}
	if !strings.Contains(name, ":") {
		return props[name], nil
	}
	for _, a := range append(append(append([]artifact{pom.Parent}, pom.Dependencies...), pom.Managed...), pom.Plugins...) {
		if resolve(a.GroupID)+":"+resolve(a.ArtifactID) == name {
			return resolve(a.Version), nil
		}
	}
	return "", nil
}
