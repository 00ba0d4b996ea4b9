package main

import (
	"io/fs"
	"os"
	"testing"

	. "github.com/onsi/gomega"
)

func TestAnchors(t *testing.T) {
	g := NewWithT(t)
	doc := "# etcdpilot\n## Install with OLM\n```\n# not a heading\n```\n## API reference: `EtcdCluster` (`etcd.etcdpilot.io/v1alpha1`)\n## Notes\n## Notes\n"
	g.Expect(anchors(doc)).To(Equal(map[string]bool{
		"etcdpilot": true, "install-with-olm": true, "api-reference-etcdcluster-etcdetcdpilotiov1alpha1": true,
		"notes": true, "notes-1": true,
	}))
}

func TestLinks(t *testing.T) {
	g := NewWithT(t)
	doc := "See [a](docs/a.md) and ![b](b.svg \"title\").\n```\n[c](c.md)\n```\n`[d](d.md)` [e](https://x.io)\n"
	g.Expect(links(doc)).To(Equal([]link{{"docs/a.md", 1}, {"b.svg", 1}, {"https://x.io", 5}}))
}

func TestCheckFile(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{
		"README.md": "[ok](docs/a.md#first) [self](#top) [gone](docs/b.md) [bad](docs/a.md#nope) [dir](docs) [web](https://x.io) [code](main.go#L3)\n# Top\n",
		"docs/a.md": "# First\n[up](../README.md#top) [missing](#second)\n",
		"main.go":   "package main\n",
	}
	read := func(p string) ([]byte, error) {
		if p == "docs" {
			return nil, &fs.PathError{Op: "read", Path: p, Err: errIsDir}
		}
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: os.ErrNotExist}
	}
	got, err := checkFile("README.md", read)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]string{"README.md:1: docs/b.md: no such file", "README.md:1: docs/a.md#nope: no such heading"}))
	got, err = checkFile("docs/a.md", read)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]string{"docs/a.md:2: #second: no such heading"}))
}

// errIsDir is the error reading a directory gives on Linux.
var errIsDir = isDirError{}

type isDirError struct{}

func (isDirError) Error() string { return "is a directory" }
