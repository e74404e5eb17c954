package main

import (
	"math"
	"slices"

	"github.com/scout-discovery/scout/latency"
)

func zipfWeights(s, q float64, k int) []float64 {
	ws := make([]float64, k)
	var h float64
	for r := range ws {
		ws[r] = math.Pow(float64(r+1)+q, -s)
		h += ws[r]
	}
	for r := range ws {
		ws[r] /= h
	}
	return ws
}

func expectedDistinct(ws []float64, n int) float64 {
	var d float64
	for _, p := range ws {
		d += 1 - math.Pow(1-p, float64(n))
	}
	return d
}

// zipfSlope is minus the least-squares slope of log(count) on log(rank).
func zipfSlope(counts []int) float64 {
	c := slices.Clone(counts)
	slices.Sort(c)
	slices.Reverse(c)
	var x, y []float64
	for i, v := range c {
		x = append(x, math.Log(float64(i+1)))
		y = append(y, math.Log(float64(v)))
	}
	_, b := linFit(x, y)
	return -b
}

// powerFit fits y = c*x^b by least squares in log-log.
func powerFit(x, y []float64) (c, b float64) {
	lx := make([]float64, len(x))
	ly := make([]float64, len(y))
	for i := range x {
		lx[i], ly[i] = math.Log(x[i]), math.Log(y[i])
	}
	a, b := linFit(lx, ly)
	return math.Exp(a), b
}

func linFit(x, y []float64) (a, b float64) {
	mx, my := mean(x), mean(y)
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return my, 0
	}
	b = sxy / sxx
	return my - b*mx, b
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func median(v []float64) float64 {
	c := slices.Clone(v)
	slices.Sort(c)
	if len(c) == 0 {
		return 0
	}
	return c[len(c)/2]
}

func haversineKm(lat1, lon1, lat2, lon2 float64) float64 {
	return latency.GreatCircleKm(lat1, lon1, lat2, lon2)
}
