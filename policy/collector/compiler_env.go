package collector

import (
	"fmt"

	"github.com/google/cel-go/cel"

	"k8s.io/apimachinery/pkg/util/version"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// newEnv builds the collector CEL environment: Kubernetes' base environment with the collector
// variables declared (obj and returned.status typed when their DeclType is not nil), for new
// expressions or for stored ones (see WithNewExpressions).
func newEnv(obj, status *apiservercel.DeclType, newExprs bool) (*cel.Env, error) {
	inventory := apiservercel.NewObjectType("statusfold.Inventory", map[string]*apiservercel.DeclField{
		fieldName: apiservercel.NewDeclField(fieldName, apiservercel.StringType, true, nil, nil),
		fieldLabels: apiservercel.NewDeclField(fieldLabels,
			apiservercel.NewMapType(apiservercel.StringType, apiservercel.StringType, inventoryLabelsMax), true, nil, nil),
	})
	declTypes := []*apiservercel.DeclType{inventory}
	objType := apiservercel.DynType
	if obj != nil {
		objType = obj.MaybeAssignTypeName("statusfold.Object")
		declTypes = append(declTypes, objType)
	}
	statusType := apiservercel.DynType
	if status != nil {
		statusType = status.MaybeAssignTypeName("statusfold.ReturnedStatus")
		declTypes = append(declTypes, statusType)
	}
	returned := apiservercel.NewObjectType("statusfold.Returned", map[string]*apiservercel.DeclField{
		fieldStatus: apiservercel.NewDeclField(fieldStatus, statusType, true, nil, nil),
	})
	propagation := apiservercel.NewObjectType("statusfold.Propagation", map[string]*apiservercel.DeclField{
		fieldLastReturnedUpdateTimestamp: apiservercel.NewDeclField(fieldLastReturnedUpdateTimestamp,
			apiservercel.TimestampType, false, nil, nil),
	})
	declTypes = append(declTypes, returned, propagation)

	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	set, err := base.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable(varInventory, inventory.CelType()),
			cel.Variable(varObj, objType.CelType()),
			cel.Variable(varReturned, returned.CelType()),
			cel.Variable(varPropagation, propagation.CelType()),
		},
		DeclTypes: declTypes,
	})
	if err != nil {
		return nil, fmt.Errorf("building the collector CEL environment: %w", err)
	}
	if newExprs {
		return set.NewExpressionsEnv(), nil
	}
	return set.StoredExpressionsEnv(), nil
}
