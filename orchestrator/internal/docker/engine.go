// Package docker is the orchestrator's view of the Docker Engine API: build
// images, run labelled containers under limits, stream their stats, and
// remove them again.
package docker

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/go-connections/tlsconfig"

	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
)

// RunLabel marks every container a run starts; its value is the run's id.
const RunLabel = "io.grpcbench.run"

// ImagesLabel holds the run's GRPC_IMAGE_NAME. Containers of an earlier run
// with the same image name are removed when a run starts: they were left by
// a run that was killed (two runs that build the same images cannot share
// an engine anyway), while runs under other image names are left alone.
const ImagesLabel = "io.grpcbench.images"

// RoleLabel says what a container is for (server, load, probe).
const RoleLabel = "io.grpcbench.role"

// callTimeout bounds an Engine API call that answers at once when the
// engine is well (inspect, create, start, remove, list): a hung engine then
// fails the run with a reason instead of hanging it. Builds, pulls, waits,
// logs followed and stats streams take as long as they take.
const callTimeout = time.Minute

// quick is ctx bounded by callTimeout.
func quick(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}

// Engine is a connection to one Docker engine.
type Engine struct {
	api  *client.Client
	host string
}

// UnreachableError says which engine was tried, for what, and how to get
// one running.
type UnreachableError struct {
	Role string // "servers", "clients", or "" when one engine runs both
	Host string
	Err  error
}

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

// TLS is how a tcp:// engine is reached: with the client certificates of
// CertPath (ca.pem, cert.pem, key.pem) when it is set, verifying the
// engine's certificate when Verify is set, as the Docker CLI does.
type TLS struct {
	Verify   bool
	CertPath string
}

// option is the client option for tls: none without certificates.
func (tls TLS) option() client.Opt {
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

// Connect opens the engine at host (unix://, tcp:// with tls, or ssh://
// through the Docker CLI's own connection helper) and checks that it
// answers. role names what the engine is for in messages. Nothing is read
// from the process environment: the settings give host and tls, from .env
// and the environment alike.
func Connect(ctx context.Context, role, host string, tls TLS) (*Engine, error) {
	opts := []client.Opt{tls.option(), client.WithHost(host), client.WithAPIVersionNegotiation()}
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
		return nil, &UnreachableError{Role: role, Host: host, Err: err}
	}
	return &Engine{api: api, host: host}, nil
}

// Host is the engine's address, as given to Connect.
func (e *Engine) Host() string { return e.host }

// Close releases the connection.
func (e *Engine) Close() error { return e.api.Close() }

// Info describes the engine and the machine it runs on.
func (e *Engine) Info(ctx context.Context) (system.Info, error) {
	ctx, cancel := quick(ctx)
	defer cancel()
	info, err := e.api.Info(ctx)
	if err != nil {
		return info, fmt.Errorf("engine info: %w", err)
	}
	return info, nil
}

// Local says the engine is reached through a unix socket, so it runs on
// this host (or, for a containerised orchestrator, on the host whose
// socket is mounted, which shares /proc/stat with it).
func (e *Engine) Local() bool {
	return strings.HasPrefix(e.api.DaemonHost(), "unix://")
}

// Ping says whether the engine answers, on a new connection: an engine
// shutting down closes its socket at once but goes on serving the
// connections it has open until it exits.
func (e *Engine) Ping(ctx context.Context) error {
	ctx, cancel := quick(ctx)
	defer cancel()
	// The client's Close closes its idle connections and nothing else (the
	// transport's own CloseIdleConnections is hidden behind its tracing
	// wrapper); the client stays usable.
	e.api.Close()
	_, err := e.api.Ping(ctx)
	return err
}
