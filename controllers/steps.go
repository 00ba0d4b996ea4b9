package controllers

import "context"

// stepOutcome says whether a pass goes on after a step.
type stepOutcome bool

const (
	next    stepOutcome = true
	endPass stepOutcome = false
)

// step is one step of a reconciler's pass over its object: it records what it saw and did
// in the pass P, and ends the pass early with endPass (what follows waits for a later pass)
// or with an error (the pass's error). Every reconciler is a list of steps run in order
// (runSteps), then one status patch from what they recorded.
type step[P any] func(ctx context.Context, p P) (stepOutcome, error)

// runSteps runs steps in order until one ends the pass, and returns the error that ended it.
func runSteps[P any](ctx context.Context, p P, steps []step[P]) error {
	for _, s := range steps {
		out, err := s(ctx, p)
		if err != nil {
			return err
		}
		if out == endPass {
			return nil
		}
	}
	return nil
}
