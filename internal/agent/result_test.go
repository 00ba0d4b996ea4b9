package agent_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/agent"
)

func TestParseResult(t *testing.T) {
	g := NewWithT(t)
	stored, err := json.Marshal(agent.Result{SHA256: "abc", Size: 10, Revision: 7, Member: "main-1"})
	g.Expect(err).NotTo(HaveOccurred())
	res, ok := agent.ParseResult(string(stored))
	g.Expect(ok).To(BeTrue())
	g.Expect(res).To(Equal(agent.Result{SHA256: "abc", Size: 10, Revision: 7, Member: "main-1"}))
	g.Expect(res.Failed()).To(BeFalse())

	failed, err := json.Marshal(agent.Result{Reason: "DestinationUnreachable", Error: "dial tcp: refused"})
	g.Expect(err).NotTo(HaveOccurred())
	res, ok = agent.ParseResult(string(failed))
	g.Expect(ok).To(BeTrue())
	g.Expect(res.Failed()).To(BeTrue())
	g.Expect(res.Error).To(Equal("dial tcp: refused"))

	for _, none := range []string{"", "panic: runtime error\ngoroutine 1", "{}", `{"size": 3}`, "null"} {
		_, ok := agent.ParseResult(none)
		g.Expect(ok).To(BeFalse(), "%q holds no result", none)
	}
}
