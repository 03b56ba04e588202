package itscache

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	kjson "sigs.k8s.io/json"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// itsInformers returns the ITS cache's informer constructor (cache.Options.NewInformer): client-go's
// shared informer, whose lists go through trimmingLister; WorkStatus lists are read from the
// apiserver by ws (workStatusLister) item by item. Listed items go through trim, which must be the
// cache's transform.
func ITSInformers(cfg *rest.Config, scheme *runtime.Scheme, trim Transform) (func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer, error) {
	ws, err := newWorkStatusLister(cfg, scheme, trim)
	if err != nil {
		return nil, err
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		l := trimmingLister{lw: toolscache.ToListerWatcherWithContext(lw), trim: trim}
		if _, ok := obj.(*controlv1alpha1.WorkStatus); ok {
			l.stream = ws.list
			// No namespace index: nothing lists WorkStatuses from the ITS cache by namespace
			// (evaluations find them by object, through the WECIndex), and the index held an entry
			// per WorkStatus (≈4.5 MB at 100,000). A namespaced List would fail with
			// controller-runtime's "index does not exist" error, not return less.
			indexers = maps.Clone(indexers)
			delete(indexers, toolscache.NamespaceIndex)
		}
		return toolscache.NewSharedIndexInformer(l, obj, resync, indexers)
	}, nil
}

// trimmingLister applies the cache's transform (TrimITSObject) to every listed item as the list
// arrives, instead of after the reflector has gathered the whole list: client-go's reflector
// holds every page of its initial list before its store applies the transform, and it asks for
// resourceVersion "0", which the apiserver's watch cache answers in one response whatever the
// limit — at 100,000 WorkStatuses, the manager held each WorkStatus raw (its status JSON and
// managed fields), the response body besides, and then trimmed copies: the peak of its memory.
//
// WorkStatus lists (stream set) are decoded item by item as the response body arrives, each item
// trimmed at once, so at most one raw item is held, and the list keeps the watch cache's single
// response (the cheapest list for the apiserver). Other lists at resourceVersion "0" are asked
// for as consistent lists ("": the newest data, which the watch cache serves in pages), each
// page trimmed as it arrives. The store's transform then finds each item already transformed.
type trimmingLister struct {
	lw     toolscache.ListerWatcherWithContext
	stream func(context.Context, metav1.ListOptions) (runtime.Object, error)
	trim   Transform
}

func (t trimmingLister) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if t.stream != nil {
		return t.stream(ctx, opts)
	}
	if opts.ResourceVersion == "0" && opts.ResourceVersionMatch == "" && opts.Limit > 0 && opts.Continue == "" {
		opts.ResourceVersion = ""
	}
	list, err := t.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := meta.EachListItem(list, func(o runtime.Object) error {
		_, err := t.trim.Trim(o)
		return err
	}); err != nil {
		return nil, err
	}
	return list, nil
}

func (t trimmingLister) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return t.lw.WatchWithContext(ctx, opts)
}

// List and Watch make it a ListerWatcher, as NewSharedIndexInformer takes; client-go calls the
// context forms.
func (t trimmingLister) List(opts metav1.ListOptions) (runtime.Object, error) {
	return t.ListWithContext(context.Background(), opts)
}

func (t trimmingLister) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return t.WatchWithContext(context.Background(), opts)
}

// workStatusLister lists WorkStatuses (every namespace: the ITS cache is cluster-wide, Setup
// restricts it by label only) as JSON and decodes the response as it streams in
// (decodeWorkStatusList).
type workStatusLister struct {
	rc   rest.Interface
	trim Transform
}

func newWorkStatusLister(cfg *rest.Config, scheme *runtime.Scheme, trim Transform) (*workStatusLister, error) {
	c := rest.CopyConfig(cfg)
	gv := controlv1alpha1.GroupVersion
	c.GroupVersion, c.APIPath = &gv, "/apis"
	c.ContentType, c.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion() // decodes error Statuses
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("aggregator: WorkStatus list client: %w", err)
	}
	return &workStatusLister{rc: rc, trim: trim}, nil
}

// list asks what the reflector asks (resourceVersion, limit, continue, selectors), as a
// paged-list client would: a response with a continue token is returned with it, and the
// reflector's pager asks for the next page.
func (l *workStatusLister) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	body, err := l.rc.Get().Resource(controlv1alpha1.ResourceWorkStatuses).
		VersionedParams(&opts, metav1.ParameterCodec).
		SetHeader("Accept", runtime.ContentTypeJSON).
		Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	list := &workStatusPtrList{}
	if err := decodeWorkStatusList(body, list, func(ws *controlv1alpha1.WorkStatus) {
		_, _ = l.trim.Trim(ws) // never fails for a WorkStatus
	}); err != nil {
		return nil, fmt.Errorf("aggregator: listing WorkStatuses: %w", err)
	}
	return list, nil
}

// workStatusPtrList is a WorkStatus list whose items are allocated one by one, which client-go's
// reflector takes as they are (meta.ExtractListWithAlloc). A WorkStatusList holds its items in
// one array, which grows while the list is decoded (100,000 × 448 bytes at the default load-test
// size, and its earlier, smaller copies), and from which the reflector then copies every item into
// an allocation of its own: both were garbage at the end of the initial sync, when the manager's
// memory peaks.
type workStatusPtrList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*controlv1alpha1.WorkStatus
}

func (l *workStatusPtrList) DeepCopyObject() runtime.Object {
	c := &workStatusPtrList{TypeMeta: l.TypeMeta, Items: make([]*controlv1alpha1.WorkStatus, len(l.Items))}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	for i, ws := range l.Items {
		c.Items[i] = ws.DeepCopy()
	}
	return c
}

// decodeWorkStatusList decodes a WorkStatusList's JSON from r into list, one item at a time:
// each item is decoded as client-go decodes a typed object (case-sensitive field names, integers
// kept as integers) and passed to each before the next is read, so only the item being decoded
// is held raw. A scanner (jsonScanner) finds where each value ends; the decoder validates it.
// Top-level fields other than apiVersion, kind, metadata and items are skipped unread, so
// invalid JSON inside one of them is not noticed (client-go's decoding of the whole list would
// fail on it).
func decodeWorkStatusList(r io.Reader, list *workStatusPtrList, each func(*controlv1alpha1.WorkStatus)) error {
	s := &jsonScanner{r: r, buf: make([]byte, 0, 64<<10)}
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.accept('}') {
		return s.end()
	}
	for {
		key, err := s.value()
		if err != nil {
			return err
		}
		var name string
		if err := json.Unmarshal(key, &name); err != nil {
			return fmt.Errorf("a field name: %w", err)
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if name == "items" {
			err = decodeItems(s, list, each)
		} else {
			var v []byte
			if v, err = s.value(); err == nil {
				switch name {
				case "apiVersion":
					err = json.Unmarshal(v, &list.APIVersion)
				case "kind":
					err = json.Unmarshal(v, &list.Kind)
				case "metadata":
					err = kjson.UnmarshalCaseSensitivePreserveInts(v, &list.ListMeta)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("field %q: %w", name, err)
		}
		if s.accept('}') {
			return s.end()
		}
		if err := s.expect(','); err != nil {
			return err
		}
	}
}

func decodeItems(s *jsonScanner, list *workStatusPtrList, each func(*controlv1alpha1.WorkStatus)) error {
	if s.next('n') { // null
		v, err := s.value()
		if err == nil && string(v) != "null" {
			err = fmt.Errorf("not a list: %.20s", v)
		}
		return err
	}
	if err := s.expect('['); err != nil {
		return fmt.Errorf("not a list: %w", err)
	}
	list.Items = nil // a repeated "items" replaces the list, as encoding/json does
	if s.accept(']') {
		return nil
	}
	for i := 0; ; i++ {
		v, err := s.value()
		if err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		ws := &controlv1alpha1.WorkStatus{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(v, ws); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		list.Items = append(list.Items, ws)
		each(ws)
		if s.accept(']') {
			return nil
		}
		if err := s.expect(','); err != nil {
			return fmt.Errorf("after item %d: %w", i, err)
		}
	}
}

// jsonScanner reads JSON from r and splits it into values without decoding them: value returns
// the bytes of the next whole value (an object, list, string or scalar; valid until the next
// call), found by counting brackets outside strings. It checks only what it needs to find a
// value's end; the decoder that is given the value checks the rest.
type jsonScanner struct {
	r   io.Reader
	buf []byte // unread input is buf[off:]
	off int
	err error // from r; io.EOF once it is read to the end
}

// fill reads more input onto buf (moving the unread part to its start first). It reports
// whether it got any.
func (s *jsonScanner) fill() bool {
	if s.err != nil {
		return false
	}
	if s.off > 0 {
		s.buf = s.buf[:copy(s.buf, s.buf[s.off:])]
		s.off = 0
	}
	if len(s.buf) == cap(s.buf) {
		s.buf = append(s.buf, 0)[:len(s.buf)] // grow
	}
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	if err != nil {
		s.err = err
	}
	return n > 0 || err == nil
}

// skipSpace skips white space and reports whether input is left.
func (s *jsonScanner) skipSpace() bool {
	for {
		for ; s.off < len(s.buf); s.off++ {
			switch s.buf[s.off] {
			case ' ', '\t', '\n', '\r':
			default:
				return true
			}
		}
		if !s.fill() {
			return false
		}
	}
}

// next reports whether the next character, after white space, is c (without reading it).
func (s *jsonScanner) next(c byte) bool {
	return s.skipSpace() && s.buf[s.off] == c
}

// accept reads the next character, after white space, if it is c, and reports whether it was.
func (s *jsonScanner) accept(c byte) bool {
	if s.next(c) {
		s.off++
		return true
	}
	return false
}

// expect reads the next character, after white space, and fails unless it is c.
func (s *jsonScanner) expect(c byte) error {
	if !s.skipSpace() {
		return s.eof()
	}
	if got := s.buf[s.off]; got != c {
		return fmt.Errorf("invalid character %q, want %q", got, c)
	}
	s.off++
	return nil
}

// end fails unless only white space is left.
func (s *jsonScanner) end() error {
	if s.skipSpace() {
		return fmt.Errorf("invalid character %q after the top-level value", s.buf[s.off])
	}
	if s.err != io.EOF {
		return s.err
	}
	return nil
}

func (s *jsonScanner) eof() error {
	if s.err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return s.err
}

// value returns the next value's bytes, after white space.
func (s *jsonScanner) value() ([]byte, error) {
	if !s.skipSpace() {
		return nil, s.eof()
	}
	start, i := s.off, s.off // i: the next byte to look at
	depth, inString, escaped := 0, false, false
	for {
		for ; i < len(s.buf); i++ {
			c := s.buf[i]
			if inString {
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
					if depth == 0 {
						s.off = i + 1
						return s.buf[start:s.off], nil
					}
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				if depth == 0 { // ends a scalar
					s.off = i
					return s.buf[start:i], nil
				}
				if depth--; depth == 0 {
					s.off = i + 1
					return s.buf[start:s.off], nil
				}
			case ',', ' ', '\t', '\n', '\r':
				if depth == 0 { // ends a scalar
					s.off = i
					return s.buf[start:i], nil
				}
			}
		}
		i -= start // fill moves the unread input to buf's start
		if s.off = start; !s.fill() {
			if depth == 0 && !inString && i > 0 && s.err == io.EOF { // a scalar at the end of the input
				s.off = len(s.buf)
				return s.buf[:s.off], nil
			}
			return nil, s.eof()
		}
		start, i = s.off, s.off+i
	}
}
