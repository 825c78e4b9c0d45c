package scim

// The discovery documents (RFC 7644 §4): what gw supports, told to the
// provisioning client.

// MaxResults is the most resources one list answer holds.
const MaxResults = 1000

// MaxOperations is the most operations one PATCH takes.
const MaxOperations = maxOps

// Supported is a feature's flag.
type Supported struct {
	Supported bool `json:"supported"`
}

// ServiceProviderConfig is gw's service provider configuration.
type ServiceProviderConfig struct {
	Schemas               []string   `json:"schemas"`
	DocumentationURI      string     `json:"documentationUri,omitempty"`
	Patch                 Supported  `json:"patch"`
	Bulk                  BulkConfig `json:"bulk"`
	Filter                FilterConf `json:"filter"`
	ChangePassword        Supported  `json:"changePassword"`
	Sort                  Supported  `json:"sort"`
	ETag                  Supported  `json:"etag"`
	AuthenticationSchemes []AuthKind `json:"authenticationSchemes"`
	Meta                  Meta       `json:"meta"`
}

// BulkConfig says bulk operations are not supported.
type BulkConfig struct {
	Supported      bool `json:"supported"`
	MaxOperations  int  `json:"maxOperations"`
	MaxPayloadSize int  `json:"maxPayloadSize"`
}

// FilterConf says filtering is supported, up to MaxResults.
type FilterConf struct {
	Supported  bool `json:"supported"`
	MaxResults int  `json:"maxResults"`
}

// AuthKind is an authentication scheme.
type AuthKind struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Primary     bool   `json:"primary"`
}

// Config is the service provider configuration at base.
func Config(base string) ServiceProviderConfig {
	return ServiceProviderConfig{
		Schemas: []string{SchemaServiceProviderConfig}, Patch: Supported{true}, Bulk: BulkConfig{},
		Filter: FilterConf{Supported: true, MaxResults: MaxResults}, ChangePassword: Supported{}, Sort: Supported{}, ETag: Supported{},
		AuthenticationSchemes: []AuthKind{{Type: "oauthbearertoken", Name: "SCIM token",
			Description: "An organization's SCIM token, sent as Authorization: Bearer <token>", Primary: true}},
		Meta: Meta{ResourceType: "ServiceProviderConfig", Location: base + "/ServiceProviderConfig"},
	}
}

// ResourceType describes one kind of resource.
type ResourceType struct {
	Schemas          []string         `json:"schemas"`
	ID               string           `json:"id"`
	Name             string           `json:"name"`
	Endpoint         string           `json:"endpoint"`
	Description      string           `json:"description"`
	Schema           string           `json:"schema"`
	SchemaExtensions []map[string]any `json:"schemaExtensions"`
	Meta             Meta             `json:"meta"`
}

// ResourceTypes are the User and Group resource types.
func ResourceTypes(base string) []ResourceType {
	return []ResourceType{
		{Schemas: []string{SchemaResourceType}, ID: "User", Name: "User", Endpoint: "/Users", Description: "A person, by email",
			Schema: SchemaUser, SchemaExtensions: []map[string]any{}, Meta: Meta{ResourceType: "ResourceType", Location: base + "/ResourceTypes/User"}},
		{Schemas: []string{SchemaResourceType}, ID: "Group", Name: "Group",
			Endpoint: "/Groups", Description: "A group, turned into memberships by the identity providers' group mappings",
			Schema: SchemaGroup, SchemaExtensions: []map[string]any{}, Meta: Meta{ResourceType: "ResourceType", Location: base + "/ResourceTypes/Group"}},
	}
}

// Attribute is one attribute of a schema.
type Attribute struct {
	Name          string      `json:"name"`
	Type          string      `json:"type"`
	MultiValued   bool        `json:"multiValued"`
	Description   string      `json:"description,omitempty"`
	Required      bool        `json:"required"`
	CaseExact     bool        `json:"caseExact"`
	Mutability    string      `json:"mutability"`
	Returned      string      `json:"returned"`
	Uniqueness    string      `json:"uniqueness"`
	SubAttributes []Attribute `json:"subAttributes,omitempty"`
}

// Schema is one schema document.
type Schema struct {
	Schemas     []string    `json:"schemas"`
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Attributes  []Attribute `json:"attributes"`
	Meta        Meta        `json:"meta"`
}

func str(name, desc string, required, caseExact bool, uniqueness string) Attribute {
	return Attribute{Name: name, Type: "string", Description: desc, Required: required, CaseExact: caseExact,
		Mutability: "readWrite", Returned: "default", Uniqueness: uniqueness}
}

// Schemas are the User and Group schemas, with the attributes gw keeps.
func Schemas(base string) []Schema {
	ref := Attribute{Name: "value", Type: "string", Required: true, Mutability: "immutable", Returned: "default", Uniqueness: "none"}
	return []Schema{
		{Schemas: []string{SchemaSchema}, ID: SchemaUser, Name: "User", Description: "A person; userName is their email",
			Attributes: []Attribute{
				str("userName", "The person's email address", true, false, "server"),
				str("externalId", "The identity provider's id for the person", false, true, "none"),
				str("displayName", "The person's name as gw shows it", false, false, "none"),
				{Name: "name", Type: "complex", Mutability: "readWrite", Returned: "default", Uniqueness: "none",
					SubAttributes: []Attribute{str("givenName", "", false, false, "none"), str("familyName", "", false, false, "none"),
						str("formatted", "", false, false, "none")}},
				{Name: "emails", Type: "complex", MultiValued: true, Mutability: "readOnly", Returned: "default", Uniqueness: "none",
					Description: "The email, which is userName", SubAttributes: []Attribute{str("value", "", false, false, "none")}},
				{Name: "active", Type: "boolean", Description: "false disables the account: its sessions end and its keys are revoked",
					Mutability: "readWrite", Returned: "default", Uniqueness: "none"},
				{Name: "groups", Type: "complex", MultiValued: true, Mutability: "readOnly", Returned: "default", Uniqueness: "none",
					SubAttributes: []Attribute{ref}},
			},
			Meta: Meta{ResourceType: "Schema", Location: base + "/Schemas/" + SchemaUser}},
		{Schemas: []string{SchemaSchema}, ID: SchemaGroup, Name: "Group",
			Description: "A group; its displayName is what the identity providers' group mappings match",
			Attributes: []Attribute{
				str("displayName", "The group's name", true, false, "server"),
				str("externalId", "The identity provider's id for the group", false, true, "none"),
				{Name: "members", Type: "complex", MultiValued: true, Mutability: "readWrite", Returned: "default", Uniqueness: "none",
					SubAttributes: []Attribute{ref}},
			},
			Meta: Meta{ResourceType: "Schema", Location: base + "/Schemas/" + SchemaGroup}},
	}
}
