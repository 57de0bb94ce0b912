package archtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// A room is a top-level folder of the repository (cmd, store, internal,
// ...): the unit a reader sees first. A folder-level arrow A → B says some
// package of room A imports one of room B (non-test imports, as in the
// layer table). The drawing puts every room on a floor: a room that
// imports no other room is on floor 0, any other one floor above the
// highest room it imports.
//
// Package-level arrows all point down (TestImportsPointDown), yet two
// rooms can still import each other: room A's low package imports room
// B's, while room B's high package imports room A's. Such an arrow runs
// back up. Of two rooms on a cycle, the room holding the higher package
// (its rank: the highest layer of its packages) is the upper one; an arrow
// on a cycle from a room to one of equal or higher rank runs back up. The
// floors are drawn without those arrows.
type drawing struct {
	rooms  []string
	rank   map[string]int
	arrows map[string][]string // room → the rooms it imports, sorted
	floor  map[string]int
	backUp []string // "A → B"
}

func roomOf(name string) string {
	room, _, _ := strings.Cut(name, "/")
	return room
}

// draw makes the drawing of pkgs, whose layers lt gives. A package with no
// layer is left out (TestImportsPointDown reports it).
func draw(lt layerTable, pkgs []pkg) drawing {
	d := drawing{rank: map[string]int{}, arrows: map[string][]string{}, floor: map[string]int{}}
	arrows := map[string]map[string]bool{}
	for name, p := range projectPackages(pkgs) {
		layer, known := lt.layer(name)
		if !known {
			continue
		}
		from := roomOf(name)
		if r, seen := d.rank[from]; !seen || layer > r {
			d.rank[from] = layer
		}
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || roomOf(dep) == from {
				continue
			}
			if arrows[from] == nil {
				arrows[from] = map[string]bool{}
			}
			arrows[from][roomOf(dep)] = true
		}
	}
	d.rooms = slices.Sorted(maps.Keys(d.rank))
	for from, to := range arrows {
		d.arrows[from] = slices.Sorted(maps.Keys(to))
	}
	reaches := func(from, to string) bool {
		seen := map[string]bool{from: true}
		for next := []string{from}; len(next) > 0; {
			r := next[len(next)-1]
			next = next[:len(next)-1]
			for _, b := range d.arrows[r] {
				if b == to {
					return true
				}
				if !seen[b] {
					seen[b] = true
					next = append(next, b)
				}
			}
		}
		return false
	}
	up := map[[2]string]bool{}
	for _, a := range d.rooms {
		for _, b := range d.arrows[a] {
			if d.rank[b] >= d.rank[a] && reaches(b, a) {
				up[[2]string{a, b}] = true
				d.backUp = append(d.backUp, a+" → "+b)
			}
		}
	}
	// Without the arrows that run back up, every cycle has an arrow to a
	// room of lower rank only, so the rest is acyclic; onPath guards the
	// recursion anyway.
	onPath := map[string]bool{}
	var floorOf func(string) int
	floorOf = func(r string) int {
		if f, ok := d.floor[r]; ok {
			return f
		}
		if onPath[r] {
			return 0
		}
		onPath[r] = true
		f := 0
		for _, b := range d.arrows[r] {
			if !up[[2]string{r, b}] {
				f = max(f, floorOf(b)+1)
			}
		}
		onPath[r] = false
		d.floor[r] = f
		return f
	}
	for _, r := range d.rooms {
		floorOf(r)
	}
	return d
}

func (d drawing) floors() int {
	n := 0
	for _, f := range d.floor {
		n = max(n, f+1)
	}
	return n
}

// String draws the rooms floor by floor, top first, each with the rooms it
// imports, then the arrows that run back up.
func (d drawing) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d rooms on %d floors (rank: the highest layer of the room's packages)\n", len(d.rooms), d.floors())
	for f := d.floors() - 1; f >= 0; f-- {
		for _, r := range d.rooms {
			if d.floor[r] == f {
				fmt.Fprintf(&b, "floor %d  %-12s rank %2d", f, r, d.rank[r])
				if len(d.arrows[r]) > 0 {
					fmt.Fprintf(&b, " → %s", strings.Join(d.arrows[r], ", "))
				}
				b.WriteByte('\n')
			}
		}
	}
	fmt.Fprintf(&b, "arrows running back up: %d", len(d.backUp))
	for _, a := range d.backUp {
		fmt.Fprintf(&b, "\n  %s", a)
	}
	return b.String()
}

// The rooms and their floors, drawn from the imports: no arrow runs back
// up. go test -v -run TestRoomsDrawing ./internal/archtest prints the
// drawing.
func TestRoomsDrawing(t *testing.T) {
	t.Parallel()
	d := draw(loadLayers(t), listPackages(t))
	t.Log("\n" + d.String())
	for _, a := range d.backUp {
		t.Errorf("folder-level arrow runs back up: %s", a)
	}
}

// A component that imports a leaf sitting in the folder of the wiring
// makes an arrow running back up; the floors are drawn without it.
func TestDrawFlagsArrowsBackUp(t *testing.T) {
	t.Parallel()
	lt := layerTable{exact: map[string]int{
		"shed/wiring": 3, "comp": 2, "comp/sub": 1, "shed/leaf": 0, "base": 0,
	}, patterns: map[string]int{}}
	pkgs := []pkg{
		{ImportPath: module + "shed/wiring", Imports: []string{module + "comp", module + "shed/leaf"}},
		{ImportPath: module + "comp", Imports: []string{module + "comp/sub", module + "shed/leaf", module + "base"}},
		{ImportPath: module + "comp/sub"},
		{ImportPath: module + "shed/leaf"},
		{ImportPath: module + "base"},
		{ImportPath: "example.com/other", Imports: []string{module + "comp"}},
	}
	d := draw(lt, pkgs)
	if got, want := d.backUp, []string{"comp → shed"}; !slices.Equal(got, want) {
		t.Errorf("back up: got %q, want %q", got, want)
	}
	if got, want := d.floor, map[string]int{"shed": 2, "comp": 1, "base": 0}; !maps.Equal(got, want) {
		t.Errorf("floors: got %v, want %v", got, want)
	}

	// With the leaf in a room of its own, nothing runs back up.
	lt.exact["leaf"] = 0
	pkgs[1].Imports = []string{module + "comp/sub", module + "leaf", module + "base"}
	pkgs[0].Imports = []string{module + "comp", module + "leaf"}
	pkgs[3].ImportPath = module + "leaf"
	d = draw(lt, pkgs)
	if len(d.backUp) != 0 {
		t.Errorf("back up: got %q, want none", d.backUp)
	}
	if got, want := d.floor, map[string]int{"shed": 2, "comp": 1, "base": 0, "leaf": 0}; !maps.Equal(got, want) {
		t.Errorf("floors: got %v, want %v", got, want)
	}
	if got := d.String(); !strings.HasPrefix(got, "4 rooms on 3 floors") || !strings.Contains(got, "arrows running back up: 0") {
		t.Errorf("drawing:\n%s", got)
	}
}
