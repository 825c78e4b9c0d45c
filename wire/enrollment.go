package wire

import (
	"time"

	"github.com/google/uuid"
)

// DataPlaneEnrollmentRequest is what a remote data plane sends on start:
// its name and its own public key (base64), which the control plane seals
// provider secrets to once an instance admin approves it.
type DataPlaneEnrollmentRequest struct {
	ID        string `json:"id" jsonschema:"minLength=1,maxLength=100"`
	PublicKey string `json:"public_key" jsonschema:"minLength=1,maxLength=4096"`
}

// EnrollmentOrganization names an organization an enrollment covers.
type EnrollmentOrganization struct {
	ID   uuid.UUID `json:"id"`
	Slug string    `json:"slug"`
}

// DataPlaneEnrollment is a data plane's enrollment. Fingerprint is what an
// admin compares with the one the data plane logs before approving it.
type DataPlaneEnrollment struct {
	DataPlaneID   string                   `json:"data_plane_id"`
	Fingerprint   string                   `json:"fingerprint"`
	PublicKey     string                   `json:"public_key"`
	Status        string                   `json:"status" jsonschema:"enum=pending,enum=approved,enum=revoked"`
	Organizations []EnrollmentOrganization `json:"organizations"`
	RequestedAt   time.Time                `json:"requested_at"`
	ApprovedAt    *time.Time               `json:"approved_at"`
	RevokedAt     *time.Time               `json:"revoked_at"`
	// PlatformCredentials: the data plane receives the organizations'
	// platform-scope (instance-wide) provider credentials as well. False
	// for new enrollments.
	PlatformCredentials bool `json:"platform_credentials"`
}

// DataPlaneEnrollmentApprove enrolls a data plane for exactly these
// organizations (UUIDs or slugs), replacing any earlier set. Fingerprint,
// when given, must match the data plane's key: approve what you checked.
// PlatformCredentials, when given, says whether the data plane receives
// platform-scope credentials; absent keeps the enrollment's setting (false
// for a new one).
type DataPlaneEnrollmentApprove struct {
	Organizations       []string `json:"organizations" jsonschema:"minItems=1,maxItems=1000"`
	Fingerprint         *string  `json:"fingerprint,omitempty"`
	PlatformCredentials *bool    `json:"platform_credentials,omitempty"`
}

// Enrollment states.
var EnrollmentStatuses = []string{"pending", "approved", "revoked"}
