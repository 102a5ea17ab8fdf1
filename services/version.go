package services

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a semantic version, major.minor.patch. Versions with the
// same major are compatible: a newer minor adds functions, a newer patch
// fixes them.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion reads "2", "2.3" or "2.3.1" (missing parts are 0).
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if s == "" || len(parts) > 3 {
		return Version{}, fmt.Errorf("services: version %q: want major[.minor[.patch]]", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 1<<20 || p != strconv.Itoa(v) {
			return Version{}, fmt.Errorf("services: version %q: part %q is not a number from 0 to %d without leading zeros", s, p, 1<<20)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// MustVersion is ParseVersion that panics, for literals.
func MustVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Less orders versions.
func (v Version) Less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

func (v Version) valid() bool { return v.Major >= 0 && v.Minor >= 0 && v.Patch >= 0 }

// Constraint says which provider versions a caller accepts: the same
// major, and at least a minimum version within it (a caret range:
// ^2.3.0 accepts 2.3.0 up to, not including, 3.0.0).
type Constraint struct {
	// Min is the lowest version accepted; its Major is the only major.
	Min Version
}

// Major accepts every version of major m (^m.0.0).
func Major(m int) Constraint { return Constraint{Min: Version{Major: m}} }

// AtLeast accepts v and every later version of the same major (^v).
// It panics on a malformed v; use ParseConstraint for input.
func AtLeast(v string) Constraint { return Constraint{Min: MustVersion(v)} }

// ParseConstraint reads "2", "^2.3" or "2.3.1" (all caret ranges).
func ParseConstraint(s string) (Constraint, error) {
	v, err := ParseVersion(strings.TrimPrefix(s, "^"))
	if err != nil {
		return Constraint{}, err
	}
	return Constraint{Min: v}, nil
}

// Allows reports whether a provider of version v satisfies c.
func (c Constraint) Allows(v Version) bool {
	return v.Major == c.Min.Major && !v.Less(c.Min)
}

func (c Constraint) String() string { return "^" + c.Min.String() }
