// Command gen writes the field tree of every kind kube-sim serves, read from the real Go types
// by reflection, as the compact JSON kube-sim embeds (`tests/kube-sim/schema/types.json`).
//
// The apiserver decodes a request body into these Go structs: a key without a struct field is
// an unknown field (dropped, and reported by `fieldValidation`). kube-sim has no Go types, so it
// walks this tree instead. The output:
//
//	{"source": {module: version},
//	 "kinds": {"v1/Pod": "io.k8s.api.core.v1.Pod", ...},
//	 "types": {"io.k8s.api.core.v1.Pod": {"metadata": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", ...}}}
//
// A field's value is "" (a scalar: string, number, bool, []byte), "*" (a type with its own
// UnmarshalJSON, e.g. Quantity, Time, IntOrString, RawExtension: anything goes, nothing is
// checked inside), "any" (interface{}), a type name (a struct in "types"), ["map", V] or
// ["list", V] / ["list", V, [keys...]] / ["list", V, [keys...], {key: default}]. The keys are
// the list's associative keys as server-side apply sees them (`+listType=map` + `+listMapKey`,
// or else `patchStrategy:"merge"` + `patchMergeKey`), read from the types' source comments;
// the defaults are the `+default=` markers of those key fields.
//
// Run it through ../generate.sh.
package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// served are the kinds of kube-sim's BUILTINS (src/resources.rs), then the bodies of the
// subresources it serves; each kind's List is added too.
var served = []string{
	"v1/Namespace", "v1/Node", "v1/Pod", "v1/Event", "v1/Service", "v1/Endpoints",
	"v1/ConfigMap", "v1/Secret", "v1/ServiceAccount",
	"apps/v1/Deployment", "apps/v1/ReplicaSet", "apps/v1/DaemonSet", "apps/v1/StatefulSet",
	"apps/v1/ControllerRevision",
	"policy/v1/PodDisruptionBudget", "autoscaling/v2/HorizontalPodAutoscaler",
	"coordination.k8s.io/v1/Lease", "events.k8s.io/v1/Event",
	"admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration",
	"admissionregistration.k8s.io/v1/MutatingWebhookConfiguration",
	"rbac.authorization.k8s.io/v1/Role", "rbac.authorization.k8s.io/v1/RoleBinding",
	"rbac.authorization.k8s.io/v1/ClusterRole", "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
	"apiextensions.k8s.io/v1/CustomResourceDefinition",
	// The access reviews (created only, so their Lists are none of kube-sim's business).
	"authorization.k8s.io/v1/SelfSubjectAccessReview", "authorization.k8s.io/v1/SubjectAccessReview",
	"authorization.k8s.io/v1/LocalSubjectAccessReview",
	// Subresource bodies: scale, eviction, binding, token.
	"autoscaling/v1/Scale", "policy/v1/Eviction", "v1/Binding", "authentication.k8s.io/v1/TokenRequest",
}

var (
	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

type generator struct {
	types   map[string]map[string]interface{}
	markers map[string]map[string][]string // package path → "Type.Field" → marker lines
}

func main() {
	out := "../types.json"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, autoscalingv1.AddToScheme,
		autoscalingv2.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme,
		admissionregistrationv1.AddToScheme, rbacv1.AddToScheme, apiextensionsv1.AddToScheme,
		authenticationv1.AddToScheme, authorizationv1.AddToScheme,
	} {
		must(add(scheme))
	}
	known := scheme.AllKnownTypes()
	g := &generator{types: map[string]map[string]interface{}{}, markers: map[string]map[string][]string{}}
	kinds := map[string]string{}
	for _, key := range served {
		cut := strings.LastIndex(key, "/")
		gv, err := schema.ParseGroupVersion(key[:cut])
		must(err)
		for _, kind := range []string{key[cut+1:], key[cut+1:] + "List"} {
			t, ok := known[gv.WithKind(kind)]
			if !ok {
				if strings.HasSuffix(kind, "List") {
					continue // subresource bodies have no List
				}
				must(fmt.Errorf("%s is not a registered kind", key))
			}
			kinds[key[:cut]+"/"+kind] = g.typeRef(t)
		}
	}
	// Custom resources' metadata is checked against ObjectMeta, which every kind reaches anyway.
	g.typeRef(reflect.TypeOf(metav1.ObjectMeta{}))
	doc := map[string]interface{}{"source": sources(), "kinds": kinds, "types": g.types}
	data, err := json.Marshal(doc)
	must(err)
	must(os.WriteFile(out, append(data, '\n'), 0o644))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// sources names the module versions the tree was read from.
func sources() map[string]string {
	versions := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if strings.HasPrefix(dep.Path, "k8s.io/") {
				versions[dep.Path] = dep.Version
			}
		}
	}
	return versions
}

// typeName is the OpenAPI definition name of a Go type: `k8s.io/api/core/v1.Pod` →
// `io.k8s.api.core.v1.Pod`.
func typeName(t reflect.Type) string {
	domain, rest, _ := strings.Cut(t.PkgPath(), "/")
	labels := strings.Split(domain, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".") + "." + strings.ReplaceAll(rest, "/", ".") + "." + t.Name()
}

// typeRef records struct type t (once) and returns its name.
func (g *generator) typeRef(t reflect.Type) string {
	name := typeName(t)
	if _, seen := g.types[name]; seen {
		return name
	}
	fields := map[string]interface{}{}
	g.types[name] = fields // before the fields: types refer to themselves (JSONSchemaProps)
	depths := map[string]int{}
	g.structFields(t, t, 0, fields, depths)
	return name
}

// structFields adds t's JSON fields as encoding/json sees them: `json:"-"` and unexported
// fields skipped, embedded structs without a name inlined (the shallowest field of a name wins).
func (g *generator) structFields(owner, t reflect.Type, depth int, fields map[string]interface{}, depths map[string]int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			g.structFields(ft, ft, depth+1, fields, depths)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if d, ok := depths[name]; ok && d <= depth {
			continue
		}
		depths[name] = depth
		fields[name] = g.field(owner, f)
	}
}

// field encodes one struct field, with the list keys its markers or tags declare.
func (g *generator) field(owner reflect.Type, f reflect.StructField) interface{} {
	value := g.value(f.Type)
	list, ok := value.([]interface{})
	if !ok || list[0] != "list" {
		return value
	}
	markers := g.fieldMarkers(owner, f.Name)
	var keys []string
	listType := marker(markers, "listType")
	switch {
	case len(listType) > 0 && listType[0] == "map":
		keys = marker(markers, "listMapKey")
	case len(listType) > 0:
		// atomic or set: no keys
	case strings.Contains(f.Tag.Get("patchStrategy"), "merge") && f.Tag.Get("patchMergeKey") != "":
		keys = []string{f.Tag.Get("patchMergeKey")}
	}
	if len(keys) == 0 {
		return list
	}
	list = append(list, keys)
	if defaults := g.keyDefaults(f.Type, keys); len(defaults) > 0 {
		list = append(list, defaults)
	}
	return list
}

// keyDefaults are the `+default=` values of the key fields of a list's element struct.
func (g *generator) keyDefaults(listType reflect.Type, keys []string) map[string]interface{} {
	elem := listType.Elem()
	if elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	defaults := map[string]interface{}{}
	if elem.Kind() != reflect.Struct {
		return defaults
	}
	for i := 0; i < elem.NumField(); i++ {
		f := elem.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		for _, key := range keys {
			if name != key {
				continue
			}
			for _, raw := range marker(g.fieldMarkers(elem, f.Name), "default") {
				var v interface{}
				must(json.Unmarshal([]byte(raw), &v))
				defaults[key] = v
			}
		}
	}
	return defaults
}

// value encodes a Go type.
func (g *generator) value(t reflect.Type) interface{} {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return "*"
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return ""
	}
	switch t.Kind() {
	case reflect.Struct:
		return g.typeRef(t)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "" // []byte is a base64 string
		}
		return []interface{}{"list", g.value(t.Elem())}
	case reflect.Map:
		return []interface{}{"map", g.value(t.Elem())}
	case reflect.Interface:
		return "any"
	default:
		return ""
	}
}

// fieldMarkers are the `+name=value` comment lines above field `field` of struct `owner`.
func (g *generator) fieldMarkers(owner reflect.Type, field string) []string {
	pkg := owner.PkgPath()
	if _, ok := g.markers[pkg]; !ok {
		g.markers[pkg] = parseMarkers(pkg)
	}
	return g.markers[pkg][owner.Name()+"."+field]
}

// marker returns the values of `+name=value` lines.
func marker(lines []string, name string) []string {
	var values []string
	for _, line := range lines {
		if v, ok := strings.CutPrefix(line, "+"+name+"="); ok {
			values = append(values, strings.TrimSpace(v))
		}
	}
	return values
}

// parseMarkers reads a package's source and collects each struct field's marker comments.
func parseMarkers(pkgPath string) map[string][]string {
	wd, err := os.Getwd()
	must(err)
	pkg, err := build.Default.Import(pkgPath, wd, build.FindOnly)
	must(err)
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, pkg.Dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	must(err)
	out := map[string][]string{}
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, file := range pkgs[name].Files {
			ast.Inspect(file, func(n ast.Node) bool {
				spec, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := spec.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, f := range st.Fields.List {
					if f.Doc == nil {
						continue
					}
					var lines []string
					for _, c := range f.Doc.List {
						text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
						if strings.HasPrefix(text, "+") {
							lines = append(lines, text)
						}
					}
					for _, ident := range f.Names {
						out[spec.Name.Name+"."+ident.Name] = lines
					}
				}
				return false
			})
		}
	}
	return out
}
