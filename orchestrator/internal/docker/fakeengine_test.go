package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// fakeEngine is an in-process stand-in for the subset of the Docker Engine
// API this package calls, for unit tests of the package's own logic: the
// requests it sends and in which order, and what it makes of the answers.
// It proves nothing about what an engine does with them; the e2e tests
// against a real engine do. Set the fields before the first request.
type fakeEngine struct {
	srv *httptest.Server

	// build is what POST /build answers, one JSON message a line; an image
	// is tagged unless a message has an error.
	build []string
	// stats are the documents of every stats stream, after which it ends,
	// or, with statsHold, stays open until the client or the engine ends it.
	stats     []string
	statsHold bool
	// oom is how many OOM events a watch of a container's gets.
	oom int
	// top are the processes of every container ([UID, PID, CMD]).
	top [][]string
	// failStart fails every start of a container not of the lock's image;
	// lockStartFailures fails that many starts of lock containers.
	failStart         bool
	lockStartFailures int

	mu         sync.Mutex
	calls      []string
	buildQuery url.Values // of the last build
	containers map[string]*fakeContainer
	images     map[string]*fakeImage
	networks   map[string]network.CreateRequest
	next       int
}

type fakeContainer struct {
	id, name  string
	req       container.CreateRequest
	running   bool
	started   int // how many times it started
	startedAt string
	exit      int
	stopped   chan struct{} // closed when it stops
	files     map[string]string
	stdout    string
	stderr    string
}

type fakeImage struct {
	id      string
	volumes []string
	files   map[string][]byte
	changes []string
}

func newFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	f := &fakeEngine{containers: map[string]*fakeContainer{}, images: map[string]*fakeImage{}, networks: map[string]network.CreateRequest{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.gone)
	return f
}

// connect is a Host of the fake engine, through Connect.
func (f *fakeEngine) connect(t *testing.T) *Host {
	t.Helper()
	h, err := Connect(context.Background(), backend.Target{Address: "tcp://" + f.srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// stop ends every connection the engine has open, as an engine that stops
// does; it answers new ones at once, as a socket-activated engine
// started again by the next connection does.
func (f *fakeEngine) stop() { f.srv.CloseClientConnections() }

// gone ends every connection and takes the engine away.
func (f *fakeEngine) gone() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// image adds an image under ref that declares volumes.
func (f *fakeEngine) image(ref string, volumes ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[ref] = &fakeImage{id: f.newID(), volumes: volumes}
}

// called lists the requests made so far ("POST /containers/create"),
// less the pings and the event streams, whose moments are the client's.
func (f *fakeEngine) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if !strings.HasSuffix(c, "/_ping") && c != "GET /events" {
			out = append(out, c)
		}
	}
	return out
}

// imageOf is the image of a reference, nil when there is none.
func (f *fakeEngine) imageOf(ref string) *fakeImage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.images[ref]
}

// containerIDs and networkIDs list what the engine has, in order.
func (f *fakeEngine) containerIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sorted(f.containers)
}

func (f *fakeEngine) networkIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sorted(f.networks)
}

// network is the network of an id, as it was created.
func (f *fakeEngine) network(id string) (network.CreateRequest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.networks[id]
	return n, ok
}

// addNetwork puts a network with labels there under id.
func (f *fakeEngine) addNetwork(id string, labels map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.networks[id] = network.CreateRequest{CreateOptions: network.CreateOptions{Labels: labels}}
}

// container is the container of an id or a name, nil when there is none.
func (f *fakeEngine) container(ref string) *fakeContainer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.find(ref)
}

func (f *fakeEngine) find(ref string) *fakeContainer {
	if c, ok := f.containers[ref]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.name == ref {
			return c
		}
	}
	return nil
}

// add puts a container there, as another client made it.
func (f *fakeEngine) add(name string, labels map[string]string, running bool) *fakeContainer {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &fakeContainer{id: f.newID(), name: name, stopped: make(chan struct{}), files: map[string]string{}}
	c.req.Config = &container.Config{Labels: labels}
	c.req.HostConfig = &container.HostConfig{}
	f.containers[c.id] = c
	if running {
		f.run(c)
	}
	return c
}

// exit stops a running container with a code, as its process ending does.
func (f *fakeEngine) exit(ref string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.find(ref)
	c.exit = code
	f.halt(c)
}

func (f *fakeEngine) run(c *fakeContainer) {
	c.running, c.started = true, c.started+1
	c.startedAt = fmt.Sprintf("2026-12-01T10:00:%02dZ", f.next%60)
	c.stopped = make(chan struct{})
	f.next++
}

func (f *fakeEngine) halt(c *fakeContainer) {
	if c.running {
		c.running = false
		close(c.stopped)
	}
}

func (f *fakeEngine) newID() string {
	f.next++
	return fmt.Sprintf("%064x", f.next)
}

var apiVersion = regexp.MustCompile(`^/v[0-9.]+/`)

func (f *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	p := apiVersion.ReplaceAllString(r.URL.Path, "/")
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+p)
	f.mu.Unlock()
	q := r.URL.Query()
	switch parts := strings.Split(strings.Trim(p, "/"), "/"); {
	case p == "/_ping":
		w.Header().Set("Api-Version", "1.41")
		w.Header().Set("Ostype", "linux")
		fmt.Fprint(w, "OK")
	case p == "/info":
		answer(w, map[string]any{"NCPU": 2, "MemTotal": 24 << 30, "Architecture": "x86_64", "KernelVersion": "6.1.0", "OperatingSystem": "Debian GNU/Linux 12",
			"ServerVersion": "20.10.24", "CgroupVersion": "2", "Driver": "overlay2"})
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json"):
		f.inspectImage(w, strings.TrimSuffix(strings.TrimPrefix(p, "/images/"), "/json"))
	case p == "/images/create":
		f.importImage(w, r)
	case p == "/build":
		f.buildImage(w, r)
	case p == "/containers/create":
		f.create(w, r)
	case p == "/containers/json":
		f.list(w, q)
	case p == "/events":
		f.events(w, r)
	case p == "/networks/create":
		f.createNetwork(w, r)
	case p == "/networks" && r.Method == http.MethodGet:
		f.listNetworks(w, q)
	case len(parts) == 2 && parts[0] == "networks" && r.Method == http.MethodDelete:
		f.mu.Lock()
		delete(f.networks, parts[1])
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case len(parts) >= 2 && parts[0] == "containers":
		f.onContainer(w, r, parts[1], strings.Join(parts[2:], "/"))
	default:
		fail(w, http.StatusNotFound, "page not found: "+r.Method+" "+p)
	}
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func (f *fakeEngine) inspectImage(w http.ResponseWriter, ref string) {
	f.mu.Lock()
	img, ok := f.images[ref]
	f.mu.Unlock()
	if !ok {
		fail(w, http.StatusNotFound, "No such image: "+ref)
		return
	}
	volumes := map[string]struct{}{}
	for _, v := range img.volumes {
		volumes[v] = struct{}{}
	}
	answer(w, map[string]any{"Id": img.id, "Config": map[string]any{"Volumes": volumes}})
}

// untar reads a tar stream into its files' contents by name.
func untar(r io.Reader) map[string][]byte {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err != nil {
			return files
		}
		b, _ := io.ReadAll(tr)
		files[hdr.Name] = b
	}
}

func (f *fakeEngine) importImage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	img := &fakeImage{files: untar(r.Body), changes: q["changes"]}
	f.mu.Lock()
	img.id = f.newID()
	ref := q.Get("repo") // repo:tag, or a tag of its own
	if tag := q.Get("tag"); tag != "" {
		ref += ":" + tag
	}
	f.images[ref] = img
	f.mu.Unlock()
	answer(w, map[string]string{"status": img.id})
}

func (f *fakeEngine) buildImage(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	f.buildQuery = r.URL.Query()
	f.mu.Unlock()
	failed := false
	for _, m := range f.build {
		failed = failed || strings.Contains(m, `"error"`)
		fmt.Fprintln(w, m)
	}
	if !failed {
		f.image(r.URL.Query().Get("t"))
	}
}

func (f *fakeEngine) create(w http.ResponseWriter, r *http.Request) {
	var req container.CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	name := r.URL.Query().Get("name")
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.images[req.Image]; !ok {
		fail(w, http.StatusNotFound, "No such image: "+req.Image)
		return
	}
	if name != "" && f.find(name) != nil {
		fail(w, http.StatusConflict, fmt.Sprintf("Conflict. The container name %q is already in use", "/"+name))
		return
	}
	c := &fakeContainer{id: f.newID(), name: name, req: req, stopped: make(chan struct{}), files: map[string]string{}}
	f.containers[c.id] = c
	answer(w, container.CreateResponse{ID: c.id})
}

func (f *fakeEngine) list(w http.ResponseWriter, q map[string][]string) {
	args, _ := filters.FromJSON(first(q["filters"]))
	f.mu.Lock()
	defer f.mu.Unlock()
	list := []container.Summary{}
	for _, c := range f.containers {
		if matches(args, c.req.Labels) {
			list = append(list, container.Summary{ID: c.id, Names: []string{"/" + c.name}, Labels: c.req.Labels})
		}
	}
	answer(w, list)
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// matches says whether labels carry every label=k=v filter of args.
func matches(args filters.Args, labels map[string]string) bool {
	for _, l := range args.Get("label") {
		k, v, _ := strings.Cut(l, "=")
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// events answers a watch: for a container's OOM kills, f.oom events, then
// the stream stays open until the client or the engine ends it.
func (f *fakeEngine) events(w http.ResponseWriter, r *http.Request) {
	args, _ := filters.FromJSON(r.URL.Query().Get("filters"))
	w.WriteHeader(http.StatusOK)
	if args.ExactMatch("event", "oom") {
		for range f.oom {
			answer(w, map[string]any{"Type": "container", "Action": "oom", "Actor": map[string]any{"ID": first(args.Get("container"))}})
		}
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func (f *fakeEngine) createNetwork(w http.ResponseWriter, r *http.Request) {
	var req network.CreateRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.networks[req.Name] = req // the name is the id, as the engine takes either
	f.mu.Unlock()
	answer(w, network.CreateResponse{ID: req.Name})
}

func (f *fakeEngine) listNetworks(w http.ResponseWriter, q map[string][]string) {
	args, _ := filters.FromJSON(first(q["filters"]))
	f.mu.Lock()
	defer f.mu.Unlock()
	list := []network.Summary{}
	for id, n := range f.networks {
		if matches(args, n.Labels) {
			list = append(list, network.Summary{ID: id, Name: n.Name, Labels: n.Labels})
		}
	}
	answer(w, list)
}

func (f *fakeEngine) onContainer(w http.ResponseWriter, r *http.Request, ref, action string) {
	c := f.container(ref)
	if c == nil {
		fail(w, http.StatusNotFound, "No such container: "+ref)
		return
	}
	switch {
	case action == "archive" && r.Method == http.MethodPut:
		dir := r.URL.Query().Get("path")
		f.mu.Lock()
		for name, b := range untar(r.Body) {
			c.files[dir+"/"+name] = string(b)
		}
		f.mu.Unlock()
	case action == "start":
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failStart && c.req.Image != lockImage {
			fail(w, http.StatusInternalServerError, "cannot start container: exec format error")
			return
		}
		if c.req.Image == lockImage && f.lockStartFailures > 0 {
			f.lockStartFailures--
			fail(w, http.StatusInternalServerError, "cannot start a stopped process: unknown")
			return
		}
		if !c.running {
			f.run(c)
		}
		w.WriteHeader(http.StatusNoContent)
	case action == "wait":
		select {
		case <-c.stopped:
			answer(w, container.WaitResponse{StatusCode: int64(c.exit)})
		case <-r.Context().Done():
		}
	case action == "json":
		f.inspect(w, c)
	case action == "" && r.Method == http.MethodDelete:
		f.mu.Lock()
		defer f.mu.Unlock()
		if c.running && r.URL.Query().Get("force") != "1" {
			fail(w, http.StatusConflict, "You cannot remove a running container")
			return
		}
		f.halt(c)
		delete(f.containers, c.id)
		w.WriteHeader(http.StatusNoContent)
	case action == "logs":
		_, _ = stdcopy.NewStdWriter(w, stdcopy.Stdout).Write([]byte(c.stdout))
		_, _ = stdcopy.NewStdWriter(w, stdcopy.Stderr).Write([]byte(c.stderr))
	case action == "stats":
		for _, doc := range f.stats {
			fmt.Fprintln(w, doc)
			w.(http.Flusher).Flush()
		}
		if f.statsHold {
			<-r.Context().Done()
		}
	case action == "top":
		answer(w, container.TopResponse{Titles: []string{"UID", "PID", "CMD"}, Processes: f.top})
	default:
		fail(w, http.StatusNotFound, "page not found: "+action)
	}
}

func (f *fakeEngine) inspect(w http.ResponseWriter, c *fakeContainer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ports := map[string][]map[string]string{}
	for port, bindings := range c.req.HostConfig.PortBindings {
		for _, b := range bindings {
			ports[string(port)] = append(ports[string(port)], map[string]string{"HostIp": b.HostIP, "HostPort": "32768"})
		}
	}
	answer(w, map[string]any{"Id": c.id, "Name": "/" + c.name, "Config": c.req.Config, "HostConfig": c.req.HostConfig,
		"State":           map[string]any{"Running": c.running, "ExitCode": c.exit, "StartedAt": c.startedAt},
		"NetworkSettings": map[string]any{"Ports": ports}})
}

// sorted are the keys of m in order.
func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
