//go:build race

package proxypool

const raceEnabled = true
