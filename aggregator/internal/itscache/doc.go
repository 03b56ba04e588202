// Package itscache holds what the reconciler keeps of the ITS: the ITS cache's informers, whose
// WorkStatus lists stream item by item (ITSInformers, itslist.go), the cache's transform
// (Transform, TrimITSObject), which decodes each WorkStatus's reported status once — or, over
// the size cap, keeps its size only (OversizeError) — and interns its repeated strings (cachedstatus.go; read back with WorkStatusStatus and LastWrite), and the WEC index
// (WECIndex), which finds an object's WorkStatuses by WEC and which WECs changed since its last
// evaluation.
//
// It is a layer 1 mechanism of the aggregator: it imports internal/rules, the API types,
// client-go and the engines' compactjson.
package itscache
