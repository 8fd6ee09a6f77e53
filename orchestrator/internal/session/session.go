// Package session sets a run up: the settings read and checked against the
// repository and the hosts, the hosts' locks taken, containers of killed
// runs removed, the run's folder and record started. Nothing is built or
// started before every check has passed.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/harness"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sources"
)

// runID is how a run's start time names it.
const runID = "2006-01-02_15-04-05"

// Session is a run, set up.
type Session struct {
	Config  config.Config
	Catalog catalog.Catalog
	Hosts   Hosts
	Folder  record.Folder
	// Scenarios are the scenarios of GRPC_REQUEST_SCENARIO, compiled.
	Scenarios map[string]*scenario.Scenario
	// Run is the record's head: id, times, commit, settings, machines,
	// cells.
	Run record.Run

	release []func(context.Context) error
	// owner is who holds the locks, for Held to check and take them again.
	owner backend.Owner
	// newFolder says the run's folder was made by this session.
	newFolder bool
	// commit, client and contexts are the code here: the commit line, a
	// hash of the orchestrator's binary and of each build context.
	commit, client string
	contexts       map[string]string
}

// Hosts are the hosts of a run: one runs servers and clients unless
// GRPC_SERVER_DOCKER_HOST and GRPC_CLIENT_DOCKER_HOST name two.
type Hosts struct {
	Server, Client           backend.Host
	ServerFacts, ClientFacts backend.Facts
}

// Two says servers and clients run on different hosts.
func (h Hosts) Two() bool { return h.Server != h.Client }

// each lists the hosts once each.
func (h Hosts) each() []backend.Host {
	if h.Two() {
		return []backend.Host{h.Server, h.Client}
	}
	return []backend.Host{h.Server}
}

func (h Hosts) close() {
	for _, host := range h.each() {
		host.Close()
	}
}

// connect opens the hosts the settings name, with dial.
func connect(ctx context.Context, cfg config.Config, dial backend.Open) (Hosts, error) {
	serverAddr, clientAddr := cfg.DockerHosts()
	serverRole, clientRole := "", ""
	if cfg.TwoHosts() {
		serverRole, clientRole = "servers", "clients"
	}
	var tls backend.TLS
	tls.Verify, tls.CertPath = cfg.DockerTLS()
	var h Hosts
	var err error
	if h.Server, err = dial(ctx, backend.Target{Address: serverAddr, Role: serverRole, TLS: tls}); err != nil {
		return h, err
	}
	h.Client = h.Server
	if cfg.TwoHosts() {
		if h.Client, err = dial(ctx, backend.Target{Address: clientAddr, Role: clientRole, TLS: tls}); err != nil {
			h.Server.Close()
			return h, err
		}
	}
	if h.ServerFacts, err = h.Server.Facts(ctx); err == nil {
		h.ClientFacts, err = h.Client.Facts(ctx)
	}
	if err != nil {
		h.close()
	}
	return h, err
}

// Open reads the settings (the environment over root/.env), lists the
// repository, connects to the hosts, checks the settings against both,
// takes the hosts' locks of the image name, removes containers that
// killed runs left, and creates the run folder with hardware.txt. out
// receives what the user should know.
func Open(ctx context.Context, root string, out io.Writer) (*Session, error) {
	cfg, parseErr := config.Load(filepath.Join(root, ".env"), config.Offered(load.Runners()))
	return open(ctx, root, cfg, parseErr, nil, false, out, backend.Connect)
}

// Resume sets up the rest of the interrupted run in dir: the settings it
// was given and the hosts it used (not the environment's), its folder,
// and its record less the rounds the interruption cut short, which run
// again. It refuses when the commit, the servers or a server's build
// context changed, unless anyway; a finished run is ErrFinished.
func Resume(ctx context.Context, root, dir string, anyway bool, out io.Writer) (*Session, error) {
	prior, err := record.Load(dir)
	if err != nil {
		return nil, &config.Error{Var: "--resume", Value: dir, Reason: err.Error(), Allowed: "the folder of a run that was interrupted"}
	}
	if prior.State == record.Finished {
		return nil, fmt.Errorf("run %s finished at %s: %w", prior.ID, prior.Ended.Format(time.RFC3339), ErrFinished)
	}
	cfg, parseErr := config.Parse(resumeVars(prior), config.Offered(load.Runners()))
	prior.Dir = dir
	return open(ctx, root, cfg, parseErr, &prior, anyway, out, backend.Connect)
}

func open(ctx context.Context, root string, cfg config.Config, parseErr error, prior *record.Run, anyway bool, out io.Writer, dial backend.Open) (*Session, error) {
	// Values that do not parse are listed with every other problem, after
	// the checks that need the hosts.
	var cfgErr *config.Error
	if parseErr != nil && !errors.As(parseErr, &cfgErr) {
		return nil, parseErr
	}
	cat, err := catalog.Open(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &config.Error{Var: "--root", Value: root, Reason: err.Error(),
			Allowed: "the repository: a folder that holds servers/ and scenarios/"}
	}
	if err != nil {
		return nil, err
	}
	if len(cat.Servers) == 0 {
		// A run of nothing would end at once, exit 0, as if it had passed.
		return nil, &config.Error{Var: "--root", Value: root, Reason: "servers/ holds no server (a folder with a Dockerfile)",
			Allowed: "the repository: a folder that holds servers/ and scenarios/"}
	}
	servers := cfg.Servers(cat.Servers)
	contexts, err := fingerprints(cat, servers, cfg.Scenarios)
	if err != nil {
		return nil, err
	}
	commit, client := cat.Commit(ctx), binaryHash()
	var changed []string
	if prior != nil {
		if changed, err = checkResume(*prior, anyway, commit, client, servers, contexts); err != nil {
			return nil, err
		}
	}
	for _, addr := range cfg.PlainEngines() {
		fmt.Fprintf(out, "warning: the engine at %s is reached over plain TCP, without TLS: whoever reaches that port controls the engine, "+
			"which is root on its machine (a server of this run too, when that machine is its own); use TLS (tcp://…:2376 with "+
			"DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH) or ssh://\n", addr)
	}
	hosts, err := connect(ctx, cfg, dial)
	if err != nil {
		// Bad input first, as far as it can be checked without the hosts:
		// it is what the user can fix at once.
		facts := config.Facts{Servers: cat.Servers, Scenarios: cat.Scenarios, Writable: record.Writable}
		if bad := errors.Join(parseErr, cfg.Validate(facts)); bad != nil {
			return nil, errors.Join(bad, err)
		}
		return nil, err
	}
	s := &Session{Config: cfg, Catalog: cat, Hosts: hosts, commit: commit, client: client, contexts: contexts}
	if err := s.check(ctx, parseErr); err != nil {
		hosts.close()
		return nil, err
	}
	if prior != nil {
		moved, err := checkHosts(*prior, anyway, hardwareOf(hosts.ServerFacts), hardwareOf(hosts.ClientFacts))
		if err != nil {
			hosts.close()
			return nil, err
		}
		changed = append(changed, moved...)
	}
	if err := s.start(ctx, prior, changed, out); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// check validates the settings against the repository and the hosts, and
// compiles the scenarios, listing every problem at once.
func (s *Session) check(ctx context.Context, parseErr error) error {
	h := s.Hosts
	facts := config.Facts{Servers: s.Catalog.Servers, Scenarios: s.Catalog.Scenarios, HostCPUs: h.ServerFacts.CPUs,
		HostMemory: h.ServerFacts.Memory, ClientCPUs: h.ClientFacts.CPUs, Writable: record.Writable}
	errs := []error{parseErr, s.Config.Validate(facts)}
	// The scenarios must compile, and have the shape the harness needs,
	// before anything is built from them.
	s.Scenarios = map[string]*scenario.Scenario{}
	for _, name := range s.Config.Scenarios {
		if !slices.Contains(s.Catalog.Scenarios, name) {
			continue // refused by Validate
		}
		sc, err := s.Catalog.Scenario(ctx, name)
		if err != nil {
			errs = append(errs, &config.Error{Var: "GRPC_REQUEST_SCENARIO", Value: name, Reason: err.Error(),
				Allowed: "a folder of scenarios/ whose helloworld.proto compiles, whose HelloRequest and HelloReply both hold the same message as field 1, and whose payload.json is a HelloRequest"})
		}
		s.Scenarios[name] = sc
	}
	return errors.Join(errs...)
}

// start takes the locks, removes what killed runs left and starts the
// run's folder and record (or takes up prior's, noting the changes a
// resume was told to go on with).
func (s *Session) start(ctx context.Context, prior *record.Run, changed []string, out io.Writer) error {
	started := time.Now()
	// The folder comes first: it holds the token that tells this machine's
	// lock from a same-named machine's.
	if prior != nil {
		s.Folder = record.Folder{Dir: prior.Dir}
	} else {
		folder, err := record.NewFolder(s.Config.ResultsDir, started.Format(runID))
		if err != nil {
			return err
		}
		s.Folder, s.newFolder = folder, true
	}
	dir, err := filepath.Abs(s.Folder.Dir)
	if err != nil {
		return err
	}
	token := newToken()
	if err := s.Folder.Write(TokenFile, []byte(token+"\n")); err != nil {
		return err
	}
	owner := self(filepath.Base(dir), dir, token)
	s.owner = owner
	for _, host := range s.Hosts.each() {
		release, err := host.Lock(ctx, s.Config.Repository(), owner, alive(host))
		if err != nil {
			return err
		}
		s.release = append(s.release, release)
		// With the lock held, containers of this image name are a dead run's.
		if n, err := host.Reap(ctx, backend.ImagesLabel, s.Config.Repository()); err != nil {
			return err
		} else if n > 0 {
			fmt.Fprintf(out, "removed %d containers left behind by an earlier run on %s\n", n, host.Address())
		}
	}
	if prior != nil {
		s.Run = *prior
		s.Run.Resume()
		if len(changed) > 0 {
			fmt.Fprintf(out, "resuming with other code than the run started with (--resume-anyway): %s\n", strings.Join(changed, "; "))
			s.Run.ResumedAnyway = append(s.Run.ResumedAnyway, changed...)
		}
		return nil
	}
	s.Run = record.Run{
		ID:       filepath.Base(s.Folder.Dir),
		Started:  started,
		State:    record.Running,
		Commit:   s.commit,
		Client:   s.client,
		Settings: plan.Settings(s.Config.All()),
		Hosts:    &record.HostAddresses{},
		Contexts: s.contexts,
		Hardware: hardwareOf(s.Hosts.ServerFacts),
		Cells:    plan.Cells(s.Config, s.Hosts.ServerFacts.CPUs, s.Hosts.ClientFacts.CPUs),
	}
	s.Run.Hosts.Servers, s.Run.Hosts.Clients = s.Config.DockerHosts()
	s.Run.Hosts.TLSVerify, s.Run.Hosts.CertPath = s.Config.DockerTLS()
	if s.Hosts.Two() {
		client := hardwareOf(s.Hosts.ClientFacts)
		s.Run.ClientHardware = &client
	}
	// The record is there from the start: a run stopped at once, even
	// while the client image builds, is one to resume.
	return record.Save(s.Folder, s.Run)
}

// Close gives the locks back and releases the hosts. A new run's folder
// that a refused lock left empty (no record started) goes too.
func (s *Session) Close() error {
	var errs []error
	for _, release := range s.release {
		errs = append(errs, release(context.Background()))
	}
	if s.Folder.Dir != "" {
		errs = append(errs, removeMissing(os.Remove(s.Folder.Path(TokenFile))))
		if s.newFolder && s.Run.ID == "" {
			errs = append(errs, removeMissing(os.Remove(s.Folder.Dir)))
		}
	}
	s.Hosts.close()
	return errors.Join(errs...)
}

// Held checks, before each round, that the run still holds its locks: a
// `docker container prune` removes a lock container, and another run could
// then take the host. A lock gone is taken again; one another live run
// took stops this run.
func (s *Session) Held(ctx context.Context) error {
	for i, host := range s.Hosts.each() {
		held, err := host.LockHeld(ctx, s.Config.Repository(), s.owner.Token)
		if err != nil {
			return err
		}
		if held {
			continue
		}
		release, err := host.Lock(ctx, s.Config.Repository(), s.owner, alive(host))
		if err != nil {
			return fmt.Errorf("the lock of GRPC_IMAGE_NAME=%s on %s was removed during the run (docker container prune?) and could not be taken again: %w", s.Config.ImageName, host.Address(), err)
		}
		slog.Info("took the lock again: it was removed during the run", "engine", host.Address())
		s.release[i] = release
	}
	return nil
}

// Alive says whether every host of the run still answers.
func (s *Session) Alive(ctx context.Context) error {
	for _, host := range s.Hosts.each() {
		if err := host.Ping(ctx); err != nil {
			return fmt.Errorf("%s: %w", host.Address(), err)
		}
	}
	return nil
}

// Builders build the servers' images on the servers' host and the client
// image on the clients'.
func (s *Session) Builders() (servers, clients images.Builder) {
	return s.builder(s.Hosts.Server, s.Hosts.ServerFacts, s.Hosts.Client), s.builder(s.Hosts.Client, s.Hosts.ClientFacts, s.Hosts.Server)
}

// builder builds on host, taking base images it lacks from the other host.
func (s *Session) builder(host backend.Host, facts backend.Facts, other backend.Host) images.Builder {
	self, _ := os.Executable()
	b := images.Builder{Host: host, Catalog: s.Catalog, Name: s.Config.ImageName, Arch: facts.Arch, Self: self,
		Sources: sources.Fetcher{Cache: sources.DefaultCache(), Mirror: s.Config.SourceMirror, Stall: s.Config.BuildStall, Timeout: s.Config.BuildTimeout},
		Memory:  s.Config.BuildRAMLimit(facts.Memory), CPUs: float64(s.Config.BuildCPULimit(facts.CPUs)), Stall: s.Config.BuildStall, Timeout: s.Config.BuildTimeout}
	if s.Hosts.Two() {
		b.Peer = other
	}
	return b
}

// suiteOptions are where the run's servers and clients go, its containers
// labelled as the run's: servers on the servers' host, clients on the
// clients', reaching the servers at GRPC_SERVER_ADDRESS when the two
// differ.
func (s *Session) suiteOptions() harness.Options {
	h := harness.Options{
		Servers:    s.Hosts.Server,
		Clients:    s.Hosts.Client,
		Labels:     map[string]string{backend.RunLabel: s.Run.ID, backend.ImagesLabel: s.Config.Repository()},
		ServerCPUs: s.Hosts.ServerFacts.CPUs,
	}
	if s.Hosts.Two() {
		ip, port, _ := s.Config.ServerPublish() // checked with the settings
		h.Remote = &harness.Remote{IP: ip, Port: port}
	}
	return h
}

// hostStat is where the servers' host's CPU counters are read, "" when
// that host is not this machine.
func (s *Session) hostStat() string {
	if !s.Hosts.Server.Local() {
		return ""
	}
	return "/proc/stat"
}

// ScenarioList is the run's scenarios in the order given.
func (s *Session) ScenarioList() []*scenario.Scenario {
	var list []*scenario.Scenario
	for _, name := range s.Config.Scenarios {
		list = append(list, s.Scenarios[name])
	}
	return list
}

// removeMissing is err, unless it says there was nothing to remove.
func removeMissing(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
