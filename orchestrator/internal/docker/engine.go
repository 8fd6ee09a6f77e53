// Package docker is the backend of hosts that run a Docker engine: it
// builds images, runs labelled containers under limits, streams their stats
// and removes them again through the Docker Engine API. It serves the
// addresses unix://, tcp:// and ssh://.
package docker

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/go-connections/tlsconfig"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

func init() {
	for _, scheme := range []string{"unix", "tcp", "ssh"} {
		backend.Register(scheme, backend.Backend{Open: func(ctx context.Context, t backend.Target) (backend.Host, error) {
			h, err := Connect(ctx, t)
			if err != nil {
				return nil, err // not a typed nil inside the interface
			}
			return h, nil
		}, Check: checkAddress, Canonical: canonical, Stats: ReadStats})
	}
}

// callTimeout bounds an Engine API call that answers at once when the
// engine is well (inspect, create, start, remove, list): a hung engine then
// fails the run with a reason instead of hanging it. Builds, pulls, waits,
// logs followed and stats streams take as long as they take.
const callTimeout = time.Minute

// quick is ctx bounded by callTimeout.
func quick(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}

// Host is a connection to one Docker engine.
type Host struct {
	api     *client.Client
	address string
	// stopped is set when the engine's event stream ends while the
	// connection is open: the engine stopped, and with it every container
	// it ran, even if it answers again (a socket-activated engine starts
	// again at the next connection).
	stopped   atomic.Pointer[RestartedError]
	stopWatch context.CancelFunc
}

var _ backend.Host = (*Host)(nil)

// UnreachableError says which engine was tried, for what, and how to get
// one running.
type UnreachableError struct {
	Role string // "servers", "clients", or "" when one engine runs both
	Host string
	Err  error
}

// Is makes the error a backend.ErrUnreachable.
func (e *UnreachableError) Is(target error) bool { return target == backend.ErrUnreachable }

func (e *UnreachableError) Error() string {
	what := "the Docker engine"
	if e.Role != "" {
		what = "the Docker engine of the " + e.Role
	}
	return fmt.Sprintf("cannot reach %s at %s: %v\n"+
		"Start one (as root: `dockerd >/var/log/dockerd.log 2>&1 &`, or `systemctl start docker`), "+
		"or run `make engine`, which installs Debian's docker.io and starts it; "+
		"set DOCKER_HOST (or GRPC_SERVER_DOCKER_HOST and GRPC_CLIENT_DOCKER_HOST) to use another engine", what, e.Host, e.Err)
}

// tlsOption is the client option for tls: none without certificates.
func tlsOption(tls backend.TLS) client.Opt {
	return func(c *client.Client) error {
		if tls.CertPath == "" {
			return nil
		}
		config, err := tlsconfig.Client(tlsconfig.Options{
			CAFile:             filepath.Join(tls.CertPath, "ca.pem"),
			CertFile:           filepath.Join(tls.CertPath, "cert.pem"),
			KeyFile:            filepath.Join(tls.CertPath, "key.pem"),
			InsecureSkipVerify: !tls.Verify,
		})
		if err != nil {
			return fmt.Errorf("TLS certificates in %s: %w", tls.CertPath, err)
		}
		return client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: config}, CheckRedirect: client.CheckRedirect})(c)
	}
}

// Connect opens the engine at t.Address (unix://, tcp:// with t.TLS, or
// ssh:// through the Docker CLI's own connection helper) and checks that it
// answers. t.Role names what the engine is for in messages. Nothing is read
// from the process environment: the settings give the address and TLS, from
// .env and the environment alike.
func Connect(ctx context.Context, t backend.Target) (*Host, error) {
	host := t.Address
	opts := []client.Opt{tlsOption(t.TLS), client.WithHost(host), client.WithAPIVersionNegotiation()}
	if strings.HasPrefix(host, "ssh://") {
		helper, err := connhelper.GetConnectionHelper(host)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", host, err)
		}
		opts = append(opts, client.WithHost(helper.Host), client.WithDialContext(helper.Dialer))
	}
	api, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", host, err)
	}
	pingCtx, cancel := quick(ctx)
	defer cancel()
	if _, err := api.Ping(pingCtx); err != nil {
		api.Close()
		return nil, &UnreachableError{Role: t.Role, Host: host, Err: err}
	}
	h := &Host{api: api, address: host}
	h.watch()
	return h, nil
}

// RestartedError says the engine stopped since the connection was made:
// the containers it ran were stopped with it, whatever they said as they
// ended.
type RestartedError struct {
	Host string
	At   time.Time
	Err  error
}

func (e *RestartedError) Error() string {
	return fmt.Sprintf("the Docker engine at %s stopped at %s (its event stream ended: %v), and every container it ran with it",
		e.Host, e.At.Format(time.TimeOnly), e.Err)
}

func (e *RestartedError) Unwrap() error { return e.Err }

// watch follows the engine's own events until Close: an engine ends the
// stream only as it stops. Nothing is read from the events themselves
// (a configuration reload is the only one).
func (h *Host) watch() {
	ctx, cancel := context.WithCancel(context.Background())
	h.stopWatch = cancel
	msgs, errs := h.api.Events(ctx, events.ListOptions{Filters: filters.NewArgs(filters.Arg("type", string(events.DaemonEventType)))})
	go func() {
		for {
			select {
			case <-msgs:
			case err := <-errs:
				if ctx.Err() == nil {
					h.stopped.Store(&RestartedError{Host: h.address, At: time.Now(), Err: err})
				}
				return
			}
		}
	}()
}

// Address is the engine's address, as given to Connect.
func (h *Host) Address() string { return h.address }

// Close releases the connection.
func (h *Host) Close() error {
	h.stopWatch()
	return h.api.Close()
}

// Facts describe the engine and the machine it runs on.
func (h *Host) Facts(ctx context.Context) (backend.Facts, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	info, err := h.api.Info(ctx)
	if err != nil {
		return backend.Facts{}, fmt.Errorf("engine info: %w", err)
	}
	return backend.Facts{ID: info.ID, CPUs: info.NCPU, Memory: info.MemTotal, Arch: goArch(info.Architecture), Kernel: info.KernelVersion,
		OS: info.OperatingSystem, Version: info.ServerVersion, Cgroup: info.CgroupVersion, Storage: info.Driver, Backend: "docker"}, nil
}

// goArch names an engine's architecture (uname -m) as Go does.
func goArch(machine string) string {
	switch machine {
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return machine
}

// Local says the engine is reached through a unix socket, so it runs on
// this host (or, for a containerised orchestrator, on the host whose
// socket is mounted, which shares /proc/stat with it).
func (h *Host) Local() bool {
	return strings.HasPrefix(h.api.DaemonHost(), "unix://")
}

// Ping says whether the engine answers, on a new connection (an engine
// shutting down closes its socket at once but goes on serving the
// connections it has open until it exits), and has not stopped since
// Connect: a *RestartedError when it did, though it answers again.
func (h *Host) Ping(ctx context.Context) error {
	ctx, cancel := quick(ctx)
	defer cancel()
	// The client's Close closes its idle connections and nothing else (the
	// transport's own CloseIdleConnections is hidden behind its tracing
	// wrapper); the client stays usable.
	h.api.Close()
	if _, err := h.api.Ping(ctx); err != nil {
		return err
	}
	if stopped := h.stopped.Load(); stopped != nil {
		return stopped
	}
	return nil
}
