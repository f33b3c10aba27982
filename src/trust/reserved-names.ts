/**
 * The names of toolsift's own MCP meta-tools, those only some endpoints or keys are offered included
 * (code mode's run_code, the MCP drafts' AgentCore-style search, the management tools). A catalog tool of the same name would read, to
 * an agent, as the meta-tool itself (issue 70's shadowing), so the definition scanner flags it.
 */
export const RESERVED_TOOL_NAMES = [
  'search_tools',
  'get_tool_details',
  'list_tools',
  'call_tool',
  'run_code',
  'x_amz_bedrock_agentcore_search',
  'register_upstream',
  'deregister_upstream',
] as const;
