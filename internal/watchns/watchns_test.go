package watchns_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/watchns"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		value   string
		want    []string
		wantErr string
	}{
		{name: "empty means all namespaces", value: "", want: nil},
		{name: "blank means all namespaces", value: "  ", want: nil},
		{name: "own or single namespace", value: "etcd-system", want: []string{"etcd-system"}},
		{name: "multi namespace, sorted", value: "team-b,team-a", want: []string{"team-a", "team-b"}},
		{name: "spaces and duplicates", value: " a , b,a ", want: []string{"a", "b"}},
		{name: "empty item", value: "a,,b", wantErr: "empty namespace in list"},
		{name: "trailing comma", value: "a,", wantErr: "empty namespace in list"},
		{name: "invalid name", value: "Team_A", wantErr: `"Team_A" is not a valid namespace name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := watchns.Parse(tc.value)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				g.Expect(err).To(MatchError(ContainSubstring("WATCH_NAMESPACE")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
