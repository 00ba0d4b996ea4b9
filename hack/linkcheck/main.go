// Command linkcheck checks the relative links of the repository's Markdown: every link of
// README.md and of the Markdown under docs/ to a file of the repository must name a file
// that exists, and a link to a heading (#anchor), a heading of that file. Links to the web
// are left alone. It prints every broken link and exits non-zero when there is one.
//
//	go run ./hack/linkcheck README.md docs
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	files, err := markdownFiles(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "linkcheck:", err)
		os.Exit(2)
	}
	var broken []string
	for _, f := range files {
		problems, err := checkFile(f, os.ReadFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "linkcheck:", err)
			os.Exit(2)
		}
		broken = append(broken, problems...)
	}
	for _, b := range broken {
		fmt.Println(b)
	}
	if len(broken) > 0 {
		fmt.Fprintf(os.Stderr, "linkcheck: %d broken links in %d files\n", len(broken), len(files))
		os.Exit(1)
	}
	fmt.Printf("linkcheck: every relative link of %d files resolves\n", len(files))
}

// markdownFiles lists the Markdown files of paths: files as they are, directories walked.
func markdownFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".md") {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}
