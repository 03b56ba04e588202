package inputs

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/index"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// One stored object can be served by more than one resource: an aggregated API server that
// serves a CRD's objects under its own group, or a resource that two API groups serve. statusfold
// writes every return under one field manager, so a return written through one resource is on
// the object under all of them. An evaluation under a resource that no Binding asks a return for
// must not remove a return that another resource's Binding asks for — e.g. the start-up sweep of
// labelled objects (fanout.EnqueueLabelled) finding the object under the CRD's group while its Binding
// lists it under the aggregated group. Whether that is so is read, never assumed: a candidate
// that cannot be read (its group's server is down, its watch has not synced) makes the
// evaluation fail and retry, and nothing is removed meanwhile (docs/controller.md "Failures").

// ReturnedElsewhere reports whether the evaluated object is bound, under another resource, by
// a clause that asks for a return (ReturnInput.ReturnedElsewhere). The status returner asks it
// only before removing a return. When it cannot tell, an object read as an orphan is read as one
// again at the retry.
func (g *Gatherer) ReturnedElsewhere(ctx context.Context, in *Object) (bool, error) {
	elsewhere, err := g.boundElsewhere(ctx, in)
	if err != nil && in.orphan {
		g.orphans.Store(in.Key, struct{}{}) // read again at the retry
	}
	return elsewhere, err
}

func (g *Gatherer) boundElsewhere(ctx context.Context, in *Object) (bool, error) {
	var bl controlv1alpha1.BindingList
	if err := g.cache.List(ctx, &bl, client.MatchingFields{index.IndexBindingNames: index.NameKey(in.Key.Namespace, in.Key.Name)}, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	var candidates []rules.ObjectKey
	for i := range bl.Items {
		for _, bo := range rules.BoundObjects(&bl.Items[i].Spec) {
			k := bo.Key()
			m := bo.Modulation
			if bo.Namespace == in.Key.Namespace && bo.Name == in.Key.Name && k != in.Key &&
				(m.WantSingletonReportedState || m.WantMultiWECReportedState) && !slices.Contains(candidates, k) {
				candidates = append(candidates, k)
			}
		}
	}
	return sameObjectBound(in.Obj.GetUID(), candidates, func(k rules.ObjectKey) (types.UID, error) { return g.readUID(ctx, k) })
}

// sameObjectBound reports whether one of the candidates is the object with the given UID. A
// candidate that does not exist is not it; one that cannot be read for any other reason may be
// it, so the answer is unknown: an error.
func sameObjectBound(uid types.UID, candidates []rules.ObjectKey, readUID func(rules.ObjectKey) (types.UID, error)) (bool, error) {
	for _, k := range candidates {
		got, err := readUID(k)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("%s is bound with a status return and may be this object under another resource; not removing the return: %w", k, err)
		}
		if got == uid {
			return true, nil
		}
	}
	return false, nil
}

// readUID reads the UID of the object at k: from the cache when its resource is watched, else
// from the apiserver. A resource that does not exist gives NotFound; one whose discovery fails
// gives errUncertain.
func (g *Gatherer) readUID(ctx context.Context, k rules.ObjectKey) (types.UID, error) {
	info, known, err := g.catalog.Lookup(k.GroupResource())
	if err != nil {
		return "", err
	}
	if !known {
		return "", apierrors.NewNotFound(k.GroupResource(), k.Name)
	}
	reader := g.live
	var opts []client.GetOption
	if g.watches.Watching(info, k.Namespace) {
		reader, opts = g.watches.Reader(), []client.GetOption{client.UnsafeDisableDeepCopy}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.GVK())
	if err := reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, u, opts...); err != nil {
		return "", err
	}
	return u.GetUID(), nil
}
