package api

import "github.com/kairos-sh/kairos"

// priority reads priority: 0 (the default) to kairos.MaxPriority.
func (req jobRequest) priority(fe *fieldErrors) int {
	if req.Priority == nil {
		return 0
	}
	p := *req.Priority
	if p < 0 || p > kairos.MaxPriority {
		fe.add("priority", "%d is out of range: allowed 0 (the default) to %d; higher goes first when a flow limit holds jobs back", p, kairos.MaxPriority)
		return 0
	}
	return p
}
