package result_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/agent/result"
)

func TestParse(t *testing.T) {
	g := NewWithT(t)
	stored, err := json.Marshal(result.Result{SHA256: "abc", Size: 10, Revision: 7, Member: "main-1"})
	g.Expect(err).NotTo(HaveOccurred())
	res, ok := result.Parse(string(stored))
	g.Expect(ok).To(BeTrue())
	g.Expect(res).To(Equal(result.Result{SHA256: "abc", Size: 10, Revision: 7, Member: "main-1"}))
	g.Expect(res.Failed()).To(BeFalse())

	failed, err := json.Marshal(result.Result{Reason: "DestinationUnreachable", Error: "dial tcp: refused"})
	g.Expect(err).NotTo(HaveOccurred())
	res, ok = result.Parse(string(failed))
	g.Expect(ok).To(BeTrue())
	g.Expect(res.Failed()).To(BeTrue())
	g.Expect(res.Error).To(Equal("dial tcp: refused"))

	for _, none := range []string{"", "panic: runtime error\ngoroutine 1", "{}", `{"size": 3}`, "null"} {
		_, ok := result.Parse(none)
		g.Expect(ok).To(BeFalse(), "%q holds no result", none)
	}
}
