package config

import "strings"

// Tool is a load tool as the settings offer it. config takes the tools from
// its caller, which has them from the load registry: config must not depend
// on the load tools, which depend on much of the rest.
type Tool struct {
	Name string
	// Help is one line on what the tool is for.
	Help string
	// OpenLoop says the tool loads open-loop at a rate, as rate cells are
	// loaded.
	OpenLoop bool
}

// Offered is the settings' view of the tools of the load registry.
func Offered[T interface {
	Name() string
	Help() string
	OpenLoop() bool
}](tools []T) []Tool {
	offered := make([]Tool, len(tools))
	for i, t := range tools {
		offered[i] = Tool{Name: t.Name(), Help: t.Help(), OpenLoop: t.OpenLoop()}
	}
	return offered
}

// openLoopTool is the first offered tool that loads open-loop, "" when
// none does.
func (c Config) openLoopTool() string {
	for _, t := range c.tools {
		if t.OpenLoop {
			return t.Name
		}
	}
	return ""
}

// Renamed maps the old names of settings to their new ones: a run that
// still sets an old name is refused with the new one, and a record written
// under an old name is read under the new one (Current).
var Renamed = map[string]string{
	"GRPC_LOAD_ENGINE":     "GRPC_LOAD_TOOL",
	"GRPC_CAPACITY_ENGINE": "GRPC_CAPACITY_TOOL",
}

// Current is a setting's name today: its new name when it was renamed.
func Current(name string) string {
	if to, ok := Renamed[name]; ok {
		return to
	}
	return name
}

func (c Config) toolNames() []string {
	names := make([]string, len(c.tools))
	for i, t := range c.tools {
		names[i] = t.Name
	}
	return names
}

// help is a variable's help with the load tools on offer filled in.
func (c Config) help(v variable) string {
	parts := make([]string, len(c.tools))
	for i, t := range c.tools {
		parts[i] = t.Name + " (" + t.Help + ")"
	}
	capacity := strings.Join(c.toolNames(), ", ") + ", or " + CapacityOff + "; it is skipped when it is GRPC_LOAD_TOOL itself"
	return strings.NewReplacer("{tools}", strings.Join(parts, " or "), "{capacity}", capacity).Replace(v.help)
}
