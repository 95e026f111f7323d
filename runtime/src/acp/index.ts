// External agents over ACP. Node-only (spawns processes); not re-exported from the library root so
// that importing the runtime does not load the ACP SDK — import it where an ACP-backed agent runs.
export {
  type AcpAgent,
  type AcpAgentConfig,
  AcpError,
  type AcpErrorCode,
  type AcpPromptOptions,
  type AcpPromptResult,
  createAcpAgent,
  minimalEnv,
} from './client.js';
