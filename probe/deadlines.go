package probe

// deadlines is a min-heap of requests by deadline (container/heap).
type deadlines []*request

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlines) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *deadlines) Push(x any) {
	r := x.(*request)
	r.heapIdx = len(*h)
	*h = append(*h, r)
}
func (h *deadlines) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	r.heapIdx = -1
	*h = old[:len(old)-1]
	return r
}
