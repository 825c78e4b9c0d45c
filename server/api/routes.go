package api

// allRoutes is the whole management API. Every route carries its tag,
// summary, permission and wire types, from which the OpenAPI document is
// generated.
func (s *Server) allRoutes() []*Route {
	var all []*Route
	for _, group := range [][]*Route{
		s.authRoutes(),
		s.identityRoutes(),
		s.accountRoutes(),
		s.cliAuthRoutes(),
		s.bootstrapRoutes(),
		s.organizationRoutes(),
		s.userRoutes(),
		s.keyRoutes(),
		s.memberRoutes(),
		s.invitationRoutes(),
		s.serviceAccountRoutes(),
		s.workspaceRoutes(),
		s.activityRoutes(),
		s.catalogRoutes(),
		s.credentialRoutes(),
		s.mcpRoutes(),
		s.instanceSettingsRoutes(),
		s.inferenceKeyRoutes(),
		s.policyRoutes(),
		s.modelAliasRoutes(),
		s.guardrailRoutes(),
		s.batchRoutes(),
		s.tagBudgetRoutes(),
		s.usageRoutes(),
		s.dataPlaneRoutes(),
		s.budgetRoutes(),
		s.batchStoreRoutes(),
		s.playgroundRoutes(),
		s.scimTokenRoutes(),
		s.oauthRoutes(),
		s.keyToolRoutes(),
		s.focusRoutes(),
	} {
		all = append(all, group...)
	}
	return all
}
