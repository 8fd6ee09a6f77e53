package report

// latencyFirst reorders a table row's columns for a floor-latency cell:
// the three latency columns, from p50 on, right after the column at tool.
func latencyFirst(floor bool, cols []string, tool, p50 int) []string {
	if !floor {
		return cols
	}
	out := append([]string{}, cols[:tool+1]...)
	out = append(out, cols[p50:p50+3]...)
	out = append(out, cols[tool+1:p50]...)
	return append(out, cols[p50+3:]...)
}
