package rdb

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kairos-sh/kairos"
)

// luaLiteral is a quoted string in a script, and whether it is joined to
// something with Lua's .. on either side.
type luaLiteral struct {
	text   string
	joined bool
}

// luaLiterals returns the quoted strings of a Lua source, its comments
// left out.
func luaLiterals(src string) []luaLiteral {
	var lits []luaLiteral
	code := []byte{} // the source without its comments and strings, to see what is next to each string
	type at struct{ lit, pos int }
	var ats []at
	for i := 0; i < len(src); {
		switch {
		case strings.HasPrefix(src[i:], "--[["):
			end := strings.Index(src[i:], "]]")
			if end < 0 {
				return lits
			}
			i += end + 2
		case strings.HasPrefix(src[i:], "--"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case src[i] == '\'' || src[i] == '"':
			q := src[i]
			var b strings.Builder
			i++
			for i < len(src) && src[i] != q {
				if src[i] == '\\' && i+1 < len(src) {
					b.WriteByte(src[i])
					i++
				}
				b.WriteByte(src[i])
				i++
			}
			i++
			ats = append(ats, at{len(lits), len(code)})
			lits = append(lits, luaLiteral{text: b.String()})
			code = append(code, 'S')
		default:
			code = append(code, src[i])
			i++
		}
	}
	for _, a := range ats {
		before := strings.TrimRight(string(code[:a.pos]), " \t\n")
		after := strings.TrimLeft(string(code[a.pos+1:]), " \t\n")
		lits[a.lit].joined = strings.HasSuffix(before, "..") || strings.HasPrefix(after, "..")
	}
	return lits
}

// layoutConsts returns the string constants layout.go declares, by name.
func layoutConsts(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "layout.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		d, ok := n.(*ast.GenDecl)
		if !ok || d.Tok != token.CONST {
			return true
		}
		for _, s := range d.Specs {
			vs := s.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					consts[name.Name] = v
				}
			}
		}
		return false
	})
	return consts
}

var (
	// nameLike is a literal that looks like a key suffix or a field: joined
	// to something, it builds a key or a field name.
	nameLike = regexp.MustCompile(`^[A-Za-z_~]+:?~?$`)
	// counterField is a counter field of a state move (layout.go, "Counters").
	counterField = regexp.MustCompile(`^(?:` + regexp.QuoteMeta(occurrenceMark) + `)?([a-z]*)>([a-z]*)$`)
)

// layoutLint returns what a script's source spells that layout.go should:
// a literal joined into a key or field name, a literal equal to a
// declared key suffix, field or mark (breaker fields and codes only in
// the scripts that use the breaker's, BRK), a counter field of a state
// that is not one.
func layoutLint(name, src string, consts map[string]string) []string {
	marked := map[string]string{} // literal -> the name it is declared by
	breaker := map[string]string{}
	for n, v := range consts {
		if strings.HasPrefix(n, "brk") {
			breaker[v] = n
		} else {
			marked[v] = n
		}
	}
	for _, tab := range [][]luaName{luaKeys, luaHandleFields, luaRevokedFields} {
		for _, e := range tab {
			marked[e.value] = e.name
		}
	}
	for _, m := range []string{kairos.OccurrenceMark, kairos.NoticeMark, kairos.SuccessMark} {
		marked[m] = "a kairos mark"
	}
	usesBreaker := strings.Contains(src, "BRK")
	states := map[string]bool{}
	for st := range stateCodes {
		states[string(st)] = true
	}
	var bad []string
	for _, l := range luaLiterals(src) {
		switch {
		case l.joined && nameLike.MatchString(l.text):
			bad = append(bad, name+": '"+l.text+"' builds a key or field from a literal: declare it in layout.go and hand it over in the prelude")
		case marked[l.text] != "":
			bad = append(bad, name+": '"+l.text+"' is declared in layout.go ("+marked[l.text]+"): use the prelude's name")
		case usesBreaker && breaker[l.text] != "":
			bad = append(bad, name+": '"+l.text+"' is a circuit breaker's field or code ("+breaker[l.text]+"): use BRK or BRK_ST")
		}
		if m := counterField.FindStringSubmatch(l.text); m != nil {
			for _, st := range m[1:] {
				if st != "" && !states[st] {
					bad = append(bad, name+": counter field '"+l.text+"' names no state: "+st)
				}
			}
		}
	}
	return bad
}

// TestLuaSpellsNoLayoutLiteral checks that the scripts take their key
// suffixes, the breaker's fields and codes and the id marks from the
// prelude (layout.go), so that the layout is written down once: a
// quoted literal that builds a key or field, or equals one layout.go
// declares, fails, naming the script and the literal.
func TestLuaSpellsNoLayoutLiteral(t *testing.T) {
	consts := layoutConsts(t)
	if consts["keyScheduleBodies"] != keyScheduleBodies || consts["brkState"] != brkState {
		t.Fatalf("layout.go's constants were not read: %v", consts)
	}
	srcs := map[string]string{"job": jobSrc, "index": indexSrc, "sched": schedSrc, "ops": opsSrc, "flow": flowSrc}
	for _, sc := range allScripts {
		srcs[sc.name] = sc.body
	}
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, b := range layoutLint(n+".lua", srcs[n], consts) {
			t.Error(b)
		}
	}

	// The lint finds what it is for.
	bad := `-- 'sb' in a comment is fine
local k = tag .. 'zz:' .. h
local b = redis.call('HGET', tag .. KEY.scheduleBodies, 'x'), redis.call('HGET', 'sb', 'x')
redis.call('HGET', KEYS[1], BRK.state, 'pd')
count(h, 'active>gone')
local id = sid .. '@' .. t`
	got := strings.Join(layoutLint("bad.lua", bad, consts), "\n")
	for _, want := range []string{"'zz:' builds", "'sb' is declared", "'pd' is a circuit breaker's", "'active>gone' names no state", "'@' "} {
		if !strings.Contains(got, want) {
			t.Errorf("the lint of a bad script misses %q; it says:\n%s", want, got)
		}
	}
	if strings.Contains(got, "comment") {
		t.Errorf("the lint reads comments:\n%s", got)
	}
}

// TestPreludeNamesLayout checks that the prelude hands the scripts the
// key suffixes, breaker fields and codes, handle and revoked-token fields,
// catch-up codes and id marks that layout.go declares.
func TestPreludeNamesLayout(t *testing.T) {
	for _, want := range []string{
		"KEY = {", "scheduleBodies = '" + keyScheduleBodies + "'", "wheelSlot = '" + keyWheelSlot + "'",
		"BRK = {", "probeEnd = '" + brkProbeEnd + "'", "BRK_ST = {", "half = '" + brkHalfOpen + "'",
		"HANDLE = {", "REVOKED = {", "CU = {", "none = '" + string(catchUpCodes[kairos.CatchUpNone]) + "'",
		"OCC_MARK, OCC_MARK_BYTE = '@', 64", "GROUP_MARK = '" + groupMark + "'",
	} {
		if !strings.Contains(luaPrelude, want) {
			t.Errorf("the prelude lacks %q:\n%s", want, luaPrelude)
		}
	}
}
