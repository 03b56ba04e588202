// Package pacing paces and coalesces the reconciler's work: the Pacer (the adaptive delay between
// two writes of one key, docs/controller.md "Pacing writes") and CoalescingQueue, the
// controllers' rate-limited work queue that coalesces bursts per key and, when given a Pacer,
// waits out its delay, and FairQueue, the order of a queue's waiting keys by fair queuing across
// flows (docs/controller.md "Fairness across WECs"). All are generic over the key.
//
// It is a layer 1 mechanism of the aggregator: it imports libraries only (client-go's work
// queue, apimachinery's errors), no other package of the aggregator.
package pacing
