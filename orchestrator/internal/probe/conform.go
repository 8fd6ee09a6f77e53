package probe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// ConcurrentCalls is how many calls the gate sends at once on one
// connection.
const ConcurrentCalls = 100

// TLSCheck is the name of the gate's check of a TLS server's handshake.
const TLSCheck = "TLS handshake verified, ALPN h2"

// Check is one test of the conformance gate. A check that passed with a
// Detail passed with a warning.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

// Verdict is the outcome of the gate. A server that passed may still
// deviate from the gRPC spec in ways that leave its figures valid: those
// are its Warnings.
type Verdict struct {
	Passed   bool     `json:"passed"`
	Checks   []Check  `json:"checks"`
	Warnings []string `json:"warnings,omitempty"`
}

// deviation is a departure from the gRPC spec that does not touch the
// benchmark's work: the check passes, with a warning.
type deviation string

func (d deviation) Error() string { return string(d) }

// Failures describes the checks that failed, for a report line.
func (v Verdict) Failures() string {
	var parts []string
	for _, c := range v.Checks {
		if !c.Passed {
			parts = append(parts, c.Name+": "+c.Detail)
		}
	}
	return strings.Join(parts, "; ")
}

// Conform checks that a ready server does the benchmark's work: it echoes
// the scenario's request field by field with grpc-status OK and a gRPC
// content-type, answers ConcurrentCalls calls at once on one connection,
// and answers an unknown method with an error status rather than hanging.
// A streaming scenario's calls are checked by their kind's rule instead
// (conformStream), and must survive a reset mid-call.
// Failing any of these keeps the server out. An unknown method answered
// promptly with another error status than UNIMPLEMENTED, which the spec
// asks for, is a warning. Over TLS, the server must first complete a
// handshake that verifies its chain against the run's CA and chooses h2;
// one that does not (plaintext, another certificate, no ALPN) fails that
// check alone, since every other needs the connection.
func Conform(ctx context.Context, s Server, sc *scenario.Scenario) (Verdict, error) {
	v := Verdict{Passed: true}
	if s.TLS != nil {
		if v.Add(check(TLSCheck, s.handshake(ctx))); !v.Passed {
			return v, nil
		}
	}
	conn, err := s.dial()
	if err != nil {
		return Verdict{}, err
	}
	defer conn.Close()
	if sc.Kind == scenario.Unary {
		v.Add(check("echo", echoCheck(ctx, conn, sc)))
		v.Add(check(fmt.Sprintf("%d concurrent calls on one connection", ConcurrentCalls), concurrentCheck(ctx, conn, sc, call)))
	} else {
		conformStream(ctx, conn, sc, &v)
	}
	v.Add(check("unknown method refused", unknownMethodCheck(ctx, conn, sc)))
	return v, nil
}

// Add adds a check to the verdict: a failed one fails it, a passed one
// with a detail is a warning.
func (v *Verdict) Add(c Check) {
	v.Checks = append(v.Checks, c)
	v.Passed = v.Passed && c.Passed
	if c.Passed && c.Detail != "" {
		v.Warnings = append(v.Warnings, c.Detail)
	}
}

func check(name string, err error) Check {
	var d deviation
	switch {
	case err == nil:
		return Check{Name: name, Passed: true}
	case errors.As(err, &d):
		return Check{Name: name, Passed: true, Detail: d.Error()}
	default:
		return Check{Name: name, Detail: err.Error()}
	}
}

// call makes one SayHello and checks the answer.
func call(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario, opts ...grpc.CallOption) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	reply := sc.NewResponse()
	if err := conn.Invoke(ctx, scenario.FullMethod, sc.Request, reply, opts...); err != nil {
		return fmt.Errorf("grpc-status %s: %s", status.Code(err), status.Convert(err).Message())
	}
	return sameFields(sc.Request.Get(sc.Method.Input().Fields().ByNumber(1)).Message(),
		reply.Get(sc.Method.Output().Fields().ByNumber(1)).Message())
}

func echoCheck(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario) error {
	var header metadata.MD
	if err := call(ctx, conn, sc, grpc.Header(&header)); err != nil {
		return err
	}
	// grpc-go refuses a non-gRPC content-type itself; this names it when a
	// codec suffix or parameters are odd.
	if ct := header.Get("content-type"); len(ct) != 1 || !strings.HasPrefix(ct[0], "application/grpc") {
		return fmt.Errorf("content-type %q is not a gRPC one", ct)
	}
	return nil
}

// sameFields compares the echoed message with the sent one field by field
// and names the fields that differ.
func sameFields(want, got protoreflect.Message) error {
	if proto.Equal(want.Interface(), got.Interface()) {
		return nil
	}
	var diff []string
	fields := want.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if want.Has(f) != got.Has(f) || !want.Get(f).Equal(got.Get(f)) {
			diff = append(diff, fmt.Sprintf("%s: sent %v, got %v", f.Name(), valueText(want, f), valueText(got, f)))
		}
	}
	if len(diff) == 0 {
		diff = append(diff, "unknown fields differ")
	}
	return fmt.Errorf("answer is not the echo of the request (%s)", strings.Join(diff, "; "))
}

func valueText(m protoreflect.Message, f protoreflect.FieldDescriptor) string {
	if !m.Has(f) {
		return "nothing"
	}
	s := m.Get(f).String()
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// concurrentCheck makes ConcurrentCalls calls at once on one connection,
// each with do (a unary call, a stream), and fails if any does.
func concurrentCheck(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario,
	do func(context.Context, *grpc.ClientConn, *scenario.Scenario, ...grpc.CallOption) error) error {
	errs := make([]error, ConcurrentCalls)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = do(ctx, conn, sc) })
	}
	wg.Wait()
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d failed, e.g. %w", failed, ConcurrentCalls, first)
	}
	return nil
}

// unknownMethodWait is how long an unknown method has to be answered.
var unknownMethodWait = 5 * time.Second

func unknownMethodCheck(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario) error {
	ctx, cancel := context.WithTimeout(ctx, unknownMethodWait)
	defer cancel()
	err := conn.Invoke(ctx, "/"+string(sc.Method.Parent().FullName())+"/NoSuchMethod", sc.Request, sc.NewResponse())
	switch code := status.Code(err); {
	case code == codes.Unimplemented:
		return nil
	// A server that honours the call's grpc-timeout ends a hung call with
	// DeadlineExceeded a moment before the client's own deadline: no answer
	// either.
	case code == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no answer within %s", unknownMethodWait)
	case code == codes.OK:
		return errors.New("grpc-status OK for a method the server does not have")
	default:
		return deviation(fmt.Sprintf("unknown method answered promptly with grpc-status %s (%d), where the gRPC spec says Unimplemented (%d)",
			code, code, codes.Unimplemented))
	}
}
