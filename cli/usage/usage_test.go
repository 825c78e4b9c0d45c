package usage

import (
	"testing"
	"time"

	"github.com/gw-gateway/gw/cli/cmdutil"
	"github.com/gw-gateway/gw/cli/cmdutil/cmdtest"
)

func TestUsageDashboardFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdDashboard, []cmdtest.FlagCase[DashboardOptions]{
		{Name: "defaults", Check: func(t *testing.T, o *DashboardOptions) {
			if o.Period != "30d" || o.Timezone != "" || o.WorkspaceFilter != "" || o.Refresh != 30*time.Second {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "all", Args: []string{"--period", "month_to_date", "--timezone", "Europe/Paris", "--workspace-filter", "prod", "--refresh", "2m"},
			Check: func(t *testing.T, o *DashboardOptions) {
				if o.Period != "month_to_date" || o.Timezone != "Europe/Paris" || o.WorkspaceFilter != "prod" || o.Refresh != 2*time.Minute {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "refresh off", Args: []string{"--refresh", "0"}, Check: func(t *testing.T, o *DashboardOptions) {
			if o.Refresh != 0 {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "custom is for reports", Args: []string{"--period", "custom"}, WantErr: "--period must be one of today, 7d, 30d, month_to_date"},
		{Name: "bad period", Args: []string{"--period", "1y"}, WantErr: "--period must be one of"},
		{Name: "refresh too fast", Args: []string{"--refresh", "10ms"}, WantErr: "--refresh must be 0 (off) or at least 1s"},
		{Name: "negative refresh", Args: []string{"--refresh", "-5s"}, WantErr: "--refresh"},
		{Name: "refresh not a duration", Args: []string{"--refresh", "often"}, WantErr: "invalid argument"},
		{Name: "positional", Args: []string{"x"}, WantErr: "unknown command"},
	})
}

func TestUsageReportFlags(t *testing.T) {
	cmdtest.RunFlagCases(t, NewCmdReport, []cmdtest.FlagCase[ReportOptions]{
		{Name: "defaults", Check: func(t *testing.T, o *ReportOptions) {
			if o.Period != "30d" || o.Output.Format != cmdutil.OutputTable || o.By != "" || o.StartDate != "" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "filters", Args: []string{"--period", "7d", "--timezone", "America/New_York", "--model", "openai/gpt-4o",
			"--provider", "openai", "--owner", "00000000-0000-4000-8000-000000000001", "--management-key", "00000000-0000-4000-8000-000000000002", "--credential", "00000000-0000-4000-8000-000000000003", "--workspace-filter", "w1", "-o", "yaml"},
			Check: func(t *testing.T, o *ReportOptions) {
				q := o.query("w-id")
				if q.Period != "7d" || q.Timezone != "America/New_York" || q.ModelID != "openai/gpt-4o" || q.ProviderID != "openai" ||
					q.OwnerID != "00000000-0000-4000-8000-000000000001" || q.ManagementKeyID != "00000000-0000-4000-8000-000000000002" || q.ProviderCredentialID != "00000000-0000-4000-8000-000000000003" || q.WorkspaceID != "w-id" ||
					o.WorkspaceFilter != "w1" || o.Output.Format != cmdutil.OutputYAML {
					t.Errorf("%+v → %+v", o, q)
				}
			}},
		{Name: "json", Args: []string{"--json"}, Check: func(t *testing.T, o *ReportOptions) {
			if o.Output.Format != cmdutil.OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "json agrees with -o json", Args: []string{"--json", "-o", "json"}, Check: func(t *testing.T, o *ReportOptions) {
			if o.Output.Format != cmdutil.OutputJSON {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "json against yaml", Args: []string{"--json", "-o", "yaml"}, WantErr: "--json and --output yaml disagree"},
		{Name: "dates imply custom", Args: []string{"--start-date", "2026-04-01", "--end-date", "2026-04-30"},
			Check: func(t *testing.T, o *ReportOptions) {
				q := o.query("")
				if q.Period != "custom" || q.StartDate != "2026-04-01" || q.EndDate != "2026-04-30" {
					t.Errorf("%+v", q)
				}
			}},
		{Name: "explicit custom", Args: []string{"--period", "custom", "--start-date", "2026-04-01", "--end-date", "2026-04-01"},
			Check: func(t *testing.T, o *ReportOptions) {
				if o.Period != "custom" {
					t.Errorf("%+v", o)
				}
			}},
		{Name: "breakdown", Args: []string{"--by", "inference_key"}, Check: func(t *testing.T, o *ReportOptions) {
			if o.By != "inference_key" {
				t.Errorf("%+v", o)
			}
		}},
		{Name: "dates with another period", Args: []string{"--period", "7d", "--start-date", "2026-04-01", "--end-date", "2026-04-30"}, WantErr: "drop --period 7d"},
		{Name: "custom without dates", Args: []string{"--period", "custom"}, WantErr: "needs both --start-date and --end-date"},
		{Name: "half a range", Args: []string{"--start-date", "2026-04-01"}, WantErr: "needs both"},
		{Name: "bad date", Args: []string{"--start-date", "04/01/2026", "--end-date", "2026-04-30"}, WantErr: "--start-date must be YYYY-MM-DD"},
		{Name: "backwards range", Args: []string{"--start-date", "2026-04-30", "--end-date", "2026-04-01"}, WantErr: "is before --start-date"},
		{Name: "bad period", Args: []string{"--period", "yesterday"}, WantErr: "--period must be one of today, 7d, 30d, month_to_date, custom"},
		{Name: "bad by", Args: []string{"--by", "region"}, WantErr: "--by must be one of model, requested_model, provider, owner, inference_key, workspace"},
		{Name: "bad output", Args: []string{"-o", "csv"}, WantErr: cmdtest.BadOutput},
		{Name: "positional", Args: []string{"x"}, WantErr: "unknown command"},
	})
}
