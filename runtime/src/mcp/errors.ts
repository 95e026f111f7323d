/**
 * Typed errors of the MCP layer. Every failure a host or a user sees carries a stable `code`
 * and a sentence that says what happened and what to do.
 */
export type McpErrorCode =
  | 'mcp.consent-required'
  | 'mcp.bad-config'
  | 'mcp.env-missing'
  | 'mcp.server-failed'
  | 'mcp.protocol'
  | 'mcp.timeout'
  | 'mcp.cancelled'
  | 'mcp.tool-disabled'
  | 'mcp.tool-unknown'
  | 'mcp.path-refused'
  | 'mcp.root-refused'
  | 'mcp.command-refused'
  | 'mcp.auth-required';

export class McpHostError extends Error {
  readonly code: McpErrorCode;
  constructor(code: McpErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'McpHostError';
    this.code = code;
  }
}

/**
 * Thrown when a stdio command (or the shell built-in, or an ACP agent backend) is not approved by
 * the local operator for the flow that names it, as that flow is now.
 */
export class ConsentRequiredError extends McpHostError {
  readonly commandLine: string;
  readonly fingerprint: string;
  readonly flowId: string;
  constructor(
    where: string,
    commandLine: string,
    fingerprint: string,
    flowId: string,
    flowRef: string,
    reason: string,
  ) {
    super(
      'mcp.consent-required',
      `${where}: the command is not approved by the local operator for flow ${JSON.stringify(flowId)} and was not started (quarantined): ${reason}.\n` +
        `  command line: ${commandLine}\n` +
        (fingerprint ? `  fingerprint:  ${fingerprint}\n` : '') +
        `  approve it with: switchboard trust ${flowRef}`,
    );
    this.name = 'ConsentRequiredError';
    this.commandLine = commandLine;
    this.fingerprint = fingerprint;
    this.flowId = flowId;
  }
}

export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
