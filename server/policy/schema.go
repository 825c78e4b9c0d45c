package policy

import (
	"bytes"
	_ "embed"
)

//go:embed schema.json
var schemaJSON []byte

// JSONSchema returns the JSON Schema (draft 2020-12) of a definition as the
// API reads and writes it (spec 2.3 and 8): the document schema.json, whose
// root is PolicyDefinition and whose $defs hold Target, Rule, Match, Action,
// each kind variant and two shared strings (NameString, DecimalString).
//
// It is meant to become the PolicyDefinition component of the OpenAPI 3.1
// document, whose dialect is draft 2020-12. Every reference in it is a
// fragment of the form "#/$defs/Name", and it carries no $id or $anchor, so a
// consumer can move the $defs into components/schemas by rewriting that one
// prefix. The unions are oneOf lists of variants whose kind is a const;
// there is no OpenAPI discriminator keyword.
//
// The schema states every rule ParseDefinitionJSON enforces except the ones
// the one its description names: the decimal library's limit of 10000
// digits after the point. schema_test.go holds the schema and the parser to
// that, input by input.
//
// The result is a fresh copy; callers may change it.
func JSONSchema() []byte {
	return bytes.Clone(schemaJSON)
}
