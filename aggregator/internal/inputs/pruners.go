package inputs

import (
	"sync"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/classifier"
)

// PrunerCache holds one compiled classifier.Pruner per ContentClassifier resource version.
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
	if e, ok := p.m[cc.Name]; ok && e.rv == cc.ResourceVersion {
		return e.pruner
	}
	e := prunerEntry{rv: cc.ResourceVersion, pruner: classifier.NewPruner(cc)}
	p.m[cc.Name] = e
	return e.pruner
}

func (p *PrunerCache) Forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, name)
}
