package corrupt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplaceInFileRewritesEveryOccurrenceInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	content := "aaa-canary-1-bbb-canary-1-ccc"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	n, err := ReplaceInFile(path, []byte("canary-1"), []byte("CORRUPT!"))
	if err != nil || n != 2 {
		t.Fatalf("rewrote %d (%v), want 2", n, err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "aaa-CORRUPT!-bbb-CORRUPT!-ccc" {
		t.Fatalf("file is %q", got)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Fatal("the file was replaced, not rewritten in place")
	}
	if _, err := ReplaceInFile(path, []byte("x"), []byte("yy")); err == nil {
		t.Fatal("different lengths accepted")
	}
	if msg, code := run([]string{path, "absent!!", "ABSENT!!"}); code != 1 || !strings.Contains(msg, "not found") {
		t.Fatalf("nothing found: %d %q", code, msg)
	}
	// run passes over the file until a pass finds nothing more: the second finds none here.
	if msg, code := run([]string{path, "CORRUPT!", "canary-2"}); code != 0 ||
		msg != `rewrote 2 occurrences of "CORRUPT!" in `+path+` in 2 passes, the last finding none` {
		t.Fatalf("run: %d %q", code, msg)
	}
}
