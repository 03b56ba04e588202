package inputs

import (
	"strconv"
	"sync"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/classifier"
)

// PrunerCache holds one compiled classifier.Pruner per ContentClassifier spec (ClassifierVersion).
type PrunerCache struct {
	mu sync.Mutex
	m  map[string]prunerEntry
}

type prunerEntry struct {
	rv     string
	pruner *classifier.Pruner
}

func NewPrunerCache() *PrunerCache { return &PrunerCache{m: map[string]prunerEntry{}} }

func (p *PrunerCache) get(cc *controlv1alpha1.ContentClassifier) *classifier.Pruner {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := ClassifierVersion(cc)
	if e, ok := p.m[cc.Name]; ok && e.rv == v {
		return e.pruner
	}
	e := prunerEntry{rv: v, pruner: classifier.NewPruner(cc)}
	p.m[cc.Name] = e
	return e.pruner
}

// ClassifierVersion identifies a ContentClassifier's spec: its UID and generation. A write of its
// status (the kinds reconciler's) changes its resourceVersion, not the pruner, and so neither the
// reports pruned with it nor which rows a Table must re-read.
func ClassifierVersion(cc *controlv1alpha1.ContentClassifier) string {
	return string(cc.UID) + "/" + strconv.FormatInt(cc.Generation, 10)
}

// Forget drops the pruner of the ContentClassifier name.
func (p *PrunerCache) Forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, name)
}
