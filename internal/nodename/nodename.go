package nodename

import "fmt"

// MaxLen is the longest node name, in bytes.
const MaxLen = 128

// Rule says the rule in an error message.
const Rule = "1-128 letters, digits, '.', '_' or '-'"

// Valid reports whether name follows the rule.
func Valid(name string) bool {
	if len(name) == 0 || len(name) > MaxLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// quoteMax is how much of a name that failed the check Quote shows.
const quoteMax = 64

// Quote is s (a name that may not follow the rule) for a log line or an
// error text: Go-quoted, at most its first 64 bytes, with its length
// when it was cut.
func Quote(s string) string {
	if len(s) <= quoteMax {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:quoteMax], len(s))
}
