package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Model is etcd's key-value store as the clients use it, for porcupine. The state of one
// key is its value, "" when it does not exist (the clients never write ""); the history
// is checked key by key, which is exact: every operation touches one key.
var Model = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		return step(state.(string), input.(Input), output.(Output))
	},
	Equal: func(a, b any) bool { return a.(string) == b.(string) },
	DescribeOperation: func(input, output any) string {
		return describe(input.(Input), output.(Output))
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%q", state.(string)) },
}).ToModel()

// step returns the states a key holding value can be in after the operation, none when
// the operation could not have seen what it saw.
func step(value string, in Input, out Output) []any {
	switch in.Kind {
	case Put:
		if out.Outcome == OK {
			return []any{in.Value}
		}
		return []any{value, in.Value}
	case Get:
		if out.Outcome == OK && out.Value == value {
			return []any{value}
		}
		return nil
	case CAS:
		matches := value == in.Expect
		switch {
		case out.Outcome != OK && matches:
			return []any{value, in.Value}
		case out.Outcome != OK:
			return []any{value}
		case out.Succeeded && matches:
			return []any{in.Value}
		case !out.Succeeded && !matches:
			return []any{value}
		}
		return nil
	}
	return nil
}

func describe(in Input, out Output) string {
	res := string(out.Outcome)
	switch {
	case out.Outcome != OK:
	case in.Kind == Get:
		res = fmt.Sprintf("%q", out.Value)
	case in.Kind == CAS:
		res = fmt.Sprintf("%t", out.Succeeded)
	}
	switch in.Kind {
	case Put:
		return fmt.Sprintf("put(%s, %q) -> %s", in.Key, in.Value, res)
	case CAS:
		return fmt.Sprintf("cas(%s, %q -> %q) -> %s", in.Key, in.Expect, in.Value, res)
	}
	return fmt.Sprintf("get(%s) -> %s", in.Key, res)
}

// Verdict is porcupine's answer for a history.
type Verdict struct {
	// Result: porcupine.Ok (linearizable), porcupine.Illegal, or porcupine.Unknown when
	// the check ran out of time.
	Result porcupine.CheckResult
	// Operations is the number of operations checked.
	Operations int
	// Took is how long the check ran.
	Took time.Duration

	info    porcupine.LinearizationInfo
	history []porcupine.Operation
}

// Check checks ops against Model within timeout.
func Check(ops []Op, timeout time.Duration) Verdict {
	history := Operations(ops)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(Model, history, timeout)
	return Verdict{Result: res, Operations: len(history), Took: time.Since(start), info: info, history: history}
}

// Explain says, for every key whose operations could not be ordered, how far the check
// got: the last n operations of the longest order it found, and the first n operations
// left, none of which could come next. Times are seconds since the recording started; an
// unknown write's return is where Operations placed it. Empty for a linearizable history.
func (v Verdict) Explain(n int) string {
	if v.Result == porcupine.Ok {
		return ""
	}
	partitions := Model.Partition(v.history)
	orders := v.info.PartialLinearizations()
	var b strings.Builder
	for p, ops := range partitions {
		if p >= len(orders) {
			break
		}
		var longest []int
		for _, order := range orders[p] {
			if len(order) > len(longest) {
				longest = order
			}
		}
		if len(longest) == len(ops) {
			continue
		}
		fmt.Fprintf(&b, "key %s: %d of its %d operations ordered; the last ones:\n", ops[0].Input.(Input).Key, len(longest), len(ops))
		for _, id := range longest[max(0, len(longest)-n):] {
			b.WriteString(line(ops[id]))
		}
		b.WriteString(" none of these could come next:\n")
		done := map[int]bool{}
		for _, id := range longest {
			done[id] = true
		}
		left := 0
		for id := 0; id < len(ops) && left < n; id++ {
			if !done[id] {
				b.WriteString(line(ops[id]))
				left++
			}
		}
	}
	return b.String()
}

func line(op porcupine.Operation) string {
	return fmt.Sprintf("  client %d, %.3fs..%.3fs: %s\n", op.ClientId, float64(op.Call)/1e9, float64(op.Return)/1e9,
		describe(op.Input.(Input), op.Output.(Output)))
}

// String says what the check found.
func (v Verdict) String() string {
	switch v.Result {
	case porcupine.Ok:
		return fmt.Sprintf("linearizable (%d operations checked in %s)", v.Operations, v.Took.Round(time.Millisecond))
	case porcupine.Illegal:
		return fmt.Sprintf("NOT linearizable (%d operations checked in %s)", v.Operations, v.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("undecided: the check ran out of time after %s (%d operations)", v.Took.Round(time.Millisecond), v.Operations)
}

// Save writes the history (history.json, which Load reads back to replay the check) and
// porcupine's visualization of the check (history.html) into dir.
func (v Verdict) Save(dir string, ops []Op) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(ops, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "history.json"), data, 0o644); err != nil {
		return err
	}
	return porcupine.VisualizePath(Model, v.info, filepath.Join(dir, "history.html"))
}

// Load reads a history Save wrote.
func Load(path string) ([]Op, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ops []Op
	if err := json.Unmarshal(data, &ops); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ops, nil
}
