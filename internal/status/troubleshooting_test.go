package status_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Every condition reason the API declares has a row in docs/troubleshooting.md, which
// says what it means and what to do: a reason added without one fails here.
func TestEveryReasonIsInTroubleshooting(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../api/v1alpha1/conditions.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	reasons := 0
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				reasons++
				if !strings.Contains(string(doc), "| `"+value+"`") {
					t.Errorf("%s (%q) has no row in docs/troubleshooting.md", name.Name, value)
				}
			}
		}
	}
	if reasons < 60 {
		t.Fatalf("found %d reasons in conditions.go: is it still where they are declared?", reasons)
	}
}
