package dotenv

import (
	"strings"
	"testing"
)

func TestExpandReferences(t *testing.T) {
	vars, err := Parse(strings.NewReader("HOST=db\nPORT=5432\nURL=postgres://${HOST}:$PORT/app\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ExpandAll(vars)["URL"]; got != "postgres://db:5432/app" {
		t.Errorf("URL = %q", got)
	}
}

func TestExpandUnknownIsEmpty(t *testing.T) {
	if got := Expand("a${DOTENV_SURELY_UNSET}b", nil); got != "ab" {
		t.Errorf("got %q", got)
	}
}
