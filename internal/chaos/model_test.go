package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds a recorded operation from call to ret (ret < 0: never ended).
func op(client int, call, ret int64, in Input, out Output) Op {
	return Op{Client: client, Input: in, Output: out, Call: call, Return: ret}
}

func put(k, v string) Input    { return Input{Kind: Put, Key: k, Value: v} }
func get(k string) Input       { return Input{Kind: Get, Key: k} }
func cas(e, v string) Input    { return Input{Kind: CAS, Key: "a", Expect: e, Value: v} }
func ok() Output               { return Output{Outcome: OK} }
func read(v string) Output     { return Output{Outcome: OK, Value: v} }
func swapped(done bool) Output { return Output{Outcome: OK, Succeeded: done} }
func unknown() Output          { return Output{Outcome: Unknown, Error: "context deadline exceeded"} }
func failedRead() Output       { return Output{Outcome: Failed, Error: "context deadline exceeded"} }

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"sequential writes and reads", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, get("a"), read("1")),
			op(0, 40, 50, put("a", "2"), ok()),
			op(1, 60, 70, get("a"), read("2")),
		}, porcupine.Ok},
		{"a read of a key never written sees nothing", []Op{
			op(0, 0, 10, get("a"), read("")),
		}, porcupine.Ok},
		{"a stale read after a newer write returned", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(0, 20, 30, put("a", "2"), ok()),
			op(1, 40, 50, get("a"), read("1")),
		}, porcupine.Illegal},
		{"a lost acknowledged write", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, get("a"), read("")),
		}, porcupine.Illegal},
		{"a read concurrent with a write sees either", []Op{
			op(0, 0, 100, put("a", "1"), ok()),
			op(1, 10, 20, get("a"), read("")),
			op(2, 30, 40, get("a"), read("1")),
		}, porcupine.Ok},
		{"two concurrent reads disagree in an impossible order", []Op{
			op(0, 0, 100, put("a", "1"), ok()),
			op(1, 10, 20, get("a"), read("1")),
			op(2, 30, 40, get("a"), read("")),
		}, porcupine.Illegal},
		{"an unknown write that was applied", []Op{
			op(0, 0, 10, put("a", "1"), unknown()),
			op(1, 20, 30, get("a"), read("1")),
		}, porcupine.Ok},
		{"an unknown write that was never applied", []Op{
			op(0, 0, 10, put("a", "1"), unknown()),
			op(1, 20, 30, get("a"), read("")),
		}, porcupine.Ok},
		{"an unknown write applied late, after a later read saw nothing", []Op{
			op(0, 0, 10, put("a", "1"), unknown()),
			op(1, 20, 30, get("a"), read("")),
			op(1, 40, 50, get("a"), read("1")),
		}, porcupine.Ok},
		{"an unknown write cannot be undone once seen", []Op{
			op(0, 0, 10, put("a", "1"), unknown()),
			op(1, 20, 30, get("a"), read("1")),
			op(1, 40, 50, get("a"), read("")),
		}, porcupine.Illegal},
		{"a write that never ended counts as unknown", []Op{
			op(0, 0, -1, put("a", "1"), Output{}),
			op(1, 20, 30, get("a"), read("1")),
		}, porcupine.Ok},
		{"a failed read is left out", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, get("a"), failedRead()),
		}, porcupine.Ok},
		{"compare-and-swap on the expected value", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, cas("1", "2"), swapped(true)),
			op(0, 40, 50, get("a"), read("2")),
			op(1, 60, 70, cas("1", "3"), swapped(false)),
			op(0, 80, 90, get("a"), read("2")),
		}, porcupine.Ok},
		{"compare-and-swap on a key that does not exist", []Op{
			op(0, 0, 10, cas("", "1"), swapped(true)),
			op(1, 20, 30, get("a"), read("1")),
		}, porcupine.Ok},
		{"a compare-and-swap that says it wrote when the value differed", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, cas("9", "2"), swapped(true)),
		}, porcupine.Illegal},
		{"a compare-and-swap that says it did not write when the value matched", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, cas("1", "2"), swapped(false)),
		}, porcupine.Illegal},
		{"an unknown compare-and-swap applied", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, cas("1", "2"), unknown()),
			op(0, 40, 50, get("a"), read("2")),
		}, porcupine.Ok},
		{"an unknown compare-and-swap seen by a later one", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, cas("1", "2"), unknown()),
			op(0, 40, 50, cas("2", "3"), swapped(true)),
			op(1, 60, 70, get("a"), read("3")),
		}, porcupine.Ok},
		{"an unknown compare-and-swap cannot write when the value differed", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, cas("9", "2"), unknown()),
			op(0, 40, 50, get("a"), read("2")),
		}, porcupine.Illegal},
		// The shape the first twelve-round chaos run recorded (seed 1795753977428319293,
		// key k3): two writes time out, nobody ever reads their values, and a
		// compare-and-swap between them and the next write fails because one was applied.
		{"an unknown write nobody saw explains a failed compare-and-swap", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 20, 30, get("a"), read("1")),
			op(2, 40, -1, put("a", "2"), unknown()),
			op(3, 45, -1, cas("1", "3"), unknown()),
			op(4, 60, 70, cas("1", "4"), swapped(false)),
			op(4, 80, 90, put("a", "5"), ok()),
			op(4, 100, 110, get("a"), read("5")),
		}, porcupine.Ok},
		{"an unknown write nobody saw cannot explain a compare-and-swap that failed before it", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(4, 20, 30, cas("1", "4"), swapped(false)),
			op(2, 40, 50, put("a", "2"), unknown()),
		}, porcupine.Illegal},
		{"an unknown write nobody saw cannot explain a read of the value it overwrote", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(2, 20, 30, put("a", "2"), unknown()),
			op(4, 40, 50, cas("1", "4"), swapped(false)),
			op(1, 60, 70, get("a"), read("1")),
		}, porcupine.Illegal},
		{"keys are independent", []Op{
			op(0, 0, 10, put("a", "1"), ok()),
			op(1, 0, 10, put("b", "2"), ok()),
			op(0, 20, 30, get("b"), read("2")),
			op(1, 20, 30, get("a"), read("1")),
		}, porcupine.Ok},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(tc.ops, 10*time.Second)
			if v.Result != tc.want {
				t.Fatalf("got %s, want %v", v, tc.want)
			}
		})
	}
}

func TestSaveAndLoadReplay(t *testing.T) {
	ops := []Op{
		op(0, 0, 10, put("a", "1"), ok()),
		op(1, 20, 30, get("a"), read("")),
	}
	v := Check(ops, 10*time.Second)
	if v.Result != porcupine.Illegal {
		t.Fatalf("got %s", v)
	}
	dir := t.TempDir()
	if err := v.Save(dir, ops); err != nil {
		t.Fatal(err)
	}
	back, err := Load(filepath.Join(dir, "history.json"))
	if err != nil {
		t.Fatal(err)
	}
	if again := Check(back, 10*time.Second); again.Result != porcupine.Illegal || again.Operations != 2 {
		t.Fatalf("replayed: %s", again)
	}
}

func TestRecorderAndCounts(t *testing.T) {
	now := time.Unix(100, 0)
	r := newRecorder(func() time.Time { now = now.Add(time.Millisecond); return now })
	h := r.Call(0, put("a", "1"))
	h2 := r.Call(1, get("a"))
	r.End(h, ok())
	r.Call(2, put("a", "2")) // never ends
	r.End(h2, failedRead())
	ops := r.Ops()
	if len(ops) != 3 || ops[0].Call != int64(time.Millisecond) || ops[0].Return != int64(3*time.Millisecond) || ops[2].Return != -1 {
		t.Fatalf("ops: %+v", ops)
	}
	if got := Count(ops).String(); got != "put: 1 ok, 0 failed, 0 unknown; get: 0 ok, 1 failed, 0 unknown; cas: 0 ok, 0 failed, 0 unknown" {
		t.Fatalf("counts: %s", got)
	}
	if hist := Operations(ops); len(hist) != 1 || hist[0].Input.(Input).Value != "1" {
		t.Fatalf("operations: %+v", hist)
	}
	// An unknown write whose value a read saw returns when that read returned.
	hist := Operations([]Op{
		op(0, 0, 10, put("a", "1"), unknown()),
		op(1, 5, 8, get("a"), read("1")),
		op(2, 20, 30, get("a"), read("1")),
	})
	if len(hist) != 3 || hist[0].Return != 8 {
		t.Fatalf("operations: %+v", hist)
	}
	// One that nobody saw is left out.
	if hist := Operations([]Op{op(0, 0, 10, put("a", "1"), unknown()), op(1, 20, 30, get("a"), read(""))}); len(hist) != 1 {
		t.Fatalf("operations: %+v", hist)
	}
	// One that nobody saw returns when the last failed compare-and-swap of its key
	// returned, the last operation that could tell whether it was applied.
	hist = Operations([]Op{
		op(0, 0, 10, put("a", "1"), unknown()),
		op(1, 20, 30, cas("1", "2"), swapped(false)),
		op(1, 40, 50, cas("1", "2"), swapped(false)),
		op(1, 60, 70, get("a"), read("")),
	})
	if len(hist) != 4 || hist[0].Return != 50 || hist[0].Output.(Output).Outcome != Unknown {
		t.Fatalf("operations: %+v", hist)
	}
}

func TestExplainNamesTheKeyAndWhereTheOrderStops(t *testing.T) {
	ops := []Op{
		op(0, 0, 10, put("b", "1"), ok()),
		op(1, 20, 30, get("b"), read("1")),
		op(0, 1e9, 1e9+10, put("a", "1"), ok()),
		op(0, 2e9, 2e9+10, put("a", "2"), ok()),
		op(1, 3e9, 3e9+10, get("a"), read("1")),
	}
	v := Check(ops, 10*time.Second)
	got := v.Explain(1)
	want := "key a: 2 of its 3 operations ordered; the last ones:\n" +
		"  client 0, 2.000s..2.000s: put(a, \"2\") -> ok\n" +
		" none of these could come next:\n" +
		"  client 1, 3.000s..3.000s: get(a) -> \"1\"\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if ok := Check(ops[:2], 10*time.Second); ok.Explain(5) != "" {
		t.Fatalf("a linearizable history explained: %q", ok.Explain(5))
	}
}

// TestReplay checks a history a chaos run kept: CHAOS_HISTORY=<dir>/history.json
// (make chaos-replay). It prints the verdict, and for a history that is not
// linearizable where the check stopped.
func TestReplay(t *testing.T) {
	path := os.Getenv("CHAOS_HISTORY")
	if path == "" {
		t.Skip("CHAOS_HISTORY names no history")
	}
	ops, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	v := Check(ops, 5*time.Minute)
	t.Logf("%s: %d operations (%s): %s", path, len(ops), Count(ops), v)
	if v.Result != porcupine.Ok {
		t.Fatalf("%s\n%s", v, v.Explain(10))
	}
}
