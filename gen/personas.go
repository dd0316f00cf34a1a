package gen

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// PersonasFile is the file of the output package that holds its Personas function, which
// builds every persona of the run: Personas(env, opts) ([]*runtime.Persona, error), with one
// env parameter per distinct env type of the specs (named env for one type; env1, env2, … in
// the order the specs first name them otherwise) and the personas in spec order. Its source
// line is AllSources, since it comes from every spec of the run; generate the specs of one
// output package in one run (one go:generate line), so that the function lists them all.
const PersonasFile = "personas.go"

// AllSources is the source line of PersonasFile: it comes from all the specs of its run.
const AllSources = "*"

// personasFile renders PersonasFile for the plan's files.
func (pl *genPlan) personasFile() ([]byte, error) {
	fp0 := pl.files[0]
	f := jen.NewFile(fp0.pkg)
	f.HeaderComment(Header)
	f.HeaderComment(SourcePrefix + AllSources)
	// The env types, in first-use order, and the parameter each is passed as.
	type envParam struct{ path, name, param string }
	var envs []envParam
	param := map[string]string{}
	for _, fp := range pl.files {
		if fp.env == nil {
			continue
		}
		key := fp.env.typ.path + "." + fp.env.typ.name
		if _, ok := param[key]; !ok {
			param[key] = ""
			envs = append(envs, envParam{path: fp.env.typ.path, name: fp.env.typ.name})
		}
	}
	for i := range envs {
		envs[i].param = "env"
		if len(envs) > 1 {
			envs[i].param = fmt.Sprintf("env%d", i+1)
		}
		param[envs[i].path+"."+envs[i].name] = envs[i].param
	}
	var params []jen.Code
	var envDoc []string
	for _, e := range envs {
		params = append(params, jen.Id(e.param).Op("*").Qual(e.path, e.name))
		envDoc = append(envDoc, fmt.Sprintf("%s (a *%s.%s)", e.param, e.path[strings.LastIndex(e.path, "/")+1:], e.name))
	}
	params = append(params, jen.Id("opts").Add(rt("Options")))
	var names []string
	var body []jen.Code
	var list []jen.Code
	for i, fp := range pl.files {
		v := fmt.Sprintf("p%d", i)
		args := []jen.Code{jen.Id("opts")}
		if fp.env != nil {
			args = append([]jen.Code{jen.Id(param[fp.env.typ.path+"."+fp.env.typ.name])}, args...)
		}
		body = append(body,
			jen.List(jen.Id(v), jen.Err()).Op(":=").Id("New"+fp.goName).Call(args...),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		)
		list = append(list, jen.Id(v))
		names = append(names, fp.persona)
	}
	body = append(body, jen.Return(jen.Index().Op("*").Add(rt("Persona")).Values(list...), jen.Nil()))
	// Imports named like a local of the function or a package-level declaration of the
	// output package are renamed, as in the persona files.
	locals := map[string]bool{"opts": true, "err": true}
	for _, e := range envs {
		locals[e.param] = true
	}
	for i := range pl.files {
		locals[fmt.Sprintf("p%d", i)] = true
	}
	imports := map[string]string{RuntimePath: "runtime"}
	for _, fp := range pl.files {
		if fp.env != nil {
			imports[fp.env.typ.path] = fp.imports[fp.env.typ.path]
		}
	}
	for _, path := range slices.Sorted(maps.Keys(imports)) {
		name := imports[path]
		if name == "" || (!locals[name] && !fp0.reserved[name]) {
			if name != "" {
				f.ImportName(path, name)
			}
			continue
		}
		alias := name + "pkg"
		for i := 1; fp0.reserved[alias] || locals[alias]; i++ {
			alias = name + "pkg" + strconv.Itoa(i)
		}
		f.ImportAlias(path, alias)
	}
	f.Comment(fmt.Sprintf("Personas builds every persona of this package, in spec order: %s.", strings.Join(names, ", ")))
	if len(envDoc) > 0 {
		f.Comment("It passes " + strings.Join(envDoc, " and ") + " to the constructors that take one.")
	}
	f.Comment("It returns the first constructor error.")
	f.Func().Id("Personas").Params(params...).Params(jen.Index().Op("*").Add(rt("Persona")), jen.Error()).Block(body...)
	return render(f, "", false)
}
