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

// A vertex credential's batch prediction settings read from --setting and
// show in the settings cell.
func TestParseVertexBatchSettings(t *testing.T) {
	s, err := parseSettings([]string{"location=us-east5", "batch_gcs_uri=gs://gw-batches/jobs/", "batch_gcs_endpoint=http://127.0.0.1:4443", "batches=native"})
	if err != nil || s.BatchGCSURI != "gs://gw-batches/jobs/" || s.BatchGCSEndpoint != "http://127.0.0.1:4443" || s.Batches != "native" {
		t.Fatalf("%+v %v", s, err)
	}
	if c := settingsCell(s); c != "location=us-east5 batches=native batch_gcs_uri=gs://gw-batches/jobs/ batch_gcs_endpoint=http://127.0.0.1:4443" {
		t.Fatalf("cell %q", c)
	}
}
