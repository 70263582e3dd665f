// Command grove-api-oracle answers questions with Grove's own code (the module
// github.com/ai-dynamo/grove/operator/api pinned in go.mod), so the Python tests of this folder
// can compare grove-gitops with Grove itself rather than with our reading of Grove's source.
// Grove's operator module is not served by the Go module proxy, so its API module is the part of
// Grove that can be run here (docs/grove-differences.md, "Verified against Grove's own code").
//
// Protocol: one JSON request per line on stdin, one JSON answer per line on stdout, in order:
//
//	{"id": "x", "op": "pcs", "object": {...PodCliqueSet...}}
//	    -> {"id": "x", "names": {...}} or {"id": "x", "error": "..."}
//	{"id": "y", "op": "opcfg", "document": "<YAML or JSON of an OperatorConfiguration>"}
//	    -> {"id": "y", "decodeError": "..."} or {"id": "y", "errors": [...], "defaulted": {...}}
//	{"id": "z", "op": "duration", "document": "1m30s"}
//	    -> {"id": "z", "duration": {"nanoseconds": 90000000000, "string": "1m30s"}} or {"decodeError": "..."}
//
// A PodCliqueSet is decoded strictly into Grove's core/v1alpha1 type (an unknown or duplicate
// field is an error: the test must not compare names of an object Grove would not have read
// as written). Every name is produced by Grove's functions (common/namegen.go); the only
// input this program supplies itself is the CRD default of a scaling group's replicas and
// minAvailable, read from Grove's embedded CRD (the API server applies it before Grove sees
// the object).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/operator/api/config/v1alpha1"
	configvalidation "github.com/ai-dynamo/grove/operator/api/config/validation"
	corev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/ai-dynamo/grove/operator/api/core/v1alpha1/crds"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

// maxLine bounds one request (a PodCliqueSet of the samples is a few kB; the render's limits
// are far below this).
const maxLine = 16 << 20

// maxReplicas bounds every count that sizes a loop here (the render refuses far less).
const maxReplicas = 10000

type request struct {
	ID       string          `json:"id"`
	Op       string          `json:"op"`
	Object   json.RawMessage `json:"object,omitempty"`
	Document string          `json:"document,omitempty"`
}

type clique struct {
	Name     string `json:"name"`
	Template string `json:"template"`
	Replica  int    `json:"replica"`
	PodGang  string `json:"podGang"`
}

type scalingGroup struct {
	Name           string   `json:"name"`
	Config         string   `json:"config"`
	Replicas       int      `json:"replicas"`
	MinAvailable   int      `json:"minAvailable"`
	PodCliques     []clique `json:"podCliques"`
	ScaledPodGangs []string `json:"scaledPodGangs"`
}

type pcsReplica struct {
	Index                  int            `json:"index"`
	HeadlessService        string         `json:"headlessService"`
	HeadlessServiceAddress string         `json:"headlessServiceAddress"`
	BasePodGang            string         `json:"basePodGang"`
	PodCliques             []clique       `json:"podCliques"`
	ScalingGroups          []scalingGroup `json:"scalingGroups"`
}

type names struct {
	Replicas                         []pcsReplica      `json:"replicas"`
	Role                             string            `json:"role"`
	RoleBinding                      string            `json:"roleBinding"`
	ServiceAccount                   string            `json:"serviceAccount"`
	InitContainerSATokenSecret       string            `json:"initContainerSATokenSecret"`
	LegacyInitContainerSATokenSecret string            `json:"legacyInitContainerSATokenSecret"`
	DefaultLabels                    map[string]string `json:"defaultLabels"`
	ComponentLabels                  map[string]string `json:"componentLabels"`
	LabelKeys                        map[string]string `json:"labelKeys"`
}

type fieldError struct {
	Type     string `json:"type"`
	Field    string `json:"field"`
	BadValue string `json:"badValue"`
	Detail   string `json:"detail"`
	Error    string `json:"error"`
}

type answer struct {
	ID          string                                `json:"id"`
	Error       string                                `json:"error,omitempty"`
	Names       *names                                `json:"names,omitempty"`
	DecodeError string                                `json:"decodeError,omitempty"`
	Errors      []fieldError                          `json:"errors,omitempty"`
	Defaulted   *configv1alpha1.OperatorConfiguration `json:"defaulted,omitempty"`
	Duration    *duration                             `json:"duration,omitempty"`
}

type duration struct {
	Nanoseconds int64  `json:"nanoseconds"`
	String      string `json:"string"`
}

func main() {
	strict, err := strictDecoder()
	if err != nil {
		fmt.Fprintln(os.Stderr, "grove-api-oracle:", err)
		os.Exit(2)
	}
	sgDefaults, err := scalingGroupDefaults()
	if err != nil {
		fmt.Fprintln(os.Stderr, "grove-api-oracle:", err)
		os.Exit(2)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), maxLine)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		var req request
		var ans answer
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			ans.Error = "bad request: " + err.Error()
		} else {
			ans = handle(req, strict, sgDefaults)
		}
		// one answer per request, flushed: the tests ask one question at a time
		if err := enc.Encode(ans); err == nil {
			err = out.Flush()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "grove-api-oracle:", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "grove-api-oracle: reading stdin:", err)
		os.Exit(2)
	}
}

func handle(req request, strict runtime.Decoder, sgDefaults sgDefault) answer {
	ans := answer{ID: req.ID}
	switch req.Op {
	case "pcs":
		pcs := &corev1alpha1.PodCliqueSet{}
		if err := runtime.DecodeInto(strict, req.Object, pcs); err != nil {
			ans.Error = "decoding the PodCliqueSet strictly into Grove's type: " + err.Error()
			return ans
		}
		n, err := pcsNames(pcs, sgDefaults)
		if err != nil {
			ans.Error = err.Error()
			return ans
		}
		ans.Names = n
	case "opcfg":
		cfg, err := configv1alpha1.DecodeOperatorConfig([]byte(req.Document))
		if err != nil {
			ans.DecodeError = err.Error()
			return ans
		}
		ans.Errors = []fieldError{}
		for _, e := range configvalidation.ValidateOperatorConfiguration(cfg) {
			ans.Errors = append(ans.Errors, fieldError{
				Type: string(e.Type), Field: e.Field, BadValue: badValue(e.BadValue),
				Detail: e.Detail, Error: e.Error(),
			})
		}
		ans.Defaulted = cfg
	case "duration": // Go's own reading of a metav1.Duration (time.ParseDuration, Duration.String)
		d, err := time.ParseDuration(req.Document)
		if err != nil {
			ans.DecodeError = err.Error()
			return ans
		}
		ans.Duration = &duration{Nanoseconds: int64(d), String: d.String()}
	default:
		ans.Error = fmt.Sprintf("unknown op %q (pcs, opcfg, duration)", req.Op)
	}
	return ans
}

// badValue prints a field error's value as Grove's message does (a pointer is followed).
func badValue(v any) string {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "null"
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return "null"
	}
	if s, ok := rv.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%v", rv.Interface())
}

// strictDecoder: Grove's scheme with the API machinery's strict decoding (unknown and
// duplicate fields are errors).
func strictDecoder() (runtime.Decoder, error) {
	scheme := runtime.NewScheme()
	if err := corev1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder(corev1alpha1.SchemeGroupVersion), nil
}

type sgDefault struct{ replicas, minAvailable int32 }

// scalingGroupDefaults reads the `default:` of a scaling group's replicas and minAvailable
// from Grove's embedded PodCliqueSet CRD.
func scalingGroupDefaults() (sgDefault, error) {
	var crd map[string]any
	if err := yaml.Unmarshal([]byte(crds.PodCliqueSetCRD()), &crd); err != nil {
		return sgDefault{}, fmt.Errorf("reading Grove's PodCliqueSet CRD: %w", err)
	}
	versions, _ := crd["spec"].(map[string]any)["versions"].([]any)
	if len(versions) == 0 {
		return sgDefault{}, fmt.Errorf("Grove's PodCliqueSet CRD has no versions")
	}
	props, err := dig(versions[0], "schema", "openAPIV3Schema", "properties", "spec", "properties", "template",
		"properties", "podCliqueScalingGroups", "items", "properties")
	if err != nil {
		return sgDefault{}, err
	}
	get := func(field string) (int32, error) {
		d, err := dig(props, field, "default")
		if err != nil {
			return 0, err
		}
		f, ok := d.(float64)
		if !ok {
			return 0, fmt.Errorf("CRD default of %s is %v, not a number", field, d)
		}
		return int32(f), nil
	}
	r, err := get("replicas")
	if err != nil {
		return sgDefault{}, err
	}
	m, err := get("minAvailable")
	return sgDefault{r, m}, err
}

func dig(node any, keys ...string) (any, error) {
	for _, k := range keys {
		m, ok := node.(map[string]any)
		if !ok || m[k] == nil {
			return nil, fmt.Errorf("Grove's PodCliqueSet CRD has no %q where expected (%v)", k, keys)
		}
		node = m[k]
	}
	return node, nil
}

func bounded(what string, n int32) (int, error) {
	if n < 0 || n > maxReplicas {
		return 0, fmt.Errorf("%s is %d: outside 0..%d", what, n, maxReplicas)
	}
	return int(n), nil
}

func pcsNames(pcs *corev1alpha1.PodCliqueSet, d sgDefault) (*names, error) {
	replicas, err := bounded("spec.replicas", pcs.Spec.Replicas)
	if err != nil {
		return nil, err
	}
	inGroup := map[string]bool{}
	groups := pcs.Spec.Template.PodCliqueScalingGroupConfigs
	for i := range groups {
		if groups[i].Replicas == nil {
			groups[i].Replicas = &d.replicas
		}
		if groups[i].MinAvailable == nil {
			groups[i].MinAvailable = &d.minAvailable
		}
		for _, c := range groups[i].CliqueNames {
			inGroup[c] = true
		}
	}
	n := &names{
		Replicas:                         []pcsReplica{},
		Role:                             common.GeneratePodRoleName(pcs.Name),
		RoleBinding:                      common.GeneratePodRoleBindingName(pcs.Name),
		ServiceAccount:                   common.GeneratePodServiceAccountName(pcs.Name),
		InitContainerSATokenSecret:       common.GenerateInitContainerSATokenSecretName(pcs.Name),
		LegacyInitContainerSATokenSecret: common.GenerateLegacyInitContainerSATokenSecretName(pcs.Name),
		DefaultLabels:                    common.GetDefaultLabelsForPodCliqueSetManagedResources(pcs.Name),
		ComponentLabels: map[string]string{
			"Service":                 common.LabelComponentNamePodCliqueSetReplicaHeadlessService,
			"Role":                    common.LabelComponentNamePodRole,
			"RoleBinding":             common.LabelComponentNamePodRoleBinding,
			"ServiceAccount":          common.LabelComponentNamePodServiceAccount,
			"Secret":                  common.LabelComponentNameServiceAccountTokenSecret,
			"PodCliqueScalingGroup":   common.LabelComponentNamePodCliqueScalingGroup,
			"HorizontalPodAutoscaler": common.LabelComponentNameHorizontalPodAutoscaler,
			"PodGang":                 common.LabelComponentNamePodGang,
			"PodClique":               common.LabelComponentNamePodCliqueSetPodClique,
			"PodCliqueInGroup":        common.LabelComponentNamePodCliqueScalingGroupPodClique,
			"ResourceClaim":           common.LabelComponentNameResourceClaim,
		},
		LabelKeys: map[string]string{
			"appName": common.LabelAppNameKey, "managedBy": common.LabelManagedByKey, "partOf": common.LabelPartOfKey,
			"component": common.LabelComponentKey, "podClique": common.LabelPodClique, "podGang": common.LabelPodGang,
			"basePodGang": common.LabelBasePodGang, "pcsReplicaIndex": common.LabelPodCliqueSetReplicaIndex,
			"pcsg": common.LabelPodCliqueScalingGroup, "pcsgReplicaIndex": common.LabelPodCliqueScalingGroupReplicaIndex,
			"podIndex": common.LabelPodCliquePodIndex, "podTemplateHash": common.LabelPodTemplateHash,
			"schedulerName": common.LabelSchedulerName, "managedByValue": common.LabelManagedByValue,
		},
	}
	for r := 0; r < replicas; r++ {
		owner := common.ResourceNameReplica{Name: pcs.Name, Replica: r}
		rep := pcsReplica{
			Index:                  r,
			HeadlessService:        common.GenerateHeadlessServiceName(owner),
			HeadlessServiceAddress: common.GenerateHeadlessServiceAddress(owner, pcs.Namespace),
			BasePodGang:            common.GenerateBasePodGangName(owner),
			PodCliques:             []clique{},
			ScalingGroups:          []scalingGroup{},
		}
		for _, c := range pcs.Spec.Template.Cliques {
			if c == nil || inGroup[c.Name] {
				continue
			}
			rep.PodCliques = append(rep.PodCliques, clique{
				Name: common.GeneratePodCliqueName(owner, c.Name), Template: c.Name, Replica: r,
				PodGang: common.GeneratePodGangNameForPodCliqueOwnedByPodCliqueSet(pcs, r),
			})
		}
		for i := range groups {
			g := &groups[i]
			sgReplicas, err := bounded("replicas of scaling group "+g.Name, *g.Replicas)
			if err != nil {
				return nil, err
			}
			minAvailable, err := bounded("minAvailable of scaling group "+g.Name, *g.MinAvailable)
			if err != nil {
				return nil, err
			}
			fqn := common.GeneratePodCliqueScalingGroupName(owner, g.Name)
			pcsg := &corev1alpha1.PodCliqueScalingGroup{}
			pcsg.Name = fqn
			pcsg.Spec.Replicas = *g.Replicas
			pcsg.Spec.MinAvailable = g.MinAvailable
			sg := scalingGroup{Name: fqn, Config: g.Name, Replicas: sgReplicas, MinAvailable: minAvailable,
				PodCliques: []clique{}, ScaledPodGangs: []string{}}
			for j := 0; j < sgReplicas; j++ {
				for _, cn := range g.CliqueNames {
					sg.PodCliques = append(sg.PodCliques, clique{
						Name:     common.GeneratePodCliqueName(common.ResourceNameReplica{Name: fqn, Replica: j}, cn),
						Template: cn, Replica: j,
						PodGang: common.GeneratePodGangNameForPodCliqueOwnedByPCSG(pcs, r, pcsg, j),
					})
				}
				if j >= minAvailable {
					sg.ScaledPodGangs = append(sg.ScaledPodGangs, common.CreatePodGangNameFromPCSGFQN(fqn, j-minAvailable))
				}
			}
			rep.ScalingGroups = append(rep.ScalingGroups, sg)
		}
		n.Replicas = append(n.Replicas, rep)
	}
	return n, nil
}
