package credentials

import (
	"strings"
	"testing"
)

func TestParseSettingsRefusesWhatItCannotRead(t *testing.T) {
	for pair, want := range map[string]string{"region": "want KEY=VALUE", "zone=a": "unknown setting", "region=": "want KEY=VALUE"} {
		if _, err := parseSettings([]string{pair}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", pair, err, want)
		}
	}
	if s, err := parseSettings(nil); s != nil || err != nil {
		t.Errorf("no settings: %v %v", s, err)
	}
}
