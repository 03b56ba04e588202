package objects

import (
	"errors"
	"testing"
	"testing/synctest"
)

// TestSideBySidePanicWaitsForTheStatusReturn: when the CombinedStatus side panics, the panic
// leaves only once the status return running beside it has ended.
func TestSideBySidePanicWaitsForTheStatusReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var finished bool
		result := make(chan bool, 1) // whether the status return had ended when the panic left
		go func() {
			defer func() {
				if recover() == nil {
					t.Error("the CombinedStatus side's panic was not raised")
				}
				result <- finished
			}()
			sideBySide(func() (bool, error) { panic("boom") }, func() (bool, error) {
				<-release
				finished = true
				return true, nil
			})
		}()
		synctest.Wait() // every goroutine of the test blocked: the status return waits for release
		select {
		case <-result:
			t.Fatal("the panic left while the status return still ran")
		default:
		}
		close(release)
		if !<-result {
			t.Error("the panic left before the status return ended")
		}
	})
}

// TestSideBySideResults: both results come back; a panic of the status return is raised after the
// CombinedStatus side ended.
func TestSideBySideResults(t *testing.T) {
	csErr := errors.New("cs failed")
	wroteCS, gotCSErr, wroteStatus, statusErr := sideBySide(
		func() (bool, error) { return true, csErr },
		func() (bool, error) { return true, nil })
	if !wroteCS || !errors.Is(gotCSErr, csErr) || !wroteStatus || statusErr != nil {
		t.Errorf("got %v %v %v %v", wroteCS, gotCSErr, wroteStatus, statusErr)
	}
	combinedEnded := false
	func() {
		defer func() {
			if p := recover(); p == nil || !combinedEnded {
				t.Errorf("status return's panic: recovered %v, CombinedStatus side ended %v", p, combinedEnded)
			}
		}()
		sideBySide(func() (bool, error) { combinedEnded = true; return false, nil },
			func() (bool, error) { panic("in the status return") })
	}()
}
