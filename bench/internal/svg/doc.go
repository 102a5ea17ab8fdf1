// Package svg draws the report's plots as standalone SVG documents, with
// no dependency beyond the standard library: line charts (one series per
// path, optionally a logarithmic x axis) and grouped bar charts. Output
// is well-formed XML; text is escaped.
package svg
