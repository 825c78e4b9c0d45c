package wire

// FocusVersions are the FOCUS (FinOps Open Cost and Usage Specification)
// versions the cost export speaks (docs/focus.md).
var FocusVersions = []string{"1.3", "1.4"}

// FocusFormats are the cost export's formats: JSON as {data: [rows]}, CSV
// with the FOCUS column names as the header.
var FocusFormats = []string{"json", "csv"}

// FocusRow is one FOCUS charge row: the version's column names, each a
// string, a decimal number, or null (docs/focus.md lists them).
type FocusRow map[string]any
