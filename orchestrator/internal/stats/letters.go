package stats

import "slices"

// Letters is the compact letter display of a ranking (Piepho 2004,
// "insert and absorb"): each of the n rows, in ranking order, gets letters
// such that two rows share a letter exactly when separated does not hold
// for them. Letters run a, b, c... in the order of the first row that
// carries each.
func Letters(n int, separated func(i, j int) bool) []string {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	groups := [][]int{all}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if !separated(i, j) {
				continue
			}
			var next [][]int
			for _, g := range groups {
				if slices.Contains(g, i) && slices.Contains(g, j) {
					next = append(next, without(g, j), without(g, i))
				} else {
					next = append(next, g)
				}
			}
			groups = absorb(next)
		}
	}
	slices.SortStableFunc(groups, func(a, b []int) int { return slices.Compare(a, b) })
	letters := make([]string, n)
	for k, g := range groups {
		for _, i := range g {
			letters[i] += string(letter(k))
		}
	}
	return letters
}

// letter is the k-th letter: a–z, then A–Z, then Greek.
func letter(k int) rune {
	switch {
	case k < 26:
		return rune('a' + k)
	case k < 52:
		return rune('A' + k - 26)
	}
	return rune('α' + k - 52)
}

func without(g []int, x int) []int {
	return slices.DeleteFunc(slices.Clone(g), func(v int) bool { return v == x })
}

// absorb drops groups contained in another one, and duplicates.
func absorb(groups [][]int) [][]int {
	var out [][]int
	for i, g := range groups {
		covered := false
		for j, h := range groups {
			if i != j && subset(g, h) && (len(g) < len(h) || j < i) {
				covered = true
				break
			}
		}
		if !covered && len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}

func subset(g, h []int) bool {
	for _, v := range g {
		if !slices.Contains(h, v) {
			return false
		}
	}
	return true
}
