// Package cliflags checks numeric command-line flags that parse but cannot
// be used: a negative count, size or duration. The eventcenter commands
// and the admin CLI run Check before doing anything, so a bad flag is an
// error naming the flag rather than a surprise deep inside the command.
package cliflags

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Rules says what Check accepts beyond the default (zero or more).
type Rules struct {
	// Min is the smallest value of a flag by name (e.g. "partitions": 1).
	Min map[string]float64
	// Negative names flags that may be negative (e.g. a random seed).
	Negative []string
}

// Check returns an error naming every numeric flag in fs (int, uint, float
// and duration kinds, slices included) that was set on the command line to
// a negative value or below its Rules.Min. Flags left at their default are
// not checked.
func Check(fs *pflag.FlagSet, r Rules) error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		kind := strings.TrimSuffix(f.Value.Type(), "Slice")
		if !numeric(kind) {
			return
		}
		for _, v := range values(f) {
			n, ok := parse(kind, v)
			if !ok {
				continue // pflag accepted it; not ours to judge
			}
			if minimum, ok := r.Min[f.Name]; ok && n < minimum {
				errs = append(errs, fmt.Errorf("--%s: must be at least %s, got %s", f.Name, strconv.FormatFloat(minimum, 'f', -1, 64), v))
				return
			}
			if n < 0 && !slices.Contains(r.Negative, f.Name) {
				errs = append(errs, fmt.Errorf("--%s: must not be negative, got %s", f.Name, v))
				return
			}
		}
	})
	return errors.Join(errs...)
}

func numeric(kind string) bool {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
		"float32", "float64", "duration", "count":
		return true
	}
	return false
}

// values returns the flag's values as text: one, or each element of a
// slice flag.
func values(f *pflag.Flag) []string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return []string{f.Value.String()}
}

func parse(kind, v string) (float64, bool) {
	if kind == "duration" {
		d, err := time.ParseDuration(v)
		return float64(d), err == nil
	}
	n, err := strconv.ParseFloat(v, 64)
	return n, err == nil
}
