package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseHex reads a #rgb or #rrggbb colour.
func ParseHex(s string) (r, g, b uint8, err error) {
	h := strings.TrimPrefix(strings.TrimSpace(s), "#")
	if len(h) == 3 {
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	}
	if len(h) != 6 || !strings.HasPrefix(strings.TrimSpace(s), "#") {
		return 0, 0, 0, fmt.Errorf("colour %q: want #rgb or #rrggbb", s)
	}
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("colour %q: %w", s, err)
	}
	return uint8(v >> 16), uint8(v >> 8), uint8(v), nil
}

// luminance is the WCAG 2 relative luminance.
func luminance(r, g, b uint8) float64 {
	ch := func(c uint8) float64 {
		v := float64(c) / 255
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(r) + 0.7152*ch(g) + 0.0722*ch(b)
}

// Contrast returns the WCAG 2 contrast ratio of two #rgb/#rrggbb colours
// (1 to 21; AA asks 4.5 for normal text).
func Contrast(fg, bg string) (float64, error) {
	r1, g1, b1, err := ParseHex(fg)
	if err != nil {
		return 0, err
	}
	r2, g2, b2, err := ParseHex(bg)
	if err != nil {
		return 0, err
	}
	l1, l2 := luminance(r1, g1, b1), luminance(r2, g2, b2)
	if l1 < l2 {
		l1, l2 = l2, l1
	}
	return (l1 + 0.05) / (l2 + 0.05), nil
}
