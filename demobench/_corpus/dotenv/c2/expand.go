package dotenv

import (
	"os"
	"strings"
)

// Expand replaces ${NAME} and $NAME in value with vars[NAME], or the environment's NAME when vars lacks it. An
// unknown name expands to the empty string.
func Expand(value string, vars map[string]string) string {
	return os.Expand(value, func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return os.Getenv(name)
	})
}

// ExpandAll expands every value of vars in file order, so a value may refer to the variables above it.
func ExpandAll(list []Var) map[string]string {
	out := make(map[string]string, len(list))
	for _, v := range list {
		if strings.Contains(v.Value, "$") {
			out[v.Key] = Expand(v.Value, out)
		} else {
			out[v.Key] = v.Value
		}
	}
	return out
}
