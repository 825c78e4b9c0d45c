// Package publish is the control plane's side of bundles (DESIGN §7): it
// compiles each organization's bundle from the database, signs and stores
// it for data planes that poll, and, in gw serve with both roles, admits it
// straight into the data plane of the same process. The bundle format that
// data planes read (body, signing, verification) is server/bundle, which
// links no database.
package publish
