package rules

import "testing"

func TestDecideReturn(t *testing.T) {
	nothing := func(label bool) ReturnDecision { return ReturnDecision{Mode: ReturnNothing, Label: label} }
	copyWEC := ReturnDecision{Mode: ReturnCopy, Label: true}
	aggregate := ReturnDecision{Mode: ReturnAggregate, Label: true}
	cases := []struct {
		name string
		in   ReturnInput
		want ReturnDecision
	}{
		{"singleton, 1 WEC: copy", ReturnInput{Singleton: true, Qualified: 1}, copyWEC},
		{"singleton, 0 WECs: nothing", ReturnInput{Singleton: true, Qualified: 0}, nothing(true)},
		{"singleton, 2 WECs: nothing", ReturnInput{Singleton: true, Qualified: 2}, nothing(true)},
		{"multi, 1 WEC: copy", ReturnInput{Multi: true, Qualified: 1}, copyWEC},
		{"multi, 2 WECs: aggregate", ReturnInput{Multi: true, Qualified: 2}, aggregate},
		{"multi, 0 WECs: nothing", ReturnInput{Multi: true, Qualified: 0}, nothing(true)},
		{"both, 1 WEC: copy", ReturnInput{Singleton: true, Multi: true, Qualified: 1}, copyWEC},
		{"both, 3 WECs: aggregate", ReturnInput{Singleton: true, Multi: true, Qualified: 3}, aggregate},
		{"neither, 0 WECs: nothing, no label", ReturnInput{Qualified: 0}, nothing(false)},
		{"neither, 1 WEC: nothing, no label", ReturnInput{Qualified: 1}, nothing(false)},
		{"neither, 5 WECs: nothing, no label", ReturnInput{Qualified: 5}, nothing(false)},
		// The TestAggregatedAPIDown flake: the object read under a resource that no Binding lists
		// while its Binding lists it, with a return, under another resource that serves it.
		{"neither, returned under another resource: leave", ReturnInput{ReturnedElsewhere: true}, ReturnDecision{Mode: ReturnLeave}},
		{"singleton here, returned elsewhere too: copy", ReturnInput{Singleton: true, Qualified: 1, ReturnedElsewhere: true}, copyWEC},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideReturn(tc.in)
			if got.Mode != tc.want.Mode || got.Label != tc.want.Label {
				t.Errorf("DecideReturn(%+v) = %s label=%v (%s), want %s label=%v", tc.in, got.Mode, got.Label, got.Reason, tc.want.Mode, tc.want.Label)
			}
		})
	}
}

// TestReturnModeLabel: KubeStellar's label for a copied status is singletonstatus, for an
// aggregate multiwecstatus, and none when nothing is returned.
func TestReturnModeLabel(t *testing.T) {
	for mode, want := range map[ReturnMode]string{
		ReturnCopy:      "managed-by.kubestellar.io/singletonstatus",
		ReturnAggregate: "managed-by.kubestellar.io/multiwecstatus",
		ReturnNothing:   "",
		ReturnLeave:     "",
	} {
		if got := mode.Label(); got != want {
			t.Errorf("%s.Label() = %q, want %q", mode, got, want)
		}
	}
}
