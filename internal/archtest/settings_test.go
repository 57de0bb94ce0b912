package archtest

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"slices"
	"strings"
)

// The third check, "checked twice", follows settings through the types
// that hold them rather than through the sections' names, so that it sees
// a setting wherever it is: a section's field (c.Forward.Lease), an
// element of a list of entries (b.Weight, for b ranging over
// c.Forward.Biz or passed to a helper as a Biz), a field of an embedded
// struct (checkback's Policy). It reads the types syntactically: struct
// fields, receivers, parameters (of function literals too), := of a
// selector, a composite literal or a call whose result type is declared,
// var declarations and range elements.
//
//   - a setting is a field of a struct type of app/config;
//   - app/ maps it to a component's field when it is the value of that
//     field in a composite literal (pkg.T{Field: setting}) or assigned to
//     it (x.Field = setting, x of the component's type T);
//   - the component bounds its field T.Field when a function of its
//     package that validates (it returns an error, takes a
//     *fieldcheck.Checker, or its name starts with validate, resolve or
//     check) compares x.Field, x of type T, or passes it to a local
//     helper or puts it in a literal;
//   - app/config checks it twice when it compares the setting (<, <=, >,
//     >=) and the component bounds a field the setting is mapped to.

// settingsPath is the configuration's package, whose struct types hold the
// settings.
const settingsPath = "app/config"

// typeRef is a named type of the project, or a slice, array or map of one
// (list: its elements are of the type).
type typeRef struct {
	dir, name string
	list      bool
}

func (t typeRef) known() bool { return t.name != "" }

func (t typeRef) String() string { return t.dir + "." + t.name }

// typeInfo holds the project's struct types and what functions return.
type typeInfo struct {
	structs map[typeRef]*ast.StructType
	fileOf  map[typeRef]goFile
	// results maps "dir.Func" and "dir.Type.Method" to the first result's
	// type.
	results map[string]typeRef
}

// typeOfExpr resolves a type expression of file f.
func typeOfExpr(f goFile, e ast.Expr) typeRef {
	switch e := e.(type) {
	case *ast.Ident:
		return typeRef{dir: f.dir, name: e.Name}
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok {
			if dir, ok := f.imports[pkg.Name]; ok && dir != "time" {
				return typeRef{dir: dir, name: e.Sel.Name}
			}
		}
	case *ast.StarExpr:
		return typeOfExpr(f, e.X)
	case *ast.ArrayType:
		t := typeOfExpr(f, e.Elt)
		t.list = true
		return t
	case *ast.MapType:
		t := typeOfExpr(f, e.Value)
		t.list = true
		return t
	}
	return typeRef{}
}

func (src *source) types() *typeInfo {
	ti := &typeInfo{structs: map[typeRef]*ast.StructType{}, fileOf: map[typeRef]goFile{}, results: map[string]typeRef{}}
	for _, f := range src.files {
		for _, d := range f.file.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok {
							t := typeRef{dir: f.dir, name: ts.Name.Name}
							ti.structs[t], ti.fileOf[t] = st, f
						}
					}
				}
			case *ast.FuncDecl:
				if d.Type.Results == nil || len(d.Type.Results.List) == 0 {
					continue
				}
				res := typeOfExpr(f, d.Type.Results.List[0].Type)
				key := f.dir + "." + d.Name.Name
				if d.Recv != nil {
					key = f.dir + "." + typeOfExpr(f, d.Recv.List[0].Type).name + "." + d.Name.Name
				}
				ti.results[key] = res
			}
		}
	}
	return ti
}

// field returns the type of t's field name and the struct type that
// declares it (t, or a struct embedded in t).
func (ti *typeInfo) field(t typeRef, name string) (typ, owner typeRef) {
	st := ti.structs[typeRef{dir: t.dir, name: t.name}]
	if st == nil || t.list {
		return typeRef{}, typeRef{}
	}
	f := ti.fileOf[typeRef{dir: t.dir, name: t.name}]
	for _, fl := range st.Fields.List {
		for _, n := range fl.Names {
			if n.Name == name {
				return typeOfExpr(f, fl.Type), typeRef{dir: t.dir, name: t.name}
			}
		}
	}
	for _, fl := range st.Fields.List {
		if len(fl.Names) == 0 { // embedded
			if typ, owner := ti.field(typeOfExpr(f, fl.Type), name); owner.known() {
				return typ, owner
			}
		}
	}
	return typeRef{}, typeRef{}
}

// scope types the variables of one function.
type scope struct {
	ti   *typeInfo
	f    goFile
	vars map[string]typeRef
}

func (ti *typeInfo) scopeOf(f goFile, fn *ast.FuncDecl) *scope {
	sc := &scope{ti: ti, f: f, vars: map[string]typeRef{}}
	params := func(fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, p := range fl.List {
			for _, n := range p.Names {
				sc.vars[n.Name] = typeOfExpr(f, p.Type)
			}
		}
	}
	params(fn.Recv)
	params(fn.Type.Params)
	if fn.Body == nil {
		return sc
	}
	// Twice, so that a variable typed from one declared later in the
	// source order of ast.Inspect (a range over an alias) is typed too.
	for range 2 {
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				params(n.Type.Params)
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE && len(n.Lhs) == len(n.Rhs) {
					for i, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok {
							if t := sc.typeOf(n.Rhs[i]); t.known() {
								sc.vars[id.Name] = t
							}
						}
					}
				}
			case *ast.ValueSpec:
				if n.Type != nil {
					for _, id := range n.Names {
						sc.vars[id.Name] = typeOfExpr(f, n.Type)
					}
				}
			case *ast.RangeStmt:
				if t := sc.typeOf(n.X); t.list {
					if id, ok := n.Value.(*ast.Ident); ok {
						sc.vars[id.Name] = typeRef{dir: t.dir, name: t.name}
					}
				}
			}
			return true
		})
	}
	return sc
}

// typeOf is the type of a value expression, when it can be told.
func (sc *scope) typeOf(e ast.Expr) typeRef {
	switch e := e.(type) {
	case *ast.Ident:
		return sc.vars[e.Name]
	case *ast.ParenExpr:
		return sc.typeOf(e.X)
	case *ast.StarExpr:
		return sc.typeOf(e.X)
	case *ast.UnaryExpr:
		return sc.typeOf(e.X)
	case *ast.IndexExpr:
		if t := sc.typeOf(e.X); t.list {
			return typeRef{dir: t.dir, name: t.name}
		}
	case *ast.CompositeLit:
		if e.Type != nil {
			return typeOfExpr(sc.f, e.Type)
		}
	case *ast.SelectorExpr:
		if t := sc.typeOf(e.X); t.known() {
			typ, _ := sc.ti.field(t, e.Sel.Name)
			return typ
		}
	case *ast.CallExpr:
		switch fun := e.Fun.(type) {
		case *ast.Ident:
			return sc.ti.results[sc.f.dir+"."+fun.Name]
		case *ast.SelectorExpr:
			if pkg, ok := fun.X.(*ast.Ident); ok {
				if dir, ok := sc.f.imports[pkg.Name]; ok && sc.vars[pkg.Name] == (typeRef{}) {
					return sc.ti.results[dir+"."+fun.Sel.Name]
				}
			}
			if t := sc.typeOf(fun.X); t.known() {
				return sc.ti.results[t.dir+"."+t.name+"."+fun.Sel.Name]
			}
		}
	}
	return typeRef{}
}

// fieldOf returns "dir.Type.Field" (the declaring struct) for a selector
// x.Field whose x has a known struct type.
func (sc *scope) fieldOf(e ast.Expr) (string, typeRef) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", typeRef{}
	}
	t := sc.typeOf(sel.X)
	if !t.known() {
		return "", typeRef{}
	}
	if _, owner := sc.ti.field(t, sel.Sel.Name); owner.known() {
		return owner.String() + "." + sel.Sel.Name, owner
	}
	return "", typeRef{}
}

// settingOf returns "Type.Field" for a selector of a setting: a field of
// a struct type of app/config.
func (sc *scope) settingOf(e ast.Expr) string {
	s, owner := sc.fieldOf(e)
	if owner.dir != settingsPath {
		return ""
	}
	return strings.TrimPrefix(s, settingsPath+".")
}

// isComponent tells whether dir is a component's (not the wiring's, not
// the configuration's).
func isComponent(dir string) bool {
	return dir != "" && dir != "time" && dir != "app" && !strings.HasPrefix(dir, "app/")
}

// eachFunc calls fn with every function declaration of the files fileOK
// accepts, and its scope.
func (src *source) eachFunc(ti *typeInfo, fileOK func(goFile) bool, fn func(goFile, *ast.FuncDecl, *scope)) {
	for _, f := range src.files {
		if !fileOK(f) {
			continue
		}
		for _, d := range f.file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				fn(f, fd, ti.scopeOf(f, fd))
			}
		}
	}
}

// mappedSettings returns, for every setting "Type.Field", the component
// fields "dir.Type.Field" app/ hands it to.
func (src *source) mappedSettings(ti *typeInfo) map[string][]string {
	out := map[string][]string{}
	add := func(setting, target string) {
		if setting != "" && target != "" && !slices.Contains(out[setting], target) {
			out[setting] = append(out[setting], target)
		}
	}
	inApp := func(f goFile) bool { return strings.HasPrefix(f.dir, "app/") }
	src.eachFunc(ti, inApp, func(f goFile, fd *ast.FuncDecl, sc *scope) {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				t := typeOfExpr(f, n.Type)
				if n.Type == nil || !isComponent(t.dir) || t.list {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if key, ok := kv.Key.(*ast.Ident); ok {
							add(sc.settingOf(kv.Value), t.String()+"."+key.Name)
						}
					}
				}
			case *ast.AssignStmt:
				if len(n.Lhs) != len(n.Rhs) {
					return true
				}
				for i, l := range n.Lhs {
					if target, owner := sc.fieldOf(l); isComponent(owner.dir) {
						add(sc.settingOf(n.Rhs[i]), target)
					}
				}
			}
			return true
		})
	})
	return out
}

// validating matches the names of functions that validate.
var validating = regexp.MustCompile(`^(?i:validate|resolve|check)`)

// validates tells whether fd validates: its name says so, it returns an
// error, or it takes a *fieldcheck.Checker.
func validates(fd *ast.FuncDecl) bool {
	if validating.MatchString(fd.Name.Name) {
		return true
	}
	if r := fd.Type.Results; r != nil {
		for _, res := range r.List {
			if id, ok := res.Type.(*ast.Ident); ok && id.Name == "error" {
				return true
			}
		}
	}
	for _, p := range fd.Type.Params.List {
		if star, ok := p.Type.(*ast.StarExpr); ok {
			if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Checker" {
				return true
			}
		}
	}
	return false
}

// boundedFields returns "dir.Type.Field" for every component field its
// package's validation bounds.
func (src *source) boundedFields(ti *typeInfo) map[string]bool {
	out := map[string]bool{}
	inComponent := func(f goFile) bool { return isComponent(f.dir) }
	src.eachFunc(ti, inComponent, func(f goFile, fd *ast.FuncDecl, sc *scope) {
		if !validates(fd) {
			return
		}
		field := func(e ast.Expr) {
			if s, owner := sc.fieldOf(e); owner.dir == f.dir {
				out[s] = true
			}
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				switch n.Op {
				case token.LSS, token.LEQ, token.GTR, token.GEQ, token.EQL, token.NEQ:
					field(n.X)
					field(n.Y)
				}
			case *ast.CallExpr:
				if _, local := n.Fun.(*ast.Ident); local {
					for _, a := range n.Args {
						field(a)
					}
				}
			case *ast.CompositeLit:
				for _, el := range n.Elts {
					field(el)
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						field(kv.Value)
					}
				}
			}
			return true
		})
	})
	return out
}

// checkedTwice finds the comparisons of app/config on settings that a
// component field takes and the component bounds.
func (src *source) checkedTwice() []string {
	ti := src.types()
	mapped, bounded := src.mappedSettings(ti), src.boundedFields(ti)
	var found []string
	inConfig := func(f goFile) bool { return f.dir == settingsPath }
	src.eachFunc(ti, inConfig, func(f goFile, fd *ast.FuncDecl, sc *scope) {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			be, ok := n.(*ast.BinaryExpr)
			if !ok || (be.Op != token.LSS && be.Op != token.LEQ && be.Op != token.GTR && be.Op != token.GEQ) {
				return true
			}
			for _, side := range []ast.Expr{be.X, be.Y} {
				s := sc.settingOf(side)
				for _, target := range mapped[s] {
					if bounded[target] {
						dir := target[:strings.LastIndex(target[:strings.LastIndex(target, ".")], ".")]
						found = append(found, fmt.Sprintf("%s: %s (%s) is bounded by %s's validation", f.rel, s, target, dir))
					}
				}
			}
			return true
		})
	})
	slices.Sort(found)
	return slices.Compact(found)
}
