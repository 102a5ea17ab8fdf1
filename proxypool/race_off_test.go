//go:build !race

package proxypool

const raceEnabled = false
