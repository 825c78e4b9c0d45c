package scim

import (
	"encoding/json"
	"strings"
	"time"
)

// User is what gw keeps of a SCIM user: the account's email (userName)
// and name, whether it is active, and what the provisioning client sent
// that gw keeps for it (externalId, the name's parts).
type User struct {
	ID          string
	ExternalID  string
	UserName    string
	GivenName   string
	FamilyName  string
	DisplayName string
	Active      bool
	Groups      []Ref
	Created     time.Time
	Modified    time.Time
}

// Name is the account's name: displayName, else the given and family
// names, else the email.
func (u User) Name() string {
	if n := strings.TrimSpace(u.DisplayName); n != "" {
		return n
	}
	if n := strings.TrimSpace(u.GivenName + " " + u.FamilyName); n != "" {
		return n
	}
	return u.UserName
}

// UserName is a user's name attribute.
type UserName struct {
	Formatted  string `json:"formatted,omitempty"`
	GivenName  string `json:"givenName,omitempty"`
	FamilyName string `json:"familyName,omitempty"`
}

// Email is one of a user's emails.
type Email struct {
	Value   string `json:"value"`
	Type    string `json:"type,omitempty"`
	Primary bool   `json:"primary"`
}

// UserResource is a user as SCIM shows it.
type UserResource struct {
	Schemas     []string `json:"schemas"`
	ID          string   `json:"id"`
	ExternalID  string   `json:"externalId,omitempty"`
	UserName    string   `json:"userName"`
	Name        UserName `json:"name"`
	DisplayName string   `json:"displayName"`
	Emails      []Email  `json:"emails"`
	Active      bool     `json:"active"`
	Groups      []Ref    `json:"groups"`
	Meta        Meta     `json:"meta"`
}

// Resource is the user as SCIM shows it; base is the service's base URL
// (…/scim/v2). The one email is the userName.
func (u User) Resource(base string) UserResource {
	groups := u.Groups
	if groups == nil {
		groups = []Ref{}
	}
	return UserResource{
		Schemas: []string{SchemaUser}, ID: u.ID, ExternalID: u.ExternalID, UserName: u.UserName,
		Name:        UserName{Formatted: u.Name(), GivenName: u.GivenName, FamilyName: u.FamilyName},
		DisplayName: u.Name(), Emails: []Email{{Value: u.UserName, Type: "work", Primary: true}}, Active: u.Active,
		Groups: groups, Meta: meta("User", base+"/Users/"+u.ID, u.Created, u.Modified),
	}
}

// DecodeUser reads a user from a create (POST) or replace (PUT) body.
// userName is required and must be an email address; active defaults to
// true; attributes gw does not keep (phone numbers, titles, the
// enterprise extension…) are accepted and ignored.
func DecodeUser(raw []byte) (User, error) {
	m, err := attrs(raw, "the body")
	if err != nil {
		return User{}, err
	}
	u := User{Active: true}
	for name, v := range m {
		if err := setUserAttr(&u, name, "", v); err != nil {
			return User{}, err
		}
	}
	if u.UserName, err = CheckUserName(u.UserName); err != nil {
		return User{}, err
	}
	return u, nil
}

// setUserAttr sets one attribute (name lower case; sub the lower-case
// sub-attribute of a complex one, or "").
func setUserAttr(u *User, name, sub string, v json.RawMessage) error {
	var err error
	switch name {
	case "username":
		u.UserName, err = stringValue(v, "userName")
	case "externalid":
		u.ExternalID, err = stringValue(v, "externalId")
	case "displayname":
		u.DisplayName, err = stringValue(v, "displayName")
	case "active":
		if isNull(v) {
			return badRequest(InvalidValue, "active must be a boolean")
		}
		u.Active, err = boolValue(v, "active")
	case "name":
		switch sub {
		case "givenname":
			u.GivenName, err = stringValue(v, "name.givenName")
		case "familyname":
			u.FamilyName, err = stringValue(v, "name.familyName")
		case "formatted":
			var f string
			if f, err = stringValue(v, "name.formatted"); err == nil && u.DisplayName == "" {
				u.DisplayName = f
			}
		case "":
			if isNull(v) {
				u.GivenName, u.FamilyName = "", ""
				return nil
			}
			parts, err := attrs(v, "name")
			if err != nil {
				return err
			}
			for s, pv := range parts {
				if err := setUserAttr(u, "name", s, pv); err != nil {
					return err
				}
			}
		}
	}
	// Anything else (emails, phoneNumbers, title, the enterprise
	// extension, schemas, id, meta…) is not gw's to keep.
	return err
}
