package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// link is one Markdown link: its target as written, and the line it is on.
type link struct {
	target string
	line   int
}

// inlineLink matches [text](target) and ![alt](target); the target ends at a space (a
// title follows) or the closing parenthesis.
var inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// links returns the links of a Markdown document outside fenced code blocks and inline
// code spans.
func links(doc string) []link {
	var out []link
	fenced := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(withoutCode(line), -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// withoutCode blanks the inline code spans of line: a link written inside backticks is
// an example, not a link.
func withoutCode(line string) string {
	parts := strings.Split(line, "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = strings.Repeat(" ", len(parts[i]))
	}
	return strings.Join(parts, "`")
}

// anchors returns the anchors GitHub gives the headings of a Markdown document: lower
// case, punctuation dropped, spaces as hyphens, a repeated heading numbered -1, -2, ...
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := slug(text)
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's anchor of a heading's text.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// external says whether target leaves the repository: a URL with a scheme.
func external(target string) bool {
	for _, p := range []string{"http://", "https://", "mailto:"} {
		if strings.HasPrefix(target, p) {
			return true
		}
	}
	return false
}

// checkFile returns the broken relative links of the Markdown file at path, each as
// "path:line: target: why", reading files with read.
func checkFile(path string, read func(string) ([]byte, error)) ([]string, error) {
	doc, err := read(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range links(string(doc)) {
		if external(l.target) {
			continue
		}
		if why := checkTarget(path, string(doc), l.target, read); why != "" {
			out = append(out, fmt.Sprintf("%s:%d: %s: %s", path, l.line, l.target, why))
		}
	}
	return out, nil
}

// checkTarget says why target, a link of the document doc at path, does not resolve; ""
// when it does.
func checkTarget(path, doc, target string, read func(string) ([]byte, error)) string {
	file, anchor, _ := strings.Cut(target, "#")
	if file != "" {
		file = filepath.Join(filepath.Dir(path), file)
		b, err := read(file)
		var pathErr *fs.PathError
		switch {
		case err == nil:
			doc = string(b)
		case errors.As(err, &pathErr) && strings.Contains(err.Error(), "is a directory"):
			return dirAnchor(anchor)
		case errors.Is(err, fs.ErrNotExist):
			return "no such file"
		default:
			return err.Error()
		}
		if !strings.HasSuffix(file, ".md") {
			return "" // a source file: its lines (#L10) are not checked
		}
	}
	if anchor != "" && !anchors(doc)[anchor] {
		return "no such heading"
	}
	return ""
}

// dirAnchor is the verdict on a link to a directory: it resolves, without an anchor.
func dirAnchor(anchor string) string {
	if anchor != "" {
		return "an anchor in a directory"
	}
	return ""
}
