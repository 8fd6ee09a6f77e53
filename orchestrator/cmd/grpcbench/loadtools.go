package main

import (
	"strings"

	"github.com/alecthomas/kong"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	// The load tools this binary offers: each registers itself.
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/ghz"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/h2"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/h2load"
)

// toolVars are the registry's tool names for the help and the enums of
// the command line: ${tools} lists them comma-separated, ${toolList} for
// prose.
func toolVars() kong.Vars {
	names := load.Names(load.All())
	return kong.Vars{"tools": strings.Join(names, ","), "toolList": strings.Join(names, ", ")}
}
